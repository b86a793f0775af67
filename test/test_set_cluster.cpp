// `--set cluster.PATH=VALUE`: a field of the cluster file a scenario names, changed from the command
// line as a scenario field is; a path the cluster file or its schema lacks is one line naming --set.
#include <catch2/catch.hpp>

#include <string>

#include "support.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::source_path;

namespace {

const std::string kGpt = source_path("scenarios/gpt3-175b-a100-1024.yaml");  // dgx-a100-superpod: 3 tiers, 1:1
const std::string kSmall = source_path("scenarios/validation/korthikanti-22b-full.yaml");  // 8 GPUs: runs in < 1 s

/// The one stderr line of a command that must fail on its command line.
std::string command_line_error(const std::string& args) {
  const auto r = test::run_cli(args);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  return r.stderr_text;
}

}  // namespace

TEST_CASE("a --set cluster.fabric.tiers.0.oversubscription changes that tier alone", "[set]") {
  const ScenarioSpec base = load_scenario(kGpt);
  REQUIRE(base.cluster.fabric.tiers.size() == 3);
  CHECK(base.cluster.fabric.tiers[0].oversubscription == 1.0);
  const ScenarioSpec s = load_scenario(kGpt, {"cluster.fabric.tiers.0.oversubscription=2"});
  CHECK(s.cluster.fabric.tiers[0].oversubscription == 2.0);
  CHECK(s.cluster.fabric.tiers[1].oversubscription == 1.0);
  CHECK(s.cluster_overrides == std::vector<std::string>{"cluster.fabric.tiers.0.oversubscription=2"});
  // A new optional key and a top-level one.
  CHECK(load_scenario(kGpt, {"cluster.fabric.routing=adaptive"}).cluster.fabric.routing == Routing::adaptive);
  CHECK(load_scenario(kGpt, {"cluster.node.scale_up.latency_us=0.5"}).cluster.node.scale_up_link.latency_s == Approx(0.5e-6));
}

TEST_CASE("run --json echoes the cluster overrides in its configuration", "[set]") {
  const auto j = test::cli_json("run " + kSmall + " --set cluster.node.scale_up.bandwidth_GBps=150");
  CHECK(j.at("config").at("cluster_overrides") == nlohmann::json::array({"cluster.node.scale_up.bandwidth_GBps=150"}));
  // Half the NVLink bandwidth: the TP all-reduces of this tp-8 run take longer.
  const auto base = test::cli_json("run " + kSmall);
  CHECK(j.at("stages")[0].at("time_s").at("tp_exposed").get<double>() >
        base.at("stages")[0].at("time_s").at("tp_exposed").get<double>());
}

TEST_CASE("a --set of a cluster key the schema lacks is one line naming --set and the allowed keys", "[set]") {
  CHECK(command_line_error("run " + kSmall + " --set cluster.fabric.warp=1") ==
        "error: command line: --set: unknown cluster field 'cluster.fabric.warp' (expected one of: type, nodes, "
        "nodes_per_unit, planes, dims, groups, routers_per_group, global_links, routing, qps_per_connection, sharing, "
        "link_type, bandwidth_Gbps, latency_us, tiers, sharp)\n");
}

TEST_CASE("a --set of a cluster path the file does not have is one line saying which part is missing", "[set]") {
  const std::string cluster = source_path("scenarios/clusters/dgx-a100-superpod.yaml");
  CHECK(command_line_error("run " + kSmall + " --set cluster.fabrik.nodes=2") ==
        "error: command line: --set: cluster field 'cluster.fabrik.nodes': the cluster file (" + cluster +
            ") has no 'fabrik' to set a field in\n");
  CHECK(command_line_error("run " + kSmall + " --set cluster.fabric.tiers.3.radix=2") ==
        "error: command line: --set: cluster field 'cluster.fabric.tiers.3.radix': expected an index below 3 into the "
        "list, got '3'\n");
  CHECK(command_line_error("run " + kSmall + " --set cluster.name.x=2") ==
        "error: command line: --set: cluster field 'cluster.name.x': 'name' is a value, not a mapping or a list\n");
  CHECK(command_line_error("run " + kSmall + " --set cluster.fabric..nodes=2") ==
        "error: command line: --set: cluster field 'cluster.fabric..nodes': expected cluster.FIELD.FIELD..., with no empty field\n");
  CHECK(command_line_error("run " + kSmall + " --set cluster.fabric.nodes=[1,2]") ==
        "error: command line: --set: cluster field 'cluster.fabric.nodes': expected one value, got '[1,2]'\n");
}

