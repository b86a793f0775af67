// The distributed optimizer's updated-parameter all-gather, at the end of the iteration or
// overlapped with the next one's forward (Megatron-Core's overlap_param_gather), and in FP8.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include "collectives/collective.hpp"
#include "simulator/collective_sweep.hpp"
#include "simulator/iteration.hpp"
#include "support.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;

namespace {

const Cluster& superpod() { return test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"); }

void check_exact(Seconds simulated, Seconds closed_form) {
  INFO("simulated " << simulated << " s, closed form " << closed_form << " s");
  CHECK(std::abs(simulated - closed_form) / closed_form < 1e-9);
}

}  // namespace

TEST_CASE("overlapped, the first forward waits for the first bucket's all-gather alone and the rest hides under it") {
  // One rank, dp 4 on four nodes, 4 microbatches, gradients reduce-scattered after the last
  // backward. 640 MB of fp32 gradients are 320 MB of bf16 parameters; Megatron-Core's bucket is
  // max(40M, 1M x dp) parameters = 80 MB. At the end: F and B four times, the reduce-scatter, the
  // optimizer, the whole gather. Overlapped: the first bucket's gather, then the same minus the
  // gather, its remaining 240 MB gathered during the first 50 ms forward.
  const Router router(superpod());
  FabricEngine engine(superpod());
  const Seconds f = 50e-3, b = 100e-3, optimizer = 5e-3;
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{1, 4, 1, 0};
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", f}};
  sp.backward_input = {{SegmentKind::compute, "bwd", b}};
  sp.gradient_bytes = 640'000'000;
  plan.stages.push_back(sp);
  plan.rank_gpu = {0};
  plan.tp_group = {{0}};
  plan.dp_group = {{0, 8, 16, 24}};
  plan.distributed_optimizer = true;
  plan.overlap_grad_reduce = false;
  plan.optimizer_s = optimizer;
  auto alone = [&](Op op, Bytes bytes) {
    const CollectiveRequest req{op, plan.dp_group[0], bytes, plan.channels, *find_protocol("Simple"), 0};
    return makespan(engine.run(find_algorithm("ring")->lower(router, req)));
  };
  const Seconds reduce = alone(Op::reduce_scatter, 640'000'000), whole = alone(Op::all_gather, 320'000'000),
                first = alone(Op::all_gather, 80'000'000), rest = alone(Op::all_gather, 240'000'000);
  REQUIRE(rest < f);
  const IterationResult at_end = simulate_iteration(engine, router, plan);
  check_exact(at_end.iteration_s, 4 * (f + b) + reduce + optimizer + whole);
  CHECK(at_end.ranks[0].dp_exposed_s == Approx(reduce + whole).epsilon(1e-9));
  plan.overlap_param_gather = true;
  const IterationResult overlapped = simulate_iteration(engine, router, plan);
  check_exact(overlapped.iteration_s, first + 4 * (f + b) + reduce + optimizer);
  CHECK(overlapped.ranks[0].dp_exposed_s == Approx(first + reduce).epsilon(1e-9));
  CHECK(overlapped.ranks[0].bubble_s == Approx(0).margin(1e-12));
  // FP8 parameters: 1 byte each, so the first bucket (40M parameters) is 40 MB of 160 MB.
  plan.parameter_gather_bytes = 1;
  check_exact(simulate_iteration(engine, router, plan).iteration_s,
              alone(Op::all_gather, 40'000'000) + 4 * (f + b) + reduce + optimizer);
  plan.overlap_param_gather = false;
  check_exact(simulate_iteration(engine, router, plan).iteration_s,
              4 * (f + b) + reduce + optimizer + alone(Op::all_gather, 160'000'000));
}

TEST_CASE("overlap_param_gather on an interleaved run hides most of the gather, and the breakdown still adds up") {
  const std::string scenario = source_path("scenarios/deepseek-v3-h800-2048.yaml");
  const auto at_end = test::cli_json("run --fold assume " + scenario),
             overlapped = test::cli_json("run --fold assume " + scenario + " --set parallel.overlap_param_gather=true");
  CHECK(overlapped["iteration_s"].get<double>() < at_end["iteration_s"].get<double>());
  CHECK(overlapped["config"]["overlap_param_gather"] == true);
}

TEST_CASE("overlap_param_gather and fp8_param_gather where nothing gathers parameters are one line, exit 2") {
  const std::string bf16 = source_path("scenarios/gpt3-175b-a100-1024.yaml");
  const auto no_optimizer = run_cli("run --fold assume " + bf16 + " --set parallel.overlap_param_gather=true");
  CHECK(no_optimizer.exit_code == 2);
  CHECK_THAT(no_optimizer.stderr_text,
             Catch::Contains("parallel.overlap_param_gather: expected true only with the distributed optimizer, ZeRO 1 or 2"));
  CHECK(std::count(no_optimizer.stderr_text.begin(), no_optimizer.stderr_text.end(), '\n') == 1);
  const auto zero3 = run_cli("run --fold assume " + bf16 + " --set parallel.distributed_optimizer=true --set parallel.zero_stage=3 --set parallel.overlap_param_gather=true");
  CHECK(zero3.exit_code == 2);
  CHECK_THAT(zero3.stderr_text, Catch::Contains("parallel.overlap_param_gather: expected true only with the distributed optimizer"));
}
