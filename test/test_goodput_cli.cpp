// `clustersim goodput` and the `reliability:` / `storage:` sections it reads: the failure rate is
// the sum of count / MTBF, the checkpoint is priced by the cluster's storage, the report's figures
// are the closed form's, and bad input is one line with exit status 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "one_line_error.hpp"
#include "support.hpp"
#include "topologies/report.hpp"
#include "workloads/checkpoint_cost.hpp"
#include "workloads/goodput.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model_math.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::string kStorage = "storage: {write_GBps: 10, per_node_GBps: 1, source: \"test\"}\n";

/// Four DGX A100 nodes (32 GPUs) of the fat tree, with `storage` appended to the cluster.
std::string cluster(const std::string& storage = kStorage) {
  return test::shipped_with("scenarios/clusters/dgx-a100-fat-tree.yaml", "  nodes: 384\n", "  nodes: 4\n") + storage;
}

const std::string kReliability =
    "reliability:\n"
    "  components:\n"
    "    gpu: {mtbf_hours: 1000, source: \"test\"}\n"
    "    node: {mtbf_hours: 500, source: \"test\"}\n"
    "    nic: {mtbf_hours: 20000, source: \"test\"}\n"
    "    switch: {mtbf_hours: 4000, source: \"test\"}\n"
    "    software: {mtbf_hours: 100, source: \"test\"}\n"
    "  detection_s: 120\n"
    "  relaunch_s: 300\n"
    "  checkpoint:\n"
    "    interval_s: 1800\n";

std::string scenario(const std::string& reliability = kReliability, const std::string& storage = kStorage) {
  return test::small_megatron_scenario("goodput", cluster(storage), "{tp: 2, pp: 2, dp: 8}", reliability);
}

/// The command fails with one line starting "error: `prefix`" and saying `expected`.
void require_error(const std::string& args, const std::string& prefix, const std::string& expected) {
  test::require_one_line_error(test::run_cli(args), "error: " + prefix, expected);
}

/// The scenario with `from` replaced by `to` in its reliability section, and the error's line.
std::pair<std::string, int> edited(const std::string& from, const std::string& to, const std::string& storage = kStorage) {
  const std::string path = scenario(test::replaced_all(kReliability, from, to, "reliability"), storage);
  return {path, test::line_of(test::read_file(path), to)};
}

}  // namespace

TEST_CASE("the job's failure rate is the sum over component kinds of count / MTBF") {
  const ScenarioSpec s = load_scenario(scenario());
  const ComponentCounts c = job_components(s.cluster, s.gpus());
  const TopologyReport t = count_topology(build_cluster(s.cluster));
  CHECK(c.of(Component::gpu) == 32);
  CHECK(c.of(Component::node) == 4);
  CHECK(c.of(Component::nic) == 4 * s.cluster.node.nics);
  CHECK(c.of(Component::fabric_switch) == t.switch_count());  // the job spans the whole 4-node fabric
  CHECK(c.of(Component::software) == 1);
  // Links: every link but the nodes' own (NVLink and PCIe).
  const int node_links = t.links_per_type.at(s.cluster.node.scale_up_link.type) + t.links_per_type.at(s.cluster.node.pcie_link.type);
  CHECK(c.of(Component::link) == t.links - node_links);
  const double per_hour = 32 / 1000.0 + 4 / 500.0 + 4.0 * s.cluster.node.nics / 20000 + t.switch_count() / 4000.0 + 1 / 100.0;
  CHECK(failure_rate_per_s(s.reliability, c) * 3600 == Approx(per_hour).epsilon(1e-12));
  // Half the cluster's nodes: half its switches and links are charged to the job.
  const ComponentCounts half = job_components(s.cluster, 16);
  CHECK(half.of(Component::node) == 2);
  CHECK(half.of(Component::fabric_switch) == Approx(t.switch_count() / 2.0));
}

TEST_CASE("a checkpoint is every parameter's 16-bit weight and fp32 optimizer state, at min(aggregate, nodes x per node)") {
  const ScenarioSpec s = load_scenario(scenario());
  const CheckpointCost c = checkpoint_cost(s);
  const double bytes = parameter_count(s.model) * (2 + 12);
  CHECK(static_cast<double>(c.bytes) == Approx(bytes).epsilon(1e-12));
  CHECK(c.write_Bps == Approx(4e9));  // 4 nodes x 1 GB/s below the 10 GB/s aggregate
  CHECK(c.write_s == Approx(bytes / 4e9).epsilon(1e-12));
  CHECK(c.load_s == Approx(c.write_s));  // read figures default to the write ones
  const ScenarioSpec wide = load_scenario(scenario(kReliability, "storage: {write_GBps: 2, read_GBps: 3, per_node_GBps: 1, source: \"t\"}\n"));
  CHECK(checkpoint_cost(wide).write_s == Approx(bytes / 2e9).epsilon(1e-12));
  CHECK(checkpoint_cost(wide).load_s == Approx(bytes / 3e9).epsilon(1e-12));
}

