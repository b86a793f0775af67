// ZeRO-2/3's per-layer collectives among the job's traffic: every data-parallel group's gradient
// reduce-scatters and parameter all-gathers run on the fabric at once, across every replica, wherever
// timing one group alone would miss what meets it; and a synchronous collective waits for its
// slowest replica.
#include <catch2/catch.hpp>

#include "simulator/collective_sweep.hpp"
#include "simulator/iteration.hpp"
#include "small_clusters.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr Seconds kForward_s = 10e-3, kBackward_s = 2e-3;

/// `ranks` pipeline ranks of two replicas under 1F1B, one microbatch: each forward is 10 ms of
/// compute, each backward 2 ms of compute and then a ZeRO gradient reduce-scatter of `bytes` over
/// the rank's data-parallel groups (one per member position, across the two replicas), hidden under
/// `hidden_s` of that compute; with `gather_bytes`, ZeRO-3's parameter all-gather of that many bytes
/// opens the backward, hidden under as much. Activations are free to send; ZeRO-3 leaves nothing for
/// the tail.
IterationPlan zero_plan(Bytes bytes, int ranks, std::vector<std::vector<int>> units, Seconds hidden_s = 0,
                        Seconds backward_s = kBackward_s, Bytes gather_bytes = 0) {
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{ranks, 1, 1, 0};
  Segment reduce{SegmentKind::dp_comm, "zero gradient reduce-scatter", 0};
  reduce.tp_op = Op::reduce_scatter;
  reduce.tp_bytes = bytes;
  reduce.hidden_s = hidden_s;
  reduce.group = CommGroup::dp;
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", kForward_s}};
  sp.backward_input = {{SegmentKind::compute, "bwd", backward_s}};
  if (gather_bytes > 0) {
    Segment gather = reduce;
    gather.label = "zero-3 parameter all-gather";
    gather.tp_op = Op::all_gather;
    gather.tp_bytes = gather_bytes;
    sp.backward_input.insert(sp.backward_input.begin(), gather);
  }
  sp.backward_weight = {reduce};
  for (int s = 0; s < ranks; ++s) plan.stages.push_back(sp);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<int>& unit = units[static_cast<std::size_t>(r)];
    const std::vector<int>& other = units[static_cast<std::size_t>(ranks + r)];
    plan.rank_gpu.push_back(unit[0]);
    plan.tp_group.push_back(unit);
    plan.dp_group.push_back({unit[0], other[0]});
    plan.dp_groups.emplace_back();
    for (std::size_t m = 0; m < unit.size(); ++m) plan.dp_groups.back().push_back({unit[m], other[m]});
    plan.expert_dp_groups.push_back({});
  }
  plan.unit_gpus = std::move(units);
  plan.replicas = 2;
  plan.zero_stage = 3;
  plan.fold = FoldMode::none;
  return plan;
}

/// Two DGX A100 nodes under 4:1 leaves, and the reduce-scatter as the iteration lowers it: the
/// (algorithm, protocol) fastest for one group alone.
struct FourToOne : test::FourToOneLeaves {
  SweepRow chosen(Bytes bytes, const std::vector<int>& group, Op op = Op::reduce_scatter) {
    SweepSpec spec;
    spec.op = op;
    spec.ranks = group;
    const CollectiveRequest req{op, group, bytes, IterationPlan{}.channels, Protocol{}, 0};
    return best_collective(engine, router, candidate_algorithms(cluster, spec), nccl_protocols(), req);
  }
  /// Every group of `groups` at once, lowered as chosen for the first: the busiest link sets it.
  Seconds together_s(Bytes bytes, const std::vector<std::vector<int>>& groups) {
    const SweepRow row = chosen(bytes, groups.front());
    std::vector<Flow> flows;
    for (const auto& group : groups) {
      const CollectiveRequest req{Op::reduce_scatter, group, bytes, IterationPlan{}.channels, *find_protocol(row.protocol), 0};
      for (Flow& f : find_algorithm(row.algorithm)->lower(router, req).flows) flows.push_back(std::move(f));
    }
    return test::bottleneck_s(cluster, flows);
  }
};

}  // namespace

