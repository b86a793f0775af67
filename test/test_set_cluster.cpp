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
        "nodes_per_unit, planes, dims, groups, routers_per_group, global_links, routing, link_type, bandwidth_Gbps, "
        "latency_us, tiers)\n");
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
