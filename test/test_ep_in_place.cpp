// MoE all-to-alls among the job's traffic: every expert-parallel group's dispatch and combine run on
// the fabric at once, across the replicas the group spans, wherever timing one group alone would
// miss what meets it; and a synchronous all-to-all waits for its slowest member.
#include <catch2/catch.hpp>

#include "simulator/iteration.hpp"
#include "small_clusters.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr Seconds kForward_s = 10e-3, kBackward_s = 2e-3;

/// `ranks` pipeline ranks of two replicas (expert parallel 2) under `schedule`, one microbatch
/// unless asked: each forward is 10 ms of compute and then an MoE dispatch of `bytes` each way
/// between the two replicas' GPUs, each backward 2 ms of compute (and a combine of as many bytes
/// where `combine`). Activations are free to send, and nothing is reduced: the all-to-alls are the
/// only traffic.
IterationPlan dispatch_plan(Bytes bytes, int ranks, std::vector<std::vector<int>> units, const std::string& schedule = "1f1b",
                            int microbatches = 1, bool combine = false, Seconds forward_s = kForward_s,
                            Seconds backward_s = kBackward_s) {
  IterationPlan plan;
  plan.schedule = find_schedule(schedule);
  plan.shape = ScheduleShape{ranks, microbatches, plan.schedule->chunks_required() > 0 ? plan.schedule->chunks_required() : 1, 0};
  GroupTraffic dispatch;
  dispatch.label = "moe dispatch";
  dispatch.gpus = {units[0][0], units[static_cast<std::size_t>(ranks)][0]};
  dispatch.bytes = {{0, static_cast<double>(bytes)}, {static_cast<double>(bytes), 0}};
  plan.traffic = {dispatch};
  Segment step{SegmentKind::ep_comm, "moe dispatch", 0};
  step.traffic = 0;
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", forward_s}, step};
  sp.backward_input = {{SegmentKind::compute, "bwd", backward_s}};
  if (combine) sp.backward_input.push_back(step);
  for (int s = 0; s < plan.schedule->model_stages(plan.shape); ++s) plan.stages.push_back(sp);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<int>& unit = units[static_cast<std::size_t>(r)];
    plan.rank_gpu.push_back(unit[0]);
    plan.tp_group.push_back(unit);
    plan.dp_group.push_back({unit[0]});
    plan.dp_groups.push_back({});
    plan.expert_dp_groups.push_back({});
  }
  plan.unit_gpus = std::move(units);
  plan.replicas = 2;
  plan.expert_parallel = 2;
  plan.fold = FoldMode::none;
  return plan;
}

/// Two DGX A100 nodes under 4:1 leaves; `plan`'s dispatch over the pairs {g, g'} of `pairs`, all
/// at once.
struct FourToOne : test::FourToOneLeaves {
  Seconds exchange_s(const IterationPlan& plan, const std::vector<std::pair<int, int>>& pairs) const {
    return FourToOneLeaves::exchange_s(plan.traffic[0].bytes, pairs);
  }
};

}  // namespace

TEST_CASE("every expert-parallel group's dispatch crosses 4:1 leaf uplinks together, at the busiest one's rate") {
  FourToOne f;
  // One pipeline rank of tp 8 per node, a replica per node, expert parallel across them: eight EP
  // groups {t, 8 + t}, one per TP position.
  IterationPlan plan = dispatch_plan(Bytes{256} << 20, 1, {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}});
  std::vector<std::pair<int, int>> all;
  for (int t = 0; t < 8; ++t) all.emplace_back(t, 8 + t);
  const Seconds together = f.exchange_s(plan, all), alone = f.exchange_s(plan, {{0, 8}});
  // Eight groups over two uplinks: at least four 256 MiB flows through one, each way.
  CHECK(together >= 4.0 * (256 << 20) / f.cluster.effective_bandwidth_Bps(f.cluster.nic_port_link[0]));

  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.ep_all_to_alls.rfind("in place: the link ", 0) == 0);
  CHECK(placed.ep_all_to_alls.find("another group's collectives") != std::string::npos);
  CHECK(placed.iteration_s == Approx(kForward_s + kBackward_s + together).epsilon(1e-6));
  CHECK(placed.ranks[0].ep_s == Approx(together).epsilon(1e-6));

  // Timed alone, as every all-to-all was until now: one group on an empty fabric, a quarter of it.
  plan.placement.ep = TpPlacement::alone;
  const IterationResult timed = simulate_iteration(f.engine, f.router, plan);
  CHECK(timed.ep_all_to_alls.rfind("timed alone (as asked): ", 0) == 0);
  CHECK(timed.iteration_s == Approx(kForward_s + kBackward_s + alone).epsilon(1e-6));
  CHECK(together > 3.5 * alone);
}

