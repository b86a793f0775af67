// Every GPU's traffic on the fabric at once: the data-parallel groups of every TP rank meet on the
// leaf uplinks, and a replica is folded onto another only where that changes nothing.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "collectives/collective.hpp"
#include "simulator/iteration.hpp"
#include "small_clusters.hpp"
#include "support.hpp"

using namespace clustersim;
using clustersim::test::fat_tree_four_nodes;
using clustersim::test::rail_optimized_four_nodes;
using clustersim::test::single_switch_four_nodes;
using clustersim::test::two_leaf_fat_tree;

namespace {

/// One pipeline rank, tp 8 on each node, dp 2 across the nodes: eight data-parallel groups, one per
/// TP rank ({t, 8 + t}), each all-reducing `gradient` bytes after a 1 ms step.
IterationPlan two_replica_plan(Bytes gradient) {
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{1, 1, 1, 0};
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", 1e-3}};
  sp.backward_input = {{SegmentKind::compute, "bwd", 2e-3}};
  sp.gradient_bytes = gradient;
  plan.stages = {sp};
  plan.rank_gpu = {0};
  plan.tp_group = {{0, 1, 2, 3, 4, 5, 6, 7}};
  plan.replicas = 2;
  plan.unit_gpus = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};
  plan.dp_groups.emplace_back();
  for (int t = 0; t < 8; ++t) plan.dp_groups[0].push_back({t, 8 + t});
  plan.dp_group = {plan.dp_groups[0][0]};
  plan.expert_dp_groups = {{}};
  plan.overlap_grad_reduce = false;
  plan.channels = 16;
  plan.fold = FoldMode::none;
  return plan;
}

/// Every data-parallel ring of the plan at once, as concurrent pipelined rings under max-min take it.
Seconds bottleneck_time(const Cluster& cluster, const Router& router, const IterationPlan& plan) {
  std::vector<Flow> flows;
  for (const auto& group : plan.dp_groups[0]) {
    const CollectiveRequest req{Op::all_reduce, group, plan.stages[0].gradient_bytes, plan.channels,
                                *find_protocol("Simple"), 0};
    for (Flow& f : find_algorithm("ring")->lower(router, req).flows) flows.push_back(std::move(f));
  }
  return test::bottleneck_s(cluster, flows);
}

}  // namespace

TEST_CASE("4:1 leaves: every TP rank's gradient all-reduce crosses the uplinks at once, at their bandwidth") {
  const Cluster cluster = test::cluster_from_yaml(two_leaf_fat_tree(4), "fat-tree-4to1.yaml");
  const Router router(cluster);
  FabricEngine engine(cluster);
  IterationPlan plan = two_replica_plan(1 << 30);
  const Seconds phase = simulate_iteration(engine, router, plan).iteration_s - 3e-3;
  CHECK(phase == Approx(bottleneck_time(cluster, router, plan)).epsilon(1e-6));
  // 16 channels x 8 groups over 2 uplinks: at least 64 flows of 1 GiB / 16 on the busier one, each
  // way, so at least 4 GiB through one 200 Gb/s uplink (24 GB/s after calibration).
  CHECK(phase >= 4.0 * (1 << 30) / cluster.effective_bandwidth_Bps(cluster.nic_port_link[0]));
  // Folded without proof (the default, as the engine ran until now), TP rank 0's group alone is on
  // the fabric: the uplinks carry an eighth of the traffic and the phase is far shorter.
  plan.fold = FoldMode::assume;
  CHECK(simulate_iteration(engine, router, plan).iteration_s - 3e-3 < phase / 2.5);
}

