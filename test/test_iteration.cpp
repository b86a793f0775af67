// A training iteration replayed on the engine. With uniform stages and free communication the time
// is the schedule's closed form (hardware.md); with communication, a pipeline transfer and a gradient
// all-reduce add exactly what the engine gives them alone.
#include <catch2/catch.hpp>

#include "collectives/collective.hpp"
#include "simulator/collective_sweep.hpp"
#include "simulator/iteration.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

const Cluster& superpod() { return test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"); }

/// p pipeline ranks on GPU 0 of p different nodes; F and B are one microbatch through one rank's
/// whole share of the model, split evenly over its v chunks.
IterationPlan uniform_plan(const char* schedule, int p, int m, int v, Seconds f, Seconds b) {
  IterationPlan plan;
  plan.schedule = find_schedule(schedule);
  plan.shape = ScheduleShape{p, m, v, 0};
  for (int s = 0; s < p * v; ++s) {
    StagePlan sp;
    sp.forward = {{SegmentKind::compute, "fwd", f / v}};
    sp.backward_input = {{SegmentKind::compute, "bwd", b / v}};
    sp.activation_bytes = 64 << 20;
    sp.gradient_bytes = 1 << 30;
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

/// One rank (GPU 0) in a data-parallel group of four nodes' first GPUs, F = 1 ms, B = 2 ms, four
/// microbatches over `chunks` chunks, a 5 ms optimizer step, communication on the fabric.
IterationPlan data_parallel_plan(const char* schedule, int chunks) {
  IterationPlan plan = uniform_plan(schedule, 1, 4, chunks, 1e-3, 2e-3);
  plan.free_communication = false;
  plan.dp_group = {{0, 8, 16, 24}};
  plan.optimizer_s = 5e-3;
  return plan;
}

/// A ring all-reduce of `bytes` over `group` with Simple, alone on the fabric.
Seconds ring_all_reduce_s(FabricEngine& engine, const Router& router, const std::vector<int>& group, Bytes bytes, int channels) {
  const CollectiveRequest req{Op::all_reduce, group, bytes, channels, *find_protocol("Simple"), 0};
  return makespan(engine.run(find_algorithm("ring")->lower(router, req)));
}

void check_exact(Seconds simulated, Seconds closed_form) {
  INFO("simulated " << simulated << " s, closed form " << closed_form << " s");
  CHECK(std::abs(simulated - closed_form) / closed_form < 1e-9);
}

}  // namespace

TEST_CASE("1f1b and gpipe iterations take (m+p-1)(F+B) with free communication") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  const Seconds f = 1e-3, b = 2e-3;
  for (const char* name : {"1f1b", "gpipe"})
    for (auto [p, m] : {std::pair{4, 8}, {8, 8}, {2, 16}}) {
      const IterationResult r = simulate_iteration(engine, router, uniform_plan(name, p, m, 1, f, b));
      check_exact(r.iteration_s, (m + p - 1) * (f + b));
      // Every rank computes m(F+B) and waits out the rest as bubble.
      for (const RankBreakdown& rank : r.ranks) {
        CHECK(rank.compute_s == Approx(m * (f + b)).epsilon(1e-9));
        CHECK(rank.bubble_s + rank.other_idle_s == Approx((p - 1) * (f + b)).epsilon(1e-9));
      }
    }
}

TEST_CASE("interleaved iterations take m(F+B) + (p-1)(F+B)/v with free communication") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  const Seconds f = 1e-3, b = 2e-3;
  for (auto [p, m, v] : {std::tuple{4, 8, 2}, {4, 16, 3}, {8, 16, 2}}) {
    const IterationResult r = simulate_iteration(engine, router, uniform_plan("interleaved", p, m, v, f, b));
    check_exact(r.iteration_s, m * (f + b) + (p - 1) * (f + b) / v);
  }
}

TEST_CASE("a pipeline transfer adds its lone-flow time each way") {
  // Two stages, one microbatch: F0, send, F1, B1, send back, B0.
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = uniform_plan("gpipe", 2, 1, 1, 1e-3, 2e-3);
  plan.free_communication = false;
  const Bytes bytes = plan.stages[0].activation_bytes;
  const Route fwd = router.route(0, 8, flow_hash(0, 8, 0));
  const Route bwd = router.route(8, 0, flow_hash(8, 0, 0));
  // GPU 0 and GPU 8 sit on rail 0 of one unit: PCIe, NIC, leaf, NIC, PCIe; the NIC is the bottleneck.
  const BytesPerSecond nic = superpod().effective_bandwidth_Bps(superpod().nic_port_link[0]);
  const Seconds expected = 2 * (1e-3 + 2e-3) + fwd.latency_s + bwd.latency_s + 2.0 * bytes / nic;
  check_exact(simulate_iteration(engine, router, plan).iteration_s, expected);
}

