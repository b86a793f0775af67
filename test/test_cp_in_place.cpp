// Context-parallel exchanges among the job's traffic: every CP group's ring-attention steps (or K/V
// all-gathers) run on the fabric at once, and with the gradient collectives that share their
// links, wherever timing one group alone would miss them.
#include <catch2/catch.hpp>

#include "simulator/iteration.hpp"
#include "small_clusters.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr Seconds kForward_s = 10e-3, kBackward_s = 2e-3;
constexpr int kSteps = 4;

/// One pipeline rank of 16 GPUs on two DGX A100 nodes: tp 8 on each node, cp 2 across them, so CP
/// groups {t, 8 + t}. Its forward is 10 ms of compute and a ring-attention exchange of 4 steps,
/// each sending `step_bytes` each way and hidden under `hidden_s` of that compute; the backward is
/// 2 ms of compute. Nothing else crosses the fabric.
IterationPlan ring_attention_plan(Bytes step_bytes, Seconds hidden_s) {
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{1, 1, 1, 0};
  GroupTraffic ring;
  ring.label = "ring attention step";
  ring.gpus = {0, 8};
  ring.bytes = {{0, static_cast<double>(step_bytes)}, {static_cast<double>(step_bytes), 0}};
  plan.traffic = {ring};
  Segment step{SegmentKind::cp_comm, "ring attention", 0};
  step.traffic = 0;
  step.repeat = kSteps;
  step.hidden_s = hidden_s;
  step.group = CommGroup::cp;
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", kForward_s}, step};
  sp.backward_input = {{SegmentKind::compute, "bwd", kBackward_s}};
  plan.stages = {sp};
  plan.rank_gpu = {0};
  plan.tp_group = {{0, 1, 2, 3, 4, 5, 6, 7}};
  plan.cp_group = {{0, 8}};
  plan.unit_gpus = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}};
  plan.dp_group = {{0}};
  plan.dp_groups = {{}};
  plan.expert_dp_groups = {{}};
  plan.fold = FoldMode::none;
  return plan;
}

/// The times of one ring step of `plan` on two DGX A100 nodes under 4:1 leaves: every CP group's
/// at once, and one group's alone.
struct FourToOne : test::FourToOneLeaves {
  /// The step of the CP groups {t, 8 + t} for t in `positions`, all at once.
  Seconds step_s(const IterationPlan& plan, const std::vector<int>& positions) const {
    std::vector<std::pair<int, int>> pairs;
    for (int t : positions) pairs.emplace_back(t, 8 + t);
    return exchange_s(plan.traffic[0].bytes, pairs);
  }
  Seconds together_s(const IterationPlan& plan) const { return step_s(plan, {0, 1, 2, 3, 4, 5, 6, 7}); }
  Seconds alone_s(const IterationPlan& plan) const { return step_s(plan, {0}); }
};

}  // namespace

TEST_CASE("ring-attention steps of every CP group cross 4:1 leaf uplinks together, at the busiest one's rate") {
  FourToOne f;
  IterationPlan plan = ring_attention_plan(Bytes{256} << 20, 0);
  const Seconds together = f.together_s(plan), alone = f.alone_s(plan);
  // Eight groups over two uplinks: at least four 256 MiB flows through one, each way.
  CHECK(together >= 4.0 * (256 << 20) / f.cluster.effective_bandwidth_Bps(f.cluster.nic_port_link[0]));

  const IterationResult placed = simulate_iteration(f.engine, f.router, plan);
  CHECK(placed.cp_exchanges.rfind("in place: the link ", 0) == 0);
  CHECK(placed.cp_exchanges.find("another group's collectives") != std::string::npos);
  CHECK(placed.iteration_s == Approx(kForward_s + kBackward_s + kSteps * together).epsilon(1e-6));

  // Timed alone, as every exchange was until now: one group on an empty fabric, a quarter of it.
  plan.placement.cp = TpPlacement::alone;
  const IterationResult timed = simulate_iteration(f.engine, f.router, plan);
  CHECK(timed.cp_exchanges.rfind("timed alone (as asked): ", 0) == 0);
  CHECK(timed.iteration_s == Approx(kForward_s + kBackward_s + kSteps * alone).epsilon(1e-6));
  CHECK(placed.iteration_s - kForward_s - kBackward_s > 3.5 * (timed.iteration_s - kForward_s - kBackward_s));
}

TEST_CASE("attention compute hides each ring step alone, but not the step in place") {
  FourToOne f;
  // Twice the alone step, well under the step in place (about four times it).
  const Seconds hidden = 2 * f.alone_s(ring_attention_plan(Bytes{16} << 20, 0));
  REQUIRE(hidden * kSteps < kForward_s);
  IterationPlan plan = ring_attention_plan(Bytes{16} << 20, hidden);
  const Seconds placed = simulate_iteration(f.engine, f.router, plan).iteration_s;
  CHECK(placed == Approx(kForward_s + kBackward_s + kSteps * (f.together_s(plan) - hidden)).epsilon(1e-6));
  plan.placement.cp = TpPlacement::alone;
  CHECK(simulate_iteration(f.engine, f.router, plan).iteration_s == Approx(kForward_s + kBackward_s).epsilon(1e-9));
}

namespace {

std::string cp_scenario(const std::string& cluster_yaml, const std::string& parallel) {
  return test::small_megatron_scenario("cp-in-place", cluster_yaml, parallel);
}

}  // namespace

TEST_CASE("CP exchanges whose links carry the data-parallel gradient run in place, and the fold stays exact") {
  // Megatron reduces gradients over data-parallel x context-parallel ranks: that ring crosses the
  // CP groups' links, so neither kind of exchange may keep an alone time (on any fabric, which is
  // why CP exchanges run in place whenever every GPU is replayed). Folded or not, the same result.
  for (const auto& [fabric, yaml] : {std::pair{"single_switch", test::single_switch_four_nodes()},
                                     {"fat_tree", test::fat_tree_four_nodes()},
                                     {"rail_optimized", test::rail_optimized_four_nodes()}})
  for (const std::string cp_comm : {"p2p", "all_gather"}) {
    INFO(fabric << ", cp_comm " << cp_comm);
    const std::string scenario = cp_scenario(yaml, "{tp: 4, cp: 2, pp: 2, dp: 2, cp_comm: " + cp_comm + "}");
    const nlohmann::json placed = test::cli_json("run " + scenario + " --fold exact");
    const std::string where = placed["cp_exchanges"];
    CHECK(where.rfind("in place: the link ", 0) == 0);
    CHECK(placed["config"]["cp_exchanges"] == "auto");
    const nlohmann::json every = test::cli_json("run " + scenario + " --fold none");
    CHECK(test::relative_error(placed["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
    const nlohmann::json alone = test::cli_json("run " + scenario + " --fold exact --cp-exchanges alone");
    CHECK(alone["cp_exchanges"].get<std::string>().rfind("timed alone (as asked): the link ", 0) == 0);
    CHECK(placed["iteration_s"].get<double>() >= alone["iteration_s"].get<double>() * (1 - 1e-12));
  }
}

TEST_CASE("run's CP exchanges option takes auto, alone or in-place, and only with whole-cluster replay") {
  test::check_placement_option_errors(cp_scenario(test::fat_tree_four_nodes(), "{tp: 8, cp: 2, pp: 2, dp: 1}"),
                                      "--cp-exchanges", "CP exchanges");
}