TEST_CASE("every data-parallel group's ZeRO reduce-scatter crosses 4:1 leaf uplinks together, at the busiest one's rate") {
  FourToOne f;
  // One pipeline rank of tp 8 per node, a replica per node: eight data-parallel groups {t, 8 + t},
  // one per TP position, all through the leaves' two uplinks.
  const Bytes bytes = Bytes{512} << 20;
  IterationPlan plan = zero_plan(bytes, 1, {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}});
  std::vector<std::vector<int>> all;
  for (int t = 0; t < 8; ++t) all.push_back({t, 8 + t});
  const Seconds together = f.together_s(bytes, all), alone = f.chosen(bytes, {0, 8}).time_s;
  // Each GPU sends half its buffer to the other: at least four groups' halves through one uplink.
  CHECK(together >= 4.0 * static_cast<double>(bytes / 2) / f.cluster.effective_bandwidth_Bps(f.cluster.nic_port_link[0]));

  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.zero_collectives.rfind("in place: the link ", 0) == 0);
  CHECK(placed.zero_collectives.find("another group's collectives") != std::string::npos);
  CHECK(placed.iteration_s == Approx(kForward_s + kBackward_s + together).epsilon(1e-6));
  CHECK(placed.ranks[0].dp_exposed_s == Approx(together).epsilon(1e-6));

  // Timed alone, as ZeRO's collectives were until now: one group on an empty fabric.
  plan.placement.zero = TpPlacement::alone;
  const IterationResult timed = simulate_iteration(f.engine, f.router, plan);
  CHECK(timed.zero_collectives.rfind("timed alone (as asked): ", 0) == 0);
  CHECK(timed.iteration_s == Approx(kForward_s + kBackward_s + alone).epsilon(1e-9));
  CHECK(together > 3.5 * alone);
}

TEST_CASE("a ZeRO collective in place waits for its slowest replica") {
  FourToOne f;
  // Two pipeline ranks of one GPU each, a replica per node: rank 0's group {0, 8}, rank 1's {1, 9}.
  // Replica 0 is slow (half speed) on rank 1, replica 1 on rank 0. Timed alone, each replica runs
  // its own timeline: 3F + 3B + a0 + a1 for both. In place, each rank's reduce-scatter waits for
  // that rank's slow backward: rank 1's starts after 2B, its end lets rank 0's backwards start, and
  // rank 0's starts after another 2B: 3F + 4B + a0 + a1.
  const Bytes bytes = Bytes{64} << 20;
  IterationPlan plan = zero_plan(bytes, 2, {{0}, {1}, {8}, {9}});
  plan.gpu_speed.assign(16, 1.0);
  plan.gpu_speed[1] = plan.gpu_speed[8] = 0.5;
  plan.placement.zero = TpPlacement::in_place;  // the two ranks' groups may hash onto separate uplinks
  const Seconds a0 = f.chosen(bytes, {0, 8}).time_s, a1 = f.chosen(bytes, {1, 9}).time_s;
  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.zero_collectives.rfind("in place (as asked): ", 0) == 0);
  CHECK(placed.iteration_s == Approx(3 * kForward_s + 4 * kBackward_s + a0 + a1).epsilon(1e-9));
  plan.placement.zero = TpPlacement::alone;
  CHECK(simulate_iteration(f.engine, f.router, plan).iteration_s ==
        Approx(3 * kForward_s + 3 * kBackward_s + a0 + a1).epsilon(1e-9));
}

TEST_CASE("a ZeRO collective in place that meets nothing takes its alone time, hidden as planned") {
  FourToOne f;
  // Two replicas of one GPU on one node (GPUs 0 and 1): their group's NVLink ports carry nothing
  // else. The reduce-scatter is hidden under half its alone time of backward compute, so half of it
  // shows either way.
  const Bytes bytes = Bytes{256} << 20;
  const Seconds a = f.chosen(bytes, {0, 1}).time_s;
  IterationPlan plan = zero_plan(bytes, 1, {{0}, {1}}, a / 2);
  plan.placement.zero = TpPlacement::alone;
  const IterationResult alone = simulate_iteration(f.engine, f.router, plan);
  CHECK(alone.iteration_s == Approx(kForward_s + kBackward_s + a / 2).epsilon(1e-9));
  plan.placement.zero = TpPlacement::automatic;
  const IterationResult proven = simulate_iteration(f.engine, f.router, plan);
  CHECK(proven.zero_collectives == "timed alone: no link of a ZeRO group carries other traffic (proven)");
  plan.placement.zero = TpPlacement::in_place;
  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.iteration_s == Approx(alone.iteration_s).epsilon(1e-9));
  CHECK(placed.ranks[0].dp_exposed_s == Approx(a / 2).epsilon(1e-9));
}

