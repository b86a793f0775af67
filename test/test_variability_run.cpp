// A scenario's `variability:` through `clustersim run`: folding stays exact, a seed gives the same
// bytes, --repeat summarises its draws, and bad input is one line with exit status 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>

#include "one_line_error.hpp"
#include "support.hpp"

using namespace clustersim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string four_nodes(const std::string& shipped) {
  return test::shipped_with(shipped, "  nodes: 384\n", "  nodes: 4\n");
}

/// Megatron's 1.7B on the four DGX A100 nodes of `cluster_yaml`, tp 2, pp 2, dp 8 (eight replicas
/// to fold), with `variability` appended as written. Laid out as scenarios/ is.
std::string scenario_with(const std::string& cluster_yaml, const std::string& variability) {
  return test::small_megatron_scenario("variability", cluster_yaml, "{tp: 2, pp: 2, dp: 8}", variability);
}

const std::string kFatTree = "scenarios/clusters/dgx-a100-fat-tree.yaml";

/// The command fails with one line starting "error: `prefix`" and saying `expected`.
void require_error(const std::string& args, const std::string& prefix, const std::string& expected) {
  test::require_one_line_error(test::run_cli(args), "error: " + prefix, expected);
}

}  // namespace

TEST_CASE("with variability every replica of unlike speed is its own class, and folding stays exact") {
  const std::string variability =
      "variability:\n  seed: 3\n  gpu_speed: {distribution: normal, mean: 1, stddev: 0.03}\n"
      "  links: {leaf0-spine0: 0.5}\n";
  const std::string scenario = scenario_with(four_nodes(kFatTree), variability);
  const nlohmann::json folded = test::cli_json("run " + scenario + " --fold exact");
  const nlohmann::json every = test::cli_json("run " + scenario + " --fold none");
  CHECK(every["simulated_replicas"] == 8);
  CHECK(folded["simulated_replicas"] == 8);  // every replica draws its own speeds
  CHECK(test::relative_error(folded["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
  // The default (assume) becomes exact under variability, and says so.
  const nlohmann::json by_default = test::cli_json("run " + scenario);
  CHECK(by_default["fold"] == "exact");
  CHECK(by_default["iteration_s"] == folded["iteration_s"]);
}

TEST_CASE("failed and degraded links on rails: routed around, and folding stays exact") {
  // Four nodes in one scalable unit: eight rail leaves, each with two links to each of ten spines.
  const std::string scenario = scenario_with(
      four_nodes("scenarios/clusters/dgx-a100-superpod.yaml"),
      "variability:\n  failed_links: [su0.leaf0-spine0, su0.leaf1-spine3#1]\n  links: {su0.leaf2-spine1: 0.25}\n");
  const nlohmann::json folded = test::cli_json("run " + scenario + " --fold exact");
  const nlohmann::json every = test::cli_json("run " + scenario + " --fold none");
  CHECK(test::relative_error(folded["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
  CHECK(folded["variability"]["summary"] == "seed 0; 1 links degraded, 2 failed");
  CHECK(folded["variability"]["slowest_gpu"] == -1);
}

TEST_CASE("one slow GPU splits its replica off and the rest still fold, exactly") {
  const std::string single_switch = [] {
    const std::string fat = four_nodes(kFatTree);
    return fat.substr(0, fat.find("fabric:")) +
           "fabric:\n  type: single_switch\n  nodes: 4\n  link_type: hdr\n  bandwidth_Gbps: 200\n  latency_us: 0.3\n";
  }();
  const std::string plain = scenario_with(single_switch, "");
  // GPU 5: tp rank 1 of dp rank 2, pipeline rank 0 (order tp-dp-pp).
  const std::string slow = scenario_with(single_switch, "variability:\n  gpus: {5: 0.8}\n");
  const nlohmann::json base = test::cli_json("run " + plain + " --fold exact");
  const nlohmann::json folded = test::cli_json("run " + slow + " --fold exact");
  const nlohmann::json every = test::cli_json("run " + slow + " --fold none");
  // Without variability half the replicas fold (those whose transfers share no NIC with another's);
  // replica 2 was one of them, and now simulates on its own: one class more, the rest unchanged.
  CHECK(base["simulated_replicas"] == 4);
  CHECK(folded["simulated_replicas"] == 5);
  CHECK(test::relative_error(folded["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
  CHECK(folded["iteration_s"].get<double>() > base["iteration_s"].get<double>());
  CHECK(folded["variability"]["slowest_gpu"] == 5);
  CHECK(folded["variability"]["slowest_speed"] == 0.8);
}

TEST_CASE("a seed gives the same bytes, and --set variability.seed and --repeat draw again") {
  const std::string scenario = scenario_with(
      four_nodes(kFatTree), "variability:\n  seed: 11\n  gpu_speed: {distribution: lognormal, sigma: 0.05}\n");
  const test::CliResult a = test::run_cli("run " + scenario), b = test::run_cli("run " + scenario);
  REQUIRE(a.exit_code == 0);
  CHECK(a.stdout_text == b.stdout_text);
  CHECK_THAT(a.stdout_text, Contains("variability             seed 11, GPU speeds lognormal; slowest GPU"));
  const nlohmann::json repeated = test::cli_json("run " + scenario + " --repeat 3");
  const nlohmann::json& draws = repeated["draws"];
  REQUIRE(draws["count"] == 3);
  CHECK(draws["seeds"] == nlohmann::json({11, 12, 13}));
  // Each draw is the run of its seed.
  std::vector<double> times;
  for (int k = 0; k < 3; ++k) {
    const nlohmann::json one = test::cli_json("run " + scenario + " --set variability.seed=" + std::to_string(11 + k));
    CHECK(draws["iteration_s"][static_cast<std::size_t>(k)] == one["iteration_s"]);
    times.push_back(one["iteration_s"].get<double>());
  }
  CHECK(times[0] != times[1]);  // the seed matters
  CHECK(draws["mean_s"].get<double>() == Approx(std::accumulate(times.begin(), times.end(), 0.0) / 3).epsilon(1e-12));
  std::sort(times.begin(), times.end());
  CHECK(draws["p50_s"] == times[1]);  // nearest rank: ceil(0.5 x 3) = 2nd
  CHECK(draws["p99_s"] == times[2]);
  CHECK(repeated["iteration_s"] == draws["iteration_s"][0]);
  const test::CliResult text = test::run_cli("run " + scenario + " --repeat 3");
  CHECK_THAT(text.stdout_text, Contains("# iteration time over 3 draws (seeds 11 to 13"));
}

TEST_CASE("bad variability is one line at its field, exit 2") {
  const std::string fat = four_nodes(kFatTree);
  struct Bad {
    std::string variability, field, expected;
  };
  const std::vector<Bad> cases = {
      {"variability:\n  gpus: {5: 0}\n", "variability.gpus.5", "expected a speed (a fraction of the catalog's) above 0 and at most 1 (0.001 at least), got 0"},
      {"variability:\n  gpus: {5: 1.2}\n", "variability.gpus.5", "above 0 and at most 1 (0.001 at least), got 1.2"},
      {"variability:\n  nodes: {1: -0.5}\n", "variability.nodes.1", "above 0 and at most 1 (0.001 at least), got -0.5"},
      {"variability:\n  gpus: {32: 0.9}\n", "variability.gpus.32", "expected a GPU id of the cluster, 0 to 31, got '32'"},
      {"variability:\n  nodes: {n1: 0.9}\n", "variability.nodes.n1", "expected a node id of the cluster, 0 to 3, got 'n1'"},
      {"variability:\n  links: {leaf0-spine0: 1.5}\n", "variability.links.leaf0-spine0", "a fraction of the link's bandwidth"},
      {"variability:\n  links: {leaf0-spine77: 0.5}\n", "variability.links.leaf0-spine77", "expected a link of the cluster named A-B"},
      // Four nodes fill two leaves, whose 20 uplinks each all go to the one spine.
      {"variability:\n  failed_links: [leaf0-spine0]\n", "variability.failed_links[0]",
       "expected failed links that leave the fabric connected; with 'leaf0-spine0' down, no path joins leaf0 and leaf1"},
      {"variability:\n  failed_links: [n0.gpu0-n0.nvswitch]\n", "variability.failed_links[0]",
       "expected a link between two fabric switches"},
      {"variability:\n  gpu_speed: {distribution: normal, stddev: 0.3}\n", "variability.gpu_speed.stddev",
       "expected a stddev below mean / 5"},
      {"variability:\n  gpu_speed: {distribution: gamma}\n", "variability.gpu_speed.distribution", "normal"},
      {"variability:\n  gpu_speed: {distribution: empirical, values: [1, 0]}\n", "variability.gpu_speed.values[1]",
       "0.001 to 2"},
      {"variability:\n  speed: 0.9\n", "variability.speed", "unknown key (expected one of: seed, gpu_speed, gpus"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.variability);
    const std::string scenario = scenario_with(fat, bad.variability);
    const int line = test::line_of(test::read_file(scenario), "variability:") + 1;
    require_error("run " + scenario, scenario + ":" + std::to_string(line) + ": " + bad.field + ": ", bad.expected);
  }
}

TEST_CASE("run's variability options: --repeat needs a distribution, assume cannot fold unlike replicas") {
  const std::string named = scenario_with(four_nodes(kFatTree), "variability:\n  gpus: {5: 0.8}\n");
  require_error("run " + named + " --repeat 4", "command line: --repeat: ", "expected a scenario whose variability.gpu_speed draws");
  require_error("run " + named + " --repeat 0", "command line: --repeat: ", "expected 1 to 10000 draws, got 0");
  require_error("run " + named + " --fold assume", "command line: --fold: ", "expected exact, none or all");
  require_error("run " + named + " --set variability.seed=x", named, "variability.seed");
}