TEST_CASE("a blocking send holds its sender: 1f1b over two stages pays the backward transfer once more") {
  // p = 2, m = 2, transfers x shorter than F. Asynchronous, the last stage's second forward starts
  // as its first backward ends; blocking, it first waits for that backward's gradient to reach
  // stage 0 (x_b), which delays its last backward and so stage 0's: 3F + 3B + x_f + 2x_b in all.
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = uniform_plan("1f1b", 2, 2, 1, 1e-3, 2e-3);
  plan.free_communication = false;
  for (StagePlan& sp : plan.stages) sp.activation_bytes = 8 << 20;  // shorter than F: no two transfers share the NIC
  const Route bwd = router.route(8, 0, flow_hash(8, 0, 0));
  const BytesPerSecond nic = superpod().effective_bandwidth_Bps(superpod().nic_port_link[0]);
  const Seconds x_b = bwd.latency_s + double(plan.stages[0].activation_bytes) / nic;
  const Seconds async_s = simulate_iteration(engine, router, plan).iteration_s;
  plan.blocking_p2p = true;
  check_exact(simulate_iteration(engine, router, plan).iteration_s - async_s, x_b);
}

TEST_CASE("without sequence parallelism the receivers all-gather each scattered transfer over NVLink") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = uniform_plan("gpipe", 2, 1, 1, 1e-3, 2e-3);
  plan.free_communication = false;
  plan.tp_group = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};
  const Seconds scattered = simulate_iteration(engine, router, plan).iteration_s;
  plan.p2p_gather_bytes = 8 * plan.stages[0].activation_bytes;
  const IterationResult gathered = simulate_iteration(engine, router, plan);
  // One all-gather of the whole tensor in each direction, on the receiving node, as TP times it.
  SweepSpec spec;
  spec.op = Op::all_gather;
  spec.ranks = plan.tp_group[1];
  const CollectiveRequest req{Op::all_gather, plan.tp_group[1], plan.p2p_gather_bytes, plan.channels, Protocol{}, 0};
  const Seconds gather = best_collective(engine, router, candidate_algorithms(superpod(), spec), nccl_protocols(), req).time_s;
  check_exact(gathered.iteration_s - scattered, 2 * gather);
}

TEST_CASE("a gradient all-reduce across data parallelism is exposed after the last backward") {
  // Not overlapped (Megatron-LM 2021's local DDP): one all-reduce after the last backward.
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = data_parallel_plan("1f1b", 1);
  plan.overlap_grad_reduce = false;
  const Seconds all_reduce = ring_all_reduce_s(engine, router, plan.dp_group[0], plan.stages[0].gradient_bytes, plan.channels);
  const IterationResult r = simulate_iteration(engine, router, plan);
  check_exact(r.iteration_s, 4 * 3e-3 + all_reduce + 5e-3);
  CHECK(r.ranks[0].dp_exposed_s == Approx(all_reduce).epsilon(1e-9));
}

TEST_CASE("overlapped, the first chunk's gradients are all-reduced in buckets during its last backward") {
  // Megatron-Core's buckets: max(40M, 1M x dp) parameters, here 40M fp32 gradients = 160 MB. Three
  // buckets come out of the last 2 ms backward at 2/3, 4/3 and 2 ms; an all-reduce of one takes far
  // longer than 2/3 ms, so the three run back to back from the first bucket on.
  const Router router(superpod());
  FabricEngine engine(superpod());
  const Seconds f = 1e-3, b = 2e-3, optimizer = 5e-3;
  IterationPlan plan = uniform_plan("1f1b", 1, 4, 1, f, b);
  plan.free_communication = false;
  plan.dp_group = {{0, 8, 16, 24}};
  plan.optimizer_s = optimizer;
  const Bytes bucket = 160'000'000;
  plan.stages[0].gradient_bytes = 3 * bucket;
  auto all_reduce = [&](Bytes bytes) { return ring_all_reduce_s(engine, router, plan.dp_group[0], bytes, plan.channels); };
  const Seconds one_bucket = all_reduce(bucket);
  REQUIRE(one_bucket > b / 3);
  const Seconds last_backward_start = 4 * (f + b) - b;
  const IterationResult bucketed = simulate_iteration(engine, router, plan);
  check_exact(bucketed.iteration_s, last_backward_start + b / 3 + 3 * one_bucket + optimizer);
  CHECK(bucketed.ranks[0].dp_exposed_s == Approx(bucketed.iteration_s - 4 * (f + b) - optimizer).epsilon(1e-9));
  // In one piece after the backward it would take the whole all-reduce longer.
  plan.overlap_grad_reduce = false;
  check_exact(simulate_iteration(engine, router, plan).iteration_s, 4 * (f + b) + all_reduce(3 * bucket) + optimizer);
}