TEST_CASE("an all-to-all in place waits for the slowest member of its expert-parallel group") {
  FourToOne f;
  // Two pipeline ranks of one GPU each, two replicas (one per node), expert parallel across them:
  // rank 0's dispatch over GPUs {0, 8}, rank 1's over {1, 9}. Replica 0 is slow (half speed) on
  // rank 0, replica 1 on rank 1. Timed alone, each replica runs its own timeline and both take
  // 3F + 2a + 3B; in place, each rank's dispatch waits for that rank's slow GPU, so the forward
  // pays 2F on both ranks: 4F + 2a + 3B.
  IterationPlan plan = dispatch_plan(Bytes{16} << 20, 2, {{0}, {1}, {8}, {9}});
  plan.gpu_speed.assign(16, 1.0);
  plan.gpu_speed[0] = plan.gpu_speed[9] = 0.5;
  plan.placement.ep = TpPlacement::in_place;  // the two ranks' groups may hash onto separate uplinks
  const Seconds a0 = f.exchange_s(plan, {{0, 8}}), a1 = f.exchange_s(plan, {{1, 9}});
  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.ep_all_to_alls.rfind("in place (as asked): ", 0) == 0);
  CHECK(placed.iteration_s == Approx(4 * kForward_s + a0 + a1 + 3 * kBackward_s).epsilon(1e-6));
  plan.placement.ep = TpPlacement::alone;
  CHECK(simulate_iteration(f.engine, f.router, plan).iteration_s ==
        Approx(3 * kForward_s + 2 * a0 + 3 * kBackward_s).epsilon(1e-6));
}

TEST_CASE("DualPipe's overlapped F&B units run their all-to-alls in place, as planned where nothing meets them") {
  test::FourToOneLeaves f;
  // One node: replica d's rank r on GPU 2r + d, so rank r's all-to-alls are between GPUs 2r and
  // 2r + 1, whose NVLink ports nothing else uses (activations are free). Each forward ends with a
  // dispatch and each backward with a combine; DualPipe overlaps a forward with a backward.
  IterationPlan plan = dispatch_plan(Bytes{64} << 20, 2, {{0}, {2}, {1}, {3}}, "dualpipe", 8, true);
  plan.placement.ep = TpPlacement::alone;
  const Seconds alone = simulate_iteration(f.engine, f.router, plan).iteration_s;
  // In place, each F&B unit is a chain of its compute beside the other pass's all-to-alls: with
  // nothing else on their links, it takes what the overlap formula planned with the alone times.
  plan.placement.ep = TpPlacement::in_place;
  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.ep_all_to_alls.rfind("in place (as asked): ", 0) == 0);
  CHECK(placed.iteration_s == Approx(alone).epsilon(1e-9));
}

