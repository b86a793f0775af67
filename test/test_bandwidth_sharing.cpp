// How a saturated link splits between its flows (`fabric.sharing`): one share per flow (`equal`, the
// default) or in inverse proportion to their latencies (`latency`, CM02's), the same on every solver.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr const char* kRails = "scenarios/clusters/dgx-h100-superpod.yaml";

/// The shipped rail cluster with `fabric.sharing: equal`.
Cluster equal_sharing_cluster() {
  return test::cluster_from_yaml(test::shipped_with(kRails, "fabric:\n", "fabric:\n  sharing: equal\n"));
}

/// Two 1 GB flows over one GPU's NVSwitch link, with latencies 1 and 3 us: the first moves alone
/// from 1 to 3 us, then they share the link equally until it ends, then the second moves alone.
void check_equal_split(Solver solver) {
  const Cluster cluster = equal_sharing_cluster();
  REQUIRE(cluster.spec.fabric.sharing == Sharing::equal);
  FabricEngine engine(cluster, solver);
  const LinkId link = cluster.gpu_switch_link[0];
  const double bw = cluster.effective_bandwidth_Bps(link), size = 1e9, a = 1e-6, b = 3e-6;
  FlowGraph graph;
  for (Seconds latency : {a, b}) graph.add(Flow{0, 1, {forward(link)}, static_cast<Bytes>(size), latency, {}});
  const std::vector<Seconds> finish = engine.run(graph);
  const Seconds first_s = b + (size - bw * (b - a)) / (bw / 2);
  const Seconds second_s = first_s + (size - bw / 2 * (first_s - b)) / bw;
  CHECK(finish[0] == Approx(first_s).epsilon(1e-9));
  CHECK(finish[1] == Approx(second_s).epsilon(1e-9));
}

}  // namespace

TEST_CASE("under equal sharing the fluid solver splits a saturated link evenly, whatever the flows' latencies") {
  check_equal_split(Solver::fluid);
}

TEST_CASE("under equal sharing SimGrid (full updates) splits a saturated link evenly, whatever the flows' latencies") {
  check_equal_split(Solver::simgrid_full);
}

TEST_CASE("under equal sharing SimGrid (lazy updates) splits a saturated link evenly, whatever the flows' latencies") {
  check_equal_split(Solver::simgrid);
}

TEST_CASE("equal sharing gives a copied flow its copies' shares") {
  // Three copies of one flow and one flow of its own on one link: the copies take 3/4 of it while
  // both move, as three flows would.
  const Cluster cluster = equal_sharing_cluster();
  FabricEngine engine(cluster, Solver::fluid);
  const LinkId link = cluster.gpu_switch_link[0];
  const double bw = cluster.effective_bandwidth_Bps(link), size = 1e9;
  FlowGraph graph;
  Flow copied{0, 1, {forward(link)}, static_cast<Bytes>(size), 2e-6, {}};
  copied.copies = 3;
  graph.add(copied);
  graph.add(Flow{0, 2, {forward(link)}, static_cast<Bytes>(size), 2e-6, {}});
  const std::vector<Seconds> finish = engine.run(graph);
  // Together until the copies end (3 GB at 3/4 of the link); the single flow has 1/4 of its GB sent.
  const Seconds copies_s = 2e-6 + 3 * size / (0.75 * bw);
  CHECK(finish[0] == Approx(copies_s).epsilon(1e-9));
  CHECK(finish[1] == Approx(copies_s + (size - 0.25 * bw * (copies_s - 2e-6)) / bw).epsilon(1e-9));
}

TEST_CASE("fabric.sharing is equal unless a cluster says latency, and another value is the file's error") {
  CHECK(test::shipped_cluster(kRails).spec.fabric.sharing == Sharing::equal);
  CHECK(test::cluster_from_yaml(test::shipped_with(kRails, "fabric:\n", "fabric:\n  sharing: latency\n")).spec.fabric.sharing ==
        Sharing::latency);
  // Written where a shipped cluster sits, its catalog one folder up, as a user's would be.
  const std::filesystem::path dir = std::filesystem::path(test::temp_file("", "")).string() + ".d";
  std::filesystem::create_directories(dir / "clusters");
  std::filesystem::copy_file(test::source_path("scenarios/gpus.yaml"), dir / "gpus.yaml");
  const std::string bad = (dir / "clusters" / "shared.yaml").string();
  std::ofstream(bad) << test::shipped_with(kRails, "fabric:\n", "fabric:\n  sharing: fair\n");
  const auto r = test::run_cli("topology " + bad);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK_THAT(r.stderr_text, Catch::StartsWith("error: " + bad + ":" + std::to_string(test::line_of(test::read_file(bad), "sharing: fair")) +
                                              ": fabric.sharing: "));
  CHECK_THAT(r.stderr_text, Catch::Contains("latency") && Catch::Contains("equal") && Catch::Contains("fair"));
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
}

TEST_CASE("a command line sets cluster.fabric.sharing to latency or equal, and nothing else") {
  const std::string rails = test::source_path(kRails);
  CHECK(test::run_cli("topology " + rails + " --set cluster.fabric.sharing=equal").exit_code == 0);
  const auto r = test::run_cli("topology " + rails + " --set cluster.fabric.sharing=fair");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains("fabric.sharing") && Catch::Contains("fair"));
}

TEST_CASE("run says which bandwidth sharing its times rest on, in text and JSON") {
  const std::string scenario = test::source_path("scenarios/gpt3-175b-a100-1024.yaml");
  const auto plain = test::run_cli("run --fold assume " + scenario);
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.stdout_text, Catch::Contains("fabric sharing          equal   (one share per flow"));
  const auto latency = test::run_cli("run --fold assume " + scenario + " --set cluster.fabric.sharing=latency");
  REQUIRE(latency.exit_code == 0);
  CHECK_THAT(latency.stdout_text, Catch::Contains("fabric sharing          latency (a full link split"));
  CHECK(test::cli_json("run --fold assume " + scenario)["config"]["fabric_sharing"] == "equal");
  CHECK(test::cli_json("run --fold assume " + scenario + " --set cluster.fabric.sharing=latency")["config"]["fabric_sharing"] == "latency");
}