TEST_CASE("without overlap, every chunk's gradient all-reduce waits for the rank's last backward, one after another") {
  // One rank, two chunks: chunk 1's last backward ends before chunk 0's. Overlapped, its all-reduce
  // starts there; not overlapped (Megatron-LM before --overlap-grad-reduce), both wait for the end,
  // and on their one communicator NCCL runs the second once the first is done.
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = data_parallel_plan("interleaved", 2);
  const Seconds one_all_reduce =
      ring_all_reduce_s(engine, router, plan.dp_group[0], plan.stages[0].gradient_bytes, plan.channels);
  plan.overlap_grad_reduce = false;
  const IterationResult serial = simulate_iteration(engine, router, plan);
  check_exact(serial.iteration_s, 4 * 3e-3 + 2 * one_all_reduce + 5e-3);
  plan.overlap_grad_reduce = true;
  CHECK(simulate_iteration(engine, router, plan).iteration_s < serial.iteration_s - 1e-4);
}

TEST_CASE("overlapped, a chunk's gradient buckets queue behind the chunk before them on their one communicator") {
  // One rank, two chunks, 1 GiB of gradients each: chunk 1's last backward ends at 11 ms and its
  // all-reduce starts there; chunk 0's ends 1 ms later, but its buckets (40M parameters each) wait
  // for chunk 1's all-reduce, as NCCL runs a communicator's collectives in the order they were
  // issued, then run one after another. Iteration: 11 ms + AR(1 GiB) + the buckets' + optimizer.
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = data_parallel_plan("interleaved", 2);
  plan.overlap_grad_reduce = true;
  auto all_reduce_s = [&](Bytes bytes) { return ring_all_reduce_s(engine, router, plan.dp_group[0], bytes, plan.channels); };
  const Bytes whole = plan.stages[0].gradient_bytes;
  const Bytes bucket = static_cast<Bytes>(40e6 * plan.gradient_bytes_per_param);
  REQUIRE(whole > bucket);
  Seconds buckets_s = 0;
  for (Bytes done = 0; done < whole; done += bucket) buckets_s += all_reduce_s(std::min(bucket, whole - done));
  REQUIRE(all_reduce_s(whole) > 1e-3);  // chunk 1's all-reduce outlasts chunk 0's last backward
  check_exact(simulate_iteration(engine, router, plan).iteration_s, 11e-3 + all_reduce_s(whole) + buckets_s + 5e-3);
}

TEST_CASE("the tied embedding's gradient all-reduce between first and last stage comes after both backwards") {
  // Two stages, one microbatch, no other communication: F0 F1 B1 B0, then the all-reduce between
  // the two stages' GPUs, then the optimizer.
  const Router router(superpod());
  FabricEngine engine(superpod());
  IterationPlan plan = uniform_plan("gpipe", 2, 1, 1, 1e-3, 2e-3);
  plan.free_communication = false;
  for (StagePlan& sp : plan.stages) sp.activation_bytes = sp.gradient_bytes = 0;
  plan.embedding_sync_bytes = 256 << 20;
  const Seconds all_reduce = ring_all_reduce_s(engine, router, {0, 8}, plan.embedding_sync_bytes, plan.channels);
  const IterationResult r = simulate_iteration(engine, router, plan);
  check_exact(r.iteration_s, 2 * (1e-3 + 2e-3) + all_reduce);
  // The last stage is done after B1 and waits out B0 and the all-reduce.
  CHECK(r.ranks[1].dp_exposed_s == Approx(2e-3 + all_reduce).epsilon(1e-9));
}