TEST_CASE("under DualPipe every all-to-all of a rank, in its F&B units too, takes its groups' time in place") {
  test::FourToOneLeaves f;
  // Two nodes under 4:1 leaves, a replica each, two ranks of four GPUs a replica: rank 0's four EP
  // groups {t, 8 + t}, rank 1's {4 + t, 12 + t}, all crossing the leaves' two uplinks. No compute:
  // a rank's 16 all-to-alls (8 dispatches, 8 combines) run one after another, each at least as long
  // as its four groups together, four times one group's here. Had the F&B units kept their alone
  // times, the ones they hold would take one group's.
  IterationPlan plan = dispatch_plan(Bytes{64} << 20, 2, {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}},
                                     "dualpipe", 8, true, 0, 0);
  const Seconds one = f.exchange_s(plan.traffic[0].bytes, {{0, 8}}),
                four = f.exchange_s(plan.traffic[0].bytes, {{0, 8}, {1, 9}, {2, 10}, {3, 11}});
  REQUIRE(four >= 2 * one);  // at least two groups on an uplink
  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.ep_all_to_alls.rfind("in place: ", 0) == 0);
  CHECK(placed.iteration_s >= 16 * four * (1 - 1e-9));
  plan.placement.ep = TpPlacement::alone;
  CHECK(simulate_iteration(f.engine, f.router, plan).iteration_s < 16 * four);
}

namespace {

/// Mixtral 8x7B's layers on four DGX A100 nodes, expert parallel over `ep` replicas.
std::string moe_scenario(const std::string& cluster_yaml, const std::string& parallel) {
  return test::small_megatron_scenario("ep-in-place", cluster_yaml, parallel,
                                       "moe: {routing: uniform}\n") +
         " --set model=" + test::source_path("scenarios/models/mixtral-8x7b.yaml") + " --allow-oom";
}

}  // namespace

TEST_CASE("MoE all-to-alls whose links carry the job's other traffic run in place, and the fold stays exact") {
  for (const auto& [fabric, yaml] : {std::pair{"single_switch", test::single_switch_four_nodes()},
                                     {"fat_tree", test::fat_tree_four_nodes()},
                                     {"rail_optimized", test::rail_optimized_four_nodes()}}) {
    INFO(fabric);
    // Eight replicas of one pipeline rank (tp 4, two to a node) in four EP groups of two.
    const std::string scenario = moe_scenario(yaml, "{tp: 4, pp: 1, dp: 8, ep: 2}");
    const nlohmann::json placed = test::cli_json("run " + scenario + " --fold exact");
    CHECK(placed["ep_all_to_alls"].get<std::string>().rfind("in place: the link ", 0) == 0);
    CHECK(placed["config"]["ep_all_to_alls"] == "auto");
    // A group's replicas fold together, onto another group's: an even count, here half of them.
    CHECK(placed["simulated_replicas"] == 4);
    const nlohmann::json every = test::cli_json("run " + scenario + " --fold none");
    CHECK(every["simulated_replicas"] == 8);
    CHECK(test::relative_error(placed["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
    const nlohmann::json alone = test::cli_json("run " + scenario + " --fold exact --ep-all-to-alls alone");
    CHECK(alone["ep_all_to_alls"].get<std::string>().rfind("timed alone (as asked): the link ", 0) == 0);
    CHECK(placed["iteration_s"].get<double>() >= alone["iteration_s"].get<double>() * (1 - 1e-12));
    // compare places them as run does.
    const nlohmann::json compared =
        test::cli_json("compare " + scenario + " --schedules 1f1b --fold exact --ep-all-to-alls alone");
    CHECK(compared["config"]["ep_all_to_alls"] == "alone");
    CHECK(compared["rows"][0]["iteration_s"].get<double>() == alone["iteration_s"].get<double>());
  }
}

TEST_CASE("run's EP all-to-alls option takes auto, alone or in-place, only with whole-cluster replay, and fold all "
          "asks for one expert-parallel group") {
  const std::string scenario = moe_scenario(test::fat_tree_four_nodes(), "{tp: 4, pp: 1, dp: 8, ep: 2}");
  test::check_placement_option_errors(scenario, "--ep-all-to-alls", "EP all-to-alls");
  // Four EP groups of two replicas each on the fat tree fold onto two, not one: --fold all says so.
  const test::CliResult all = test::run_cli("run " + scenario + " --fold all");
  CHECK(all.exit_code == 2);
  CHECK(all.stderr_text.find("--fold: all replicas fold into one expert-parallel group's (whose MoE all-to-alls run "
                             "in place) only where that is exact, and here expert-parallel group ") != std::string::npos);
}



