// Training precision: FP8 runs GEMMs at the FP8 peak and dispatches MoE tokens in FP8; a datatype
// the GPU lacks is an error at the field.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include <map>

#include "support.hpp"
#include "workloads/layer_segments.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/plan_iteration.hpp"
#include "workloads/scenario.hpp"

using clustersim::test::run_cli;
using clustersim::test::source_path;

TEST_CASE("fp8 on an a100 is an error naming what the gpu runs") {
  const auto r = run_cli("run --fold assume " + source_path("scenarios/gpt3-175b-a100-1024.yaml") + " --set precision=fp8");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(":28: precision: expected a datatype that A100-SXM-80GB runs (bf16, fp16); got 'fp8'"));
}

TEST_CASE("an mx format on an h100 is an error naming what the gpu runs") {
  const auto r = run_cli("run --fold assume " + source_path("scenarios/gpt3-175b-h100-pp16.yaml") + " --set precision=mxfp8");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": precision: expected a datatype that H100-SXM runs (bf16, fp16, fp8); got 'mxfp8'"));
}

TEST_CASE("fp8 makes a compute-bound iteration faster than bf16 on the same gpus") {
  const std::string scenario = source_path("scenarios/deepseek-v3-h800-2048.yaml");
  const auto fp8 = run_cli("run --fold assume " + scenario), bf16 = run_cli("run --fold assume " + scenario + " --set precision=bf16");
  REQUIRE(fp8.exit_code == 0);
  REQUIRE(bf16.exit_code == 0);
  auto seconds = [](const std::string& out) {
    const auto at = out.find("iteration time");
    return std::stod(out.substr(out.find_first_of("0123456789", at)));
  };
  CHECK(seconds(fp8.stdout_text) < seconds(bf16.stdout_text));
}

TEST_CASE("fp8 training keeps its gemm inputs in one byte and a scale per 128: 2sbh + 5sbh/t elements") {
  // GPT-3 175B shapes, no recompute, tp 8 without sequence parallelism: the QKV and FFN inputs
  // (sbh each, kept whole), the attention projection's input (sbh/t) and the FFN down projection's
  // input (4sbh/t) go from 2 B to 1 B plus a 4-B scale per 1 x 128 tile (DeepSeek-V3 3.3.2).
  const clustersim::ModelSpec m = clustersim::load_model_spec(source_path("scenarios/models/gpt3-175b.yaml"));
  clustersim::StageLoad load;
  load.layers = 1;
  const auto bf16 = clustersim::stage_memory(m, {1, 8, false, clustersim::Recompute::none, false}, load);
  const auto fp8 = clustersim::stage_memory(m, {1, 8, false, clustersim::Recompute::none, true}, load);
  const double sbh = 2048.0 * 12288;
  CHECK(double(bf16.activations - fp8.activations) == Approx((2 - (1 + 4.0 / 128)) * (2 * sbh + 5 * sbh / 8)).epsilon(1e-9));
}

namespace {

/// The bytes of each labelled TP collective in one dense layer of the shipped Llama 3 70B H100
/// scenario (tp 8, sequence parallel), at a precision.
std::map<std::string, clustersim::Bytes> tp_collective_bytes(const std::string& precision) {
  using namespace clustersim;
  const ScenarioSpec s = load_scenario(source_path("scenarios/llama3-70b-h100-1024.yaml"),
                                       {"precision=" + precision, "parallel.sequence_parallel=true"});
  std::map<std::string, Bytes> out;
  const LayerSegments layer = dense_layer_segments(s, nullptr);
  for (const auto* pass : {&layer.forward, &layer.backward_input})
    for (const Segment& seg : *pass)
      if (seg.kind == SegmentKind::tp_comm) out[seg.label] = seg.tp_bytes;
  return out;
}

}  // namespace