TEST_CASE("goodput reports the closed form for its inputs, Young and Daly beside the interval, and a Monte-Carlo within 2%") {
  const std::string path = scenario();
  const ScenarioSpec s = load_scenario(path);
  const nlohmann::json j = test::cli_json("goodput " + path + " --days 30 --iteration-s 7 --trials 2000 --seed 5");
  CHECK(j["command"] == "goodput");
  const double lambda = failure_rate_per_s(s.reliability, job_components(s.cluster, s.gpus()));
  const CheckpointCost c = checkpoint_cost(s);
  CHECK(j["failure_rate_per_hour"].get<double>() == Approx(lambda * 3600).epsilon(1e-12));
  CHECK(j["checkpoint"]["steps_per_checkpoint"] == 257);  // round(1800 / 7)
  CHECK(j["checkpoint"]["interval_s"].get<double>() == Approx(257 * 7.0));
  CHECK(j["restart_s"].get<double>() == Approx(120 + 300 + c.load_s));
  CHECK(j["checkpoint"]["young_interval_s"].get<double>() == Approx(std::sqrt(2 * c.write_s / lambda)));
  const GoodputBreakdown want = expected_goodput({lambda, 257 * 7.0, c.write_s, 420 + c.load_s, 30 * 86400.0});
  CHECK(j["expected"]["interruptions"].get<double>() == Approx(lambda * 30 * 86400).epsilon(1e-12));
  CHECK(j["expected"]["lost_s"].get<double>() == Approx(want.lost_s).epsilon(1e-9));
  CHECK(j["expected"]["goodput_fraction"].get<double>() == Approx(want.goodput_fraction()).epsilon(1e-9));
  const double tokens_per_s = 16.0 * s.model.seq_len / 7;
  CHECK(j["effective_tokens_per_s"].get<double>() == Approx(tokens_per_s * want.goodput_fraction()).epsilon(1e-9));
  for (const char* f : {"interruptions", "training_s", "lost_s", "restarting_s", "goodput_fraction"})
    CHECK(test::relative_error(j["monte_carlo"][f].get<double>(), j["expected"][f].get<double>()) < 0.02);
}

TEST_CASE("goodput simulates its step as run does: every GPU by default (--fold exact), replica 0 alone on request") {
  const std::string path = scenario();
  const nlohmann::json exact = test::cli_json("goodput " + path + " --days 30");
  CHECK(exact.at("fold") == "exact");
  CHECK(exact.at("step_mean_s").get<double>() == test::cli_json("run " + path).at("iteration_s").get<double>());
  const nlohmann::json assumed = test::cli_json("goodput " + path + " --days 30 --fold assume");
  CHECK(assumed.at("fold") == "assume");
  CHECK(assumed.at("step_mean_s").get<double>() == test::cli_json("run " + path + " --fold assume").at("iteration_s").get<double>());
  // On this fat tree the replicas are not alike (their flows hash onto other uplinks): replica 0 gives another step.
  CHECK(assumed.at("step_mean_s").get<double>() != exact.at("step_mean_s").get<double>());
  // A given step is not simulated: no fold to report, and none to ask for.
  CHECK_FALSE(test::cli_json("goodput " + path + " --days 30 --iteration-s 7").contains("fold"));
  require_error("goodput " + path + " --days 30 --iteration-s 7 --fold exact", "command line: --fold: ", "expected either --iteration-s or --fold");
  require_error("goodput " + path + " --days 30 --fold most", "command line: --fold: ", "expected exact, none, all or assume, got 'most'");
  // Variability makes replicas unlike: replica 0 cannot stand for them, as run says too.
  const std::string slow_gpu = scenario(kReliability + "variability:\n  gpus: {3: 0.9}\n");
  for (const std::string& command : {"goodput " + slow_gpu + " --days 30", "run " + slow_gpu})
    require_error(command + " --fold assume", "command line: --fold: ", "expected exact, none or all: the scenario declares variability");
}

TEST_CASE("goodput bad input: an MTBF without its unit, negative or zero, and a checkpoint interval of 0 or less") {
  {
    auto [path, line] = edited("gpu: {mtbf_hours: 1000", "gpu: {mtbf: 1000");
    require_error("goodput " + path + " --days 1", path + ":" + std::to_string(line) + ": reliability.components.gpu.mtbf: ",
                  "expected mtbf_hours: the unit is part of the name");
  }
  {
    auto [path, line] = edited("node: {mtbf_hours: 500", "node: {mtbf_hours: -500");
    require_error("goodput " + path + " --days 1", path + ":" + std::to_string(line) + ": reliability.components.node.mtbf_hours: ",
                  "expected");
  }
  {
    auto [path, line] = edited("nic: {mtbf_hours: 20000", "nic: {mtbf_hours: 0");
    require_error("run " + path, path + ":" + std::to_string(line) + ": reliability.components.nic.mtbf_hours: ", "hours");
  }
  for (const char* bad : {"interval_s: 0\n", "interval_s: -60\n"}) {
    auto [path, line] = edited("interval_s: 1800\n", std::string("    ") + bad);
    (void)line;
    const int at = test::line_of(test::read_file(path), bad);
    require_error("goodput " + path + " --days 1", path + ":" + std::to_string(at) + ": reliability.checkpoint.interval_s: ",
                  "expected a checkpoint interval above 0 s");
  }
}