TEST_CASE("one layer's ZeRO-3 all-gather and reduce-scatter share the backward that hides them") {
  FourToOne f;
  // Two replicas of one GPU on one node, as above. The backward opens with the all-gather and ends
  // with the reduce-scatter, each planned under the whole backward; it is longer than either but
  // shorter than both. They run one after the other beside it, so what shows is
  // a_gather + a_reduce - backward; hiding each under the whole backward would show nothing.
  const Bytes bytes = Bytes{128} << 20;
  const Seconds ag = f.chosen(bytes, {0, 1}, Op::all_gather).time_s, rs = f.chosen(bytes, {0, 1}).time_s;
  const Seconds backward_s = 0.75 * (ag + rs);
  REQUIRE(backward_s > std::max(ag, rs));
  IterationPlan plan = zero_plan(bytes, 1, {{0}, {1}}, backward_s, backward_s, bytes);
  for (TpPlacement where : {TpPlacement::alone, TpPlacement::in_place}) {
    plan.placement.zero = where;
    const IterationResult r = simulate_iteration(f.engine, f.router, plan);
    CHECK(r.iteration_s == Approx(kForward_s + ag + rs).epsilon(1e-9));
    CHECK(r.ranks[0].dp_exposed_s == Approx(ag + rs - backward_s).epsilon(1e-9));
  }
}

namespace {

/// Megatron's 1.7B on four DGX A100 nodes with ZeRO-3 (parameters gathered and gradients
/// reduce-scattered layer by layer over data parallelism).
std::string zero_scenario(const std::string& cluster_yaml, const std::string& parallel) {
  return test::small_megatron_scenario("zero-in-place", cluster_yaml, parallel) + " --set parallel.zero_stage=3";
}

}  // namespace

TEST_CASE("ZeRO collectives whose links carry the job's other traffic run in place, and the fold stays exact") {
  for (const auto& [fabric, yaml] : {std::pair{"single_switch", test::single_switch_four_nodes()},
                                     {"fat_tree", test::fat_tree_four_nodes()},
                                     {"rail_optimized", test::rail_optimized_four_nodes()}}) {
    INFO(fabric);
    // Four replicas of two pipeline ranks (tp 4): every data-parallel group crosses the nodes,
    // beside the pipeline transfers and the other TP positions' groups.
    const std::string scenario = zero_scenario(yaml, "{tp: 4, pp: 2, dp: 4}");
    const nlohmann::json placed = test::cli_json("run " + scenario + " --fold exact");
    CHECK(placed["zero_collectives"].get<std::string>().rfind("in place: the link ", 0) == 0);
    CHECK(placed["config"]["zero_collectives"] == "auto");
    const nlohmann::json every = test::cli_json("run " + scenario + " --fold none");
    CHECK(every["simulated_replicas"] == 4);
    CHECK(test::relative_error(placed["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
    const nlohmann::json alone = test::cli_json("run " + scenario + " --fold exact --zero-collectives alone");
    CHECK(alone["zero_collectives"].get<std::string>().rfind("timed alone (as asked): the link ", 0) == 0);
    CHECK(placed["iteration_s"].get<double>() >= alone["iteration_s"].get<double>() * (1 - 1e-12));
    // compare places them as run does.
    const nlohmann::json compared =
        test::cli_json("compare " + scenario + " --schedules 1f1b --fold exact --zero-collectives alone");
    CHECK(compared["config"]["zero_collectives"] == "alone");
    CHECK(compared["rows"][0]["iteration_s"].get<double>() == alone["iteration_s"].get<double>());
  }
}

TEST_CASE("run's ZeRO collectives option takes auto, alone or in-place, and only with whole-cluster replay") {
  test::check_placement_option_errors(zero_scenario(test::fat_tree_four_nodes(), "{tp: 4, pp: 2, dp: 4}"),
                                      "--zero-collectives", "ZeRO collectives");
}