TEST_CASE("a --set of a bad cluster value is the cluster file's error at that field", "[set]") {
  const std::string e = command_line_error("run " + kSmall + " --set cluster.fabric.tiers.0.oversubscription=lots");
  CHECK_THAT(e, Catch::StartsWith("error: " + source_path("scenarios/clusters/dgx-a100-superpod.yaml") + ":"));
  CHECK_THAT(e, Catch::Contains("oversubscription: expected a number"));
}

TEST_CASE("compare takes cluster overrides as run does", "[set]") {
  const auto r = test::run_cli("compare " + kSmall + " --schedules 1f1b --set cluster.fabric.warp=1");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains("--set: unknown cluster field 'cluster.fabric.warp'"));
}

TEST_CASE("topology --set cluster.* changes the cluster it builds, and echoes the change", "[set]") {
  // roce-3tier-clos: 512 nodes x 8 NICs on leaves of radix 64. At 1:1 a leaf has 32 ports down and
  // 32 up; at 3:1, 48 down and 16 up: 4096 NIC ports fill 85 leaves and a 86th with 16, so the tier
  // is 4096 : 86 x 16 and a full leaf 48 : 16.
  const std::string clos = source_path("scenarios/clusters/roce-3tier-clos.yaml");
  const auto base = test::cli_json("topology --cluster " + clos);
  const auto thin = test::cli_json("topology --cluster " + clos + " --set cluster.fabric.tiers.0.oversubscription=3");
  CHECK(base["oversubscription_per_tier"][0]["ratio"].get<double>() == Approx(1.0));
  CHECK(thin["oversubscription_per_tier"][0]["ratio"].get<double>() == Approx(4096.0 / (86 * 16)));
  CHECK(thin["oversubscription_per_tier"][0]["worst_switch_ratio"].get<double>() == Approx(3.0));
  CHECK(thin["config"]["cluster_overrides"] == nlohmann::json::array({"cluster.fabric.tiers.0.oversubscription=3"}));
  CHECK(base["config"]["cluster_overrides"] == nlohmann::json::array());
}

TEST_CASE("collective --set cluster.node.nics.bandwidth_Gbps halves a two-node ring's bus bandwidth with the NICs'", "[set]") {
  // Two DGX A100 nodes: the rings cross the 8 HDR NICs of each node (8 x 25 GB/s, under NVLink's
  // 8 x 300), so a 1 GiB all-reduce's bus bandwidth is the NICs' and scales with their line rate
  // (latency is under 1% at 1 GiB).
  const std::string args = "collective --cluster " + source_path("scenarios/clusters/dgx-a100-superpod.yaml") +
                           " --gpus 16 --algo ring --proto Simple -b 1G -e 1G";
  const auto full = test::cli_json(args);
  const auto half = test::cli_json(args + " --set cluster.node.nics.bandwidth_Gbps=100");
  const double ratio = half["rows"][0]["busbw_GBps"].get<double>() / full["rows"][0]["busbw_GBps"].get<double>();
  CHECK(ratio == Approx(0.5).margin(0.01));
  CHECK(half["config"]["cluster_overrides"] == nlohmann::json::array({"cluster.node.nics.bandwidth_Gbps=100"}));
}

TEST_CASE("collective and topology take only cluster fields with --set: anything else is one line", "[set]") {
  const std::string a100 = source_path("scenarios/clusters/dgx-a100-superpod.yaml");
  for (const std::string command : {"collective --gpus 8 --cluster ", "topology --cluster "}) {
    const std::string line = command_line_error(command + a100 + " --set parallel.tp=4");
    CHECK(line == "error: command line: --set: expected cluster.PATH=VALUE, a field of the cluster file "
                  "(cluster.fabric.tiers.0.oversubscription=2): this command reads no scenario; got 'parallel.tp=4'\n");
    CHECK_THAT(command_line_error(command + a100 + " --set cluster.fabric.no_such_key=1"),
               Catch::StartsWith("error: command line: --set: unknown cluster field 'cluster.fabric.no_such_key'"));
  }
}

TEST_CASE("a tier's field asked of the whole fabric says where each tier's is, and that path works", "[set]") {
  const std::string a100 = source_path("scenarios/clusters/dgx-a100-superpod.yaml");
  const std::string line = command_line_error("topology --cluster " + a100 + " --set cluster.fabric.oversubscription=2");
  CHECK_THAT(line, Catch::StartsWith("error: command line: --set: unknown cluster field 'cluster.fabric.oversubscription'"));
  CHECK_THAT(line, Catch::EndsWith("; each tier has its own: cluster.fabric.tiers.N.oversubscription, N from 0 for the leaves\n"));
  const auto r = test::run_cli("topology --cluster " + a100 + " --set cluster.fabric.tiers.0.oversubscription=2");
  CHECK(r.exit_code == 0);
}