TEST_CASE("fp8 gathers sequence-parallel gemm inputs in one byte and reduces outputs in two") {
  using namespace clustersim;
  const ScenarioSpec s = load_scenario(source_path("scenarios/llama3-70b-h100-1024.yaml"));
  const double sbh = double(s.microbatch) * s.model.seq_len * s.model.hidden;  // one microbatch, whole layer width
  const auto bf16 = tp_collective_bytes("bf16"), fp8 = tp_collective_bytes("fp8");
  for (const char* gather : {"attention all-gather", "mlp all-gather"}) {
    INFO(gather);
    CHECK(double(bf16.at(gather)) == 2 * sbh);
    CHECK(double(fp8.at(gather)) == sbh);
  }
  for (const char* reduce : {"attention output reduce-scatter", "mlp output reduce-scatter", "mlp grad all-gather"}) {
    INFO(reduce);
    CHECK(double(fp8.at(reduce)) == 2 * sbh);
  }
}

TEST_CASE("gradients are reduced in fp16 under fp16 and in fp32 otherwise, as Megatron-LM does") {
  // --accumulate-allreduce-grads-in-fp32 is off by default and forced on for bf16; FP8 recipes keep
  // bf16 parameters.
  using clustersim::IterationPlan, clustersim::load_scenario, clustersim::plan_iteration;
  const std::string scenario = source_path("scenarios/gpt3-175b-a100-1024.yaml");
  const IterationPlan fp16 = plan_iteration(load_scenario(scenario, {"precision=fp16"}));
  const IterationPlan bf16 = plan_iteration(load_scenario(scenario, {"precision=bf16"}));
  CHECK(fp16.gradient_bytes_per_param == 2);
  CHECK(bf16.gradient_bytes_per_param == 4);
  REQUIRE(fp16.stages.size() == bf16.stages.size());
  for (std::size_t k = 0; k < fp16.stages.size(); ++k) {
    CHECK(fp16.stages[k].gradient_bytes > 0);
    CHECK(bf16.stages[k].gradient_bytes == 2 * fp16.stages[k].gradient_bytes);
  }
  CHECK(bf16.embedding_sync_bytes == 2 * fp16.embedding_sync_bytes);
  const IterationPlan fp8 = plan_iteration(load_scenario(source_path("scenarios/deepseek-v3-h800-2048.yaml")));
  CHECK(fp8.gradient_bytes_per_param == 4);
}

TEST_CASE("parallel.grad_reduce_dtype sets the width the gradients are reduced in, as NeMo's MLPerf runs set it") {
  // NeMo's MLPerf GPT-3 reduces bf16 gradients (grad_sync_dtype: bf16), Llama 3.1 405B too
  // (grad_reduce_in_fp32=False): every data-parallel gradient byte halves against fp32.
  using clustersim::IterationPlan, clustersim::load_scenario, clustersim::plan_iteration;
  const std::string scenario = source_path("scenarios/deepseek-v3-h800-2048.yaml");
  const IterationPlan fp32 = plan_iteration(load_scenario(scenario));
  const IterationPlan bf16 = plan_iteration(load_scenario(scenario, {"parallel.grad_reduce_dtype=bf16"}));
  CHECK(bf16.gradient_bytes_per_param == 2);
  REQUIRE(fp32.stages.size() == bf16.stages.size());
  for (std::size_t k = 0; k < fp32.stages.size(); ++k) {
    CHECK(bf16.stages[k].gradient_bytes > 0);
    // Bytes is unsigned: compare as doubles (a parameter count may round either way by one byte).
    CHECK(std::abs(double(fp32.stages[k].gradient_bytes) - 2.0 * double(bf16.stages[k].gradient_bytes)) <= 1);
    CHECK(std::abs(double(fp32.stages[k].expert_gradient_bytes) - 2.0 * double(bf16.stages[k].expert_gradient_bytes)) <= 1);
  }
  // fp32 under fp16 precision: Megatron-LM's --accumulate-allreduce-grads-in-fp32.
  const std::string a100 = source_path("scenarios/gpt3-175b-a100-1024.yaml");
  CHECK(plan_iteration(load_scenario(a100, {"precision=fp16", "parallel.grad_reduce_dtype=fp32"})).gradient_bytes_per_param == 4);
  // Fewer bytes on the same rings: the run is no slower, and its exposed data-parallel time shrinks.
  const nlohmann::json slow = clustersim::test::cli_json("run --fold assume " + a100),
                       fast = clustersim::test::cli_json("run --fold assume " + a100 + " --set parallel.grad_reduce_dtype=bf16");
  CHECK(fast["iteration_s"].get<double>() <= slow["iteration_s"].get<double>());
  CHECK(fast["stages"][0]["time_s"]["dp_exposed"].get<double>() < slow["stages"][0]["time_s"]["dp_exposed"].get<double>());
  // The gradient buffer is bf16 too: stage 0 holds half the bytes of gradients.
  CHECK(fast["stages"][0]["memory_bytes"]["gradients"].get<double>() ==
        Approx(slow["stages"][0]["memory_bytes"]["gradients"].get<double>() / 2).epsilon(1e-9));
  CHECK(fast["config"]["grad_reduce_dtype"] == "bf16");
  CHECK(slow["config"]["grad_reduce_dtype"] == "fp32");
}