TEST_CASE("1:1 leaves: the same phase at the busiest link's bandwidth, well under the 4:1 time") {
  const Cluster full = test::cluster_from_yaml(two_leaf_fat_tree(1), "fat-tree-1to1.yaml");
  const Cluster thin = test::cluster_from_yaml(two_leaf_fat_tree(4), "fat-tree-4to1.yaml");
  const Router router(full);
  FabricEngine engine(full);
  const IterationPlan plan = two_replica_plan(1 << 30);
  const Seconds phase = simulate_iteration(engine, router, plan).iteration_s - 3e-3;
  CHECK(phase == Approx(bottleneck_time(full, router, plan)).epsilon(1e-6));
  // Eight uplinks instead of two: the uplink-bound time falls by up to 4 (ECMP's uneven hashing
  // keeps it from exactly 4), and the NICs bound it below.
  CHECK(phase < bottleneck_time(thin, Router(thin), plan) / 2.5);
}

namespace {

/// A 32-GPU scenario (Megatron's 1.7B, tp 8, pp 2, dp 2, 8 microbatches per replica) on a
/// four-node cluster of the given fabric: replica 0 sends from node 0 to node 2, replica 1 from
/// node 1 to node 3, and each TP rank's data-parallel ring joins nodes 0 and 1 (2 and 3). Written
/// to a fresh folder laid out as scenarios/ is (clusters/ beside the GPU catalog).
std::string small_scenario(const std::string& cluster_yaml, const std::string& parallel = "{tp: 8, pp: 2, dp: 2}") {
  return test::small_megatron_scenario("whole-cluster", cluster_yaml, parallel);
}

}  // namespace