TEST_CASE("goodput bad input: a checkpoint policy on a cluster without storage, no reliability or no checkpoint") {
  {
    const std::string path = scenario(kReliability, "");
    const int line = test::line_of(test::read_file(path), "  checkpoint:");
    require_error("goodput " + path + " --days 1", path + ":" + std::to_string(line) + ": reliability.checkpoint: ",
                  "to declare storage: {write_GBps, per_node_GBps, source}");
  }
  {
    const std::string path = scenario(kReliability, "storage: {write_GBps: 10, source: \"x\"}\n");
    require_error("goodput " + path + " --days 1", "", "storage.per_node_GBps");
  }
  {
    const std::string path = scenario("");
    require_error("goodput " + path + " --days 1", path + ": reliability: ", "expected a reliability: section");
  }
  {
    const std::string path = scenario(test::replaced_all(kReliability, "  checkpoint:\n    interval_s: 1800\n", "", "r"));
    const int line = test::line_of(test::read_file(path), "reliability:");
    require_error("goodput " + path + " --days 1", path + ":" + std::to_string(line) + ": reliability.checkpoint: ",
                  "expected a checkpoint policy");
  }
}

TEST_CASE("goodput bad input: days of 0 or less, trials out of range, a seed without trials") {
  const std::string path = scenario();
  for (const char* days : {"0", "-3", "1e9", "x"})
    require_error("goodput " + path + " --days " + days + " --iteration-s 1", "command line: --days: ",
                  "expected a number of days above 0 and at most 3650");
  for (const char* trials : {"0", "-1", "100000000", "1.5"})
    require_error("goodput " + path + " --days 1 --iteration-s 1 --trials " + trials, "command line: --trials: ",
                  "expected an integer from 1 to 10000000");
  require_error("goodput " + path + " --days 1 --iteration-s 1 --seed 4", "command line: --seed: ", "expected --trials as well");
  require_error("goodput " + path + " --days 1 --iteration-s 0", "command line: --iteration-s: ", "expected a number");
  {
    auto [tiny, line] = edited("interval_s: 1800\n", "interval_s: 0.001\n");
    (void)line;
    // Segments of 1 ms training and the 5.8 s write: ~5e7 a trial over 3650 days, so 100 trials exceed 2e9.
    require_error("goodput " + tiny + " --days 3650 --iteration-s 0.001 --trials 100", "command line: --trials: ",
                  "checkpoints and interruptions a trial (over 3650 days) within 2e+09: at most 36 trials");
  }
}

TEST_CASE("goodput --set reliability.*: the checkpoint interval, detection, relaunch and an MTBF, each as if written in the file") {
  const std::string path = scenario();
  const ScenarioSpec base = load_scenario(path);
  const ScenarioSpec set = load_scenario(path, {"reliability.checkpoint.interval_s=900", "reliability.detection_s=60",
                                                "reliability.relaunch_s=30", "reliability.components.gpu.mtbf_hours=2000"});
  CHECK(set.reliability.checkpoint_interval_s == 900);
  CHECK(set.reliability.detection_s == 60);
  CHECK(set.reliability.relaunch_s == 30);
  // The GPUs' term of the rate halves: 32 / 1000 h becomes 32 / 2000 h; the other kinds stay.
  const ComponentCounts c = job_components(base.cluster, base.gpus());
  CHECK((failure_rate_per_s(base.reliability, c) - failure_rate_per_s(set.reliability, c)) * 3600 ==
        Approx(32 / 1000.0 - 32 / 2000.0).epsilon(1e-12));
  // Through the command: the configured interval is 900 s of 7 s steps, rounded (129 steps).
  const nlohmann::json j = test::cli_json("goodput " + path + " --days 30 --iteration-s 7 --set reliability.checkpoint.interval_s=900");
  CHECK(j["checkpoint"]["steps_per_checkpoint"] == 129);
  // A value out of range is refused at the field, with the file's line of the field set.
  const int line = test::line_of(test::read_file(path), "gpu: {mtbf_hours: 1000");
  require_error("goodput " + path + " --days 1 --set reliability.components.gpu.mtbf_hours=-1",
                path + ":" + std::to_string(line) + ": reliability.components.gpu.mtbf_hours: ", "expected");
  // A section written as a scalar is named where it is, not overwritten.
  const std::string flat = test::small_megatron_scenario("goodput-flat", cluster(), "{tp: 2, pp: 2, dp: 8}", "reliability: 3\n");
  require_error("run " + flat + " --set reliability.checkpoint.interval_s=60",
                flat + ":" + std::to_string(test::line_of(test::read_file(flat), "reliability: 3")) + ": reliability: ",
                "expected a mapping");
}
