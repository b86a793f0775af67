// The zero-bubble and DualPipe families replayed on the engine. With free communication the engine
// must reproduce the schedule's own replay (itself checked against the published bubbles in
// test_schedules_zero_bubble) and ZB-H1's closed form; with communication, gradient collectives
// wait for the weight-gradient passes, and DualPipe sums its two copies of every stage.
#include <catch2/catch.hpp>

#include <algorithm>

#include "simulator/iteration.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

const Cluster& superpod() { return test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"); }

/// p ranks on GPU 0 of p nodes. f, b_in and w are one microbatch through 1/p of the model (forward,
/// input gradient, weight gradient); each of the schedule's model stages gets its share.
IterationPlan split_plan(const char* schedule, int p, int m, Seconds f, Seconds b_in, Seconds w) {
  IterationPlan plan;
  plan.schedule = find_schedule(schedule);
  REQUIRE(plan.schedule);
  const int v = plan.schedule->chunks_required() > 0 ? plan.schedule->chunks_required() : 2;
  plan.shape = ScheduleShape{p, m, v, 0};
  const int stages = plan.schedule->model_stages(plan.shape);
  const double share = double(p) / stages;
  for (int s = 0; s < stages; ++s) {
    StagePlan sp;
    sp.forward = {{SegmentKind::compute, "fwd", f * share}};
    sp.backward_input = {{SegmentKind::compute, "bwd", b_in * share}};
    sp.backward_weight = {{SegmentKind::compute, "wgrad", w * share}};
    sp.activation_bytes = 64 << 20;
    sp.gradient_bytes = 256 << 20;
    plan.stages.push_back(sp);
  }
  for (int r = 0; r < p; ++r) {
    plan.rank_gpu.push_back(8 * r);
    plan.tp_group.push_back({8 * r});
    plan.dp_group.push_back({8 * r});
  }
  plan.free_communication = true;
  return plan;
}

}  // namespace

TEST_CASE("with free communication the engine runs every schedule in its replayed time") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  const Seconds f = 1e-3, b_in = 1.2e-3, w = 0.8e-3;
  for (const Schedule* s : all_schedules())
    for (auto [p, m] : {std::pair{4, 8}, {4, 12}, {8, 16}}) {
      INFO(s->name() << " p=" << p << " m=" << m);
      const IterationPlan plan = split_plan(s->name().c_str(), p, m, f, b_in, w);
      if (s->not_applicable(plan.shape)) continue;
      const IterationResult r = simulate_iteration(engine, router, plan);
      const ScheduleTiming t = replay(*s, plan.shape, f, b_in + w, w);
      CHECK(r.iteration_s == Approx(t.makespan_s).epsilon(1e-9));
      // Every pass ran once: F, and either a full backward or B and W, per stage a microbatch visits.
      const std::size_t visits = static_cast<std::size_t>(m) * s->route(plan.shape, 0).size();
      const auto count = [&](PassKind k) {
        return std::count_if(r.passes.begin(), r.passes.end(), [k](const PassSpan& x) { return x.kind == k; });
      };
      CHECK(static_cast<std::size_t>(count(PassKind::forward)) == visits);
      CHECK(static_cast<std::size_t>(count(PassKind::backward) + count(PassKind::backward_input)) == visits);
    }
}

TEST_CASE("zb-h1 on the engine takes m(F+B) + (p-1)(F+B-2W) with free communication") {
  // Qi et al. 2024, ZB-H1; B is the full backward (input + weight gradient), as in hardware.md.
  const Router router(superpod());
  FabricEngine engine(superpod());
  const Seconds f = 1e-3, b_in = 1e-3, w = 1e-3, b = b_in + w;
  for (auto [p, m] : {std::pair{4, 8}, {8, 8}, {8, 24}}) {
    const IterationResult r = simulate_iteration(engine, router, split_plan("zb-h1", p, m, f, b_in, w));
    CHECK(r.iteration_s == Approx(m * (f + b) + (p - 1) * (f + b - 2 * w)).epsilon(1e-9));
  }
}

TEST_CASE("gradient collectives start after the weight-gradient passes of their chunk") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  for (const char* name : {"zb-h1", "zb-v"}) {
    IterationPlan plan = split_plan(name, 4, 8, 1e-3, 1e-3, 1e-3);
    plan.free_communication = false;
    for (int r = 0; r < 4; ++r) plan.dp_group[r] = {8 * r, 8 * r + 32};  // a replica 4 nodes away
    const IterationResult result = simulate_iteration(engine, router, plan);
    for (int r = 0; r < 4; ++r) {
      INFO(name << " rank " << r);
      Seconds last_w = 0;
      for (const PassSpan& p : result.passes)
        if (p.rank == r && p.kind == PassKind::backward_weight) last_w = std::max(last_w, p.end_s);
      const auto dp = std::find_if(result.events.begin(), result.events.end(), [&](const TraceEvent& e) {
        return e.gpu == 8 * r && e.stream == "dp";
      });
      REQUIRE(dp != result.events.end());
      REQUIRE(last_w > 0);
      // zb-v's last chunk to finish its W goes last; its other chunk may reduce earlier.
      CHECK(dp->end_s > last_w);
      CHECK(result.ranks[r].dp_exposed_s > 0);
    }
  }
}

TEST_CASE("dualpipe sums the gradients of the two copies of each stage across mirrored ranks") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = split_plan("dualpipe", 4, 8, 1e-3, 1e-3, 1e-3);
  plan.free_communication = false;
  // No data parallelism: the only gradient traffic is between rank r and rank p-1-r.
  const IterationResult r = simulate_iteration(engine, router, plan);
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    CHECK(r.ranks[rank].dp_exposed_s > 0);
    CHECK(r.ranks[rank].dp_exposed_s == Approx(r.ranks[3 - rank].dp_exposed_s).epsilon(1e-9));
  }
}