TEST_CASE("folding replicas is exact: the same iteration time to 1e-9 as simulating every replica") {
  // Sprayed and queue-pair flows go several ways the fold must see, not the hashed route alone.
  const std::string fat = fat_tree_four_nodes();
  const std::string sprayed = test::replaced_all(fat, "  type: fat_tree\n", "  type: fat_tree\n  routing: spray\n", "fat tree");
  const std::string qps = test::replaced_all(fat, "  type: fat_tree\n", "  type: fat_tree\n  qps_per_connection: 4\n", "fat tree");
  for (const auto& [fabric, yaml] : {std::pair{"single_switch", single_switch_four_nodes()},
                                     {"fat_tree", fat},
                                     {"fat_tree sprayed", sprayed},
                                     {"fat_tree, 4 queue pairs", qps},
                                     {"rail_optimized", rail_optimized_four_nodes()}}) {
    INFO(fabric);
    const std::string scenario = small_scenario(yaml);
    const nlohmann::json folded = test::cli_json("run " + scenario + " --fold exact");
    const nlohmann::json every = test::cli_json("run " + scenario + " --fold none");
    CHECK(every["simulated_replicas"] == 2);
    CHECK(test::relative_error(folded["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
    // On one switch, and on rails inside one scalable unit, each replica's transfers have ports of
    // their own: everything folds onto replica 0. Fat-tree leaves hash them onto shared uplinks.
    if (std::string(fabric).rfind("fat_tree", 0) != 0) CHECK(folded["simulated_replicas"] == 1);
  }
}

TEST_CASE("fold all is an error where the fold is not exact, and fold takes only its four words") {
  const std::string scenario = small_scenario(fat_tree_four_nodes());
  const test::CliResult r = test::run_cli("run " + scenario + " --fold all");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text.find("--fold: all replicas fold into one only where that is exact") != std::string::npos);
  CHECK(r.stderr_text.find("shares the link") != std::string::npos);
  const test::CliResult bad = test::run_cli("run " + scenario + " --fold some");
  CHECK(bad.exit_code == 2);
  CHECK(bad.stderr_text.find("--fold: expected exact, none, all or assume, got 'some'") != std::string::npos);
  // Where it is exact, all is accepted.
  CHECK(test::cli_json("run " + small_scenario(single_switch_four_nodes()) + " --fold all")["simulated_replicas"] == 1);
}

TEST_CASE("two TP ranks' data-parallel groups through one uplink halve each other's rate") {
  // Leaves of radix 9 at 8:1: one uplink each, as fast as a NIC. One group's 16 channels drain 1 GiB
  // each way through it in G / B after their latency; two groups' in 2G / B, as two jobs on one
  // leaf would share it.
  const Cluster cluster = test::cluster_from_yaml(two_leaf_fat_tree(8), "fat-tree-8to1.yaml");
  const Router router(cluster);
  FabricEngine engine(cluster);
  IterationPlan plan = two_replica_plan(1 << 30);
  plan.dp_groups[0].resize(1);
  const double bytes_per_s = cluster.effective_bandwidth_Bps(cluster.nic_port_link[0]);
  const Seconds latency = bottleneck_time(cluster, router, plan) - (1 << 30) / bytes_per_s;
  const Seconds alone = simulate_iteration(engine, router, plan).iteration_s - 3e-3 - latency;
  plan.dp_groups = two_replica_plan(1 << 30).dp_groups;
  plan.dp_groups[0].resize(2);
  const Seconds shared = simulate_iteration(engine, router, plan).iteration_s - 3e-3 - latency;
  CHECK(alone == Approx((1 << 30) / bytes_per_s).epsilon(1e-6));
  CHECK(shared == Approx(2 * alone).epsilon(1e-6));
}

TEST_CASE("TP collectives in place take their alone times where no other traffic meets them") {
  // tp 8 fills each node: a TP group's NVLink ports carry nothing else, which the proof finds, and
  // running them in place anyway changes nothing, folded or not.
  for (const auto& [fabric, yaml] : {std::pair{"single_switch", single_switch_four_nodes()},
                                     {"fat_tree", fat_tree_four_nodes()},
                                     {"rail_optimized", rail_optimized_four_nodes()}}) {
    INFO(fabric);
    const std::string scenario = small_scenario(yaml);
    const nlohmann::json proven = test::cli_json("run " + scenario + " --fold exact");
    CHECK(proven["tp_collectives"] == "timed alone: no link of a TP group carries other traffic (proven)");
    const nlohmann::json placed = test::cli_json("run " + scenario + " --fold exact --tp-collectives in-place");
    const nlohmann::json every = test::cli_json("run " + scenario + " --fold none --tp-collectives in-place");
    CHECK(test::relative_error(placed["iteration_s"].get<double>(), proven["iteration_s"].get<double>()) < 1e-9);
    CHECK(test::relative_error(every["iteration_s"].get<double>(), proven["iteration_s"].get<double>()) < 1e-9);
  }
}

TEST_CASE("TP groups whose NVLink ports carry data-parallel rings run in place, and pay for it") {
  // tp 4: two replicas share each node, and every data-parallel ring's hop inside a node uses
  // the same GPU ports as the TP rings. In place they contend; the fold stays exact.
  const std::string scenario = small_scenario(fat_tree_four_nodes(), "{tp: 4, pp: 2, dp: 4}");
  const nlohmann::json placed = test::cli_json("run " + scenario + " --fold exact");
  const std::string where = placed["tp_collectives"];
  CHECK(where.rfind("in place: the link ", 0) == 0);
  CHECK(where.find("nvswitch") != std::string::npos);
  CHECK(where.find("also carries other traffic of the job (pipeline, data-parallel, TP, CP or EP)") != std::string::npos);
  const nlohmann::json alone = test::cli_json("run " + scenario + " --fold exact --tp-collectives alone");
  CHECK(alone["tp_collectives"].get<std::string>().rfind("timed alone (as asked): the link ", 0) == 0);
  CHECK(placed["iteration_s"].get<double>() >= alone["iteration_s"].get<double>() * (1 - 1e-12));
  const nlohmann::json every = test::cli_json("run " + scenario + " --fold none");
  CHECK(test::relative_error(placed["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
}

TEST_CASE("run's TP collectives option takes auto, alone or in-place, and only with whole-cluster replay") {
  test::check_placement_option_errors(small_scenario(single_switch_four_nodes()), "--tp-collectives", "TP collectives");
}

TEST_CASE("run and compare replay every GPU by default: exact, the same time as --fold none, and say so") {
  const std::string scenario = small_scenario(fat_tree_four_nodes(), "{tp: 4, pp: 2, dp: 4}");
  const nlohmann::json plain = test::cli_json("run " + scenario), none = test::cli_json("run " + scenario + " --fold none");
  CHECK(plain["config"]["fold"] == "exact");
  CHECK(plain["iteration_s"].get<double>() == Approx(none["iteration_s"].get<double>()).epsilon(1e-9));
  const test::CliResult text = test::run_cli("run " + scenario);
  CHECK(text.stdout_text.find("assumed identical") == std::string::npos);
  const test::CliResult assumed = test::run_cli("run " + scenario + " --fold assume");
  CHECK(assumed.stdout_text.find("assumed identical to replica 0 without proof") != std::string::npos);
  const test::CliResult compared = test::run_cli("compare " + scenario + " --schedules 1f1b --json -");
  REQUIRE(compared.exit_code == 0);
  CHECK(nlohmann::json::parse(compared.stdout_text)["config"]["fold"] == "exact");
}

TEST_CASE("run and compare replay every GPU by default at any size: no size above which they assume") {
  // Until 2026-12-07 jobs above 4,096 GPUs fell back to --fold assume unless asked; 4,224 GPUs (16
  // stages of 8, 33 replicas, one microbatch each) keeps the check to a second.
  const std::string big = test::source_path("scenarios/llama3-70b-h100-16k.yaml") +
                          " --set schedule=1f1b --set parallel.virtual_stages=1 --set gpus=4224 --set parallel.dp=33 "
                          "--set global_batch=33";
  const nlohmann::json plain = test::cli_json("run " + big);
  CHECK(plain["config"]["fold"] == "exact");
  CHECK(plain["simulated_replicas"] == 33);  // stages in different leaves share spines: none folds
  const test::CliResult text = test::run_cli("run " + big);
  CHECK(text.stdout_text.find("GPUs replayed                   4224   (33 replicas x 16 stages x 8 GPUs in lockstep; "
                              "33 simulated, none folded)") != std::string::npos);
  const test::CliResult compared = test::run_cli("compare " + big + " --schedules 1f1b --json -");
  REQUIRE(compared.exit_code == 0);
  CHECK(nlohmann::json::parse(compared.stdout_text)["config"]["fold"] == "exact");
  // Under an asked assume, an option that needs every GPU replayed still says so.
  const test::CliResult placed = test::run_cli("run " + big + " --fold assume --tp-collectives alone");
  CHECK(placed.exit_code == 2);
  CHECK(placed.stderr_text.find("--tp-collectives: expected --fold exact, none or all as well") != std::string::npos);
  const test::CliResult assumed = test::run_cli("run " + big + " --fold assume");
  CHECK(assumed.stdout_text.find("32 assumed identical to replica 0 without proof, their traffic and that of TP ranks > "
                                 "0 off the fabric (--fold exact, the default, replays it)") != std::string::npos);
}

TEST_CASE("compare replays every GPU under --fold as run does") {
  const std::string scenario = small_scenario(fat_tree_four_nodes(), "{tp: 4, pp: 2, dp: 4}");
  const nlohmann::json run = test::cli_json("run " + scenario + " --fold exact");
  const test::CliResult compared = test::run_cli("compare " + scenario + " --schedules 1f1b --fold exact --json -");
  REQUIRE(compared.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(compared.stdout_text);
  CHECK(j["config"]["fold"] == "exact");
  CHECK(j["rows"][0]["iteration_s"].get<double>() == run["iteration_s"].get<double>());
  const test::CliResult bad = test::run_cli("compare " + scenario + " --schedules 1f1b --fold some");
  CHECK(bad.exit_code == 2);
  CHECK(bad.stdout_text.empty());
  CHECK(bad.stderr_text.find("--fold: expected exact, none, all or assume, got 'some'") != std::string::npos);
}