TEST_CASE("a grad_reduce_dtype that is not fp32, bf16 or fp16 is one line naming the field, exit 2") {
  const auto r = run_cli("run --fold assume " + source_path("scenarios/gpt3-175b-a100-1024.yaml") + " --set parallel.grad_reduce_dtype=fp8");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains("parallel.grad_reduce_dtype: expected one of: fp32, bf16, fp16; got 'fp8'"));
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
}

TEST_CASE("parallel.fp8_param_gather all-gathers the updated parameters in 1 byte, as FP8 parameters do") {
  // NeMo's MLPerf runs keep FP8 weights (FP8_PARAMS=True, v4.x GPT-3 and Llama 3.1 405B): the
  // distributed optimizer's parameter all-gather moves 1 byte a parameter, half of bf16's 2.
  using clustersim::IterationPlan, clustersim::load_scenario, clustersim::plan_iteration;
  const std::string scenario = source_path("scenarios/deepseek-v3-h800-2048.yaml");
  const IterationPlan bf16 = plan_iteration(load_scenario(scenario));
  const IterationPlan fp8 = plan_iteration(load_scenario(scenario, {"parallel.fp8_param_gather=true"}));
  CHECK(bf16.parameter_gather_bytes == 2);
  CHECK(fp8.parameter_gather_bytes == 1);
  // On the engine: only the gather shrinks, so the run is no slower and its exposed
  // data-parallel time (the gather runs after the optimizer step) is smaller.
  const auto slow = clustersim::test::cli_json("run --fold assume " + scenario),
             fast = clustersim::test::cli_json("run --fold assume " + scenario + " --set parallel.fp8_param_gather=true");
  CHECK(fast["iteration_s"].get<double>() < slow["iteration_s"].get<double>());
  CHECK(fast["stages"][0]["memory_bytes"]["gradients"] == slow["stages"][0]["memory_bytes"]["gradients"]);
  CHECK(fast["config"]["fp8_param_gather"] == true);
}

TEST_CASE("fp8_param_gather without an 8-bit precision or without a distributed optimizer is one line, exit 2") {
  const std::string bf16 = source_path("scenarios/gpt3-175b-a100-1024.yaml");
  const auto no_fp8 = run_cli("run --fold assume " + bf16 + " --set parallel.distributed_optimizer=true --set parallel.fp8_param_gather=true");
  CHECK(no_fp8.exit_code == 2);
  CHECK_THAT(no_fp8.stderr_text, Catch::Contains("parallel.fp8_param_gather: expected true only under an 8-bit precision (fp8 or an MX format), not bf16"));
  CHECK(std::count(no_fp8.stderr_text.begin(), no_fp8.stderr_text.end(), '\n') == 1);
  const auto no_optimizer = run_cli("run --fold assume " + source_path("scenarios/deepseek-v3-h800-2048.yaml") +
                                    " --set parallel.distributed_optimizer=false --set parallel.fp8_param_gather=true");
  CHECK(no_optimizer.exit_code == 2);
  CHECK_THAT(no_optimizer.stderr_text, Catch::Contains("parallel.fp8_param_gather: expected true only with the distributed optimizer or ZeRO"));
  CHECK(std::count(no_optimizer.stderr_text.begin(), no_optimizer.stderr_text.end(), '\n') == 1);
}
