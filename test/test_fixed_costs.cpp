// Per-iteration fixed costs: the optimizer step as Megatron-LM runs it (workloads/compute_model.hpp,
// optimizer_op) is memory-bound, its bytes per parameter over the HBM bandwidth a streaming kernel
// reaches, inside training.
#include <catch2/catch.hpp>

#include "one_line_error.hpp"
#include "support.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/plan_iteration.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;

namespace {

const std::string kScenario = "scenarios/validation/korthikanti-22b-full.yaml";

/// 22B on tp 8, one pipeline stage: 48 layers of 6144 x (3 x 6144 + 6144 + 2 x 24576) / 8 GEMM
/// weights and the tied 51200 x 6144 / 8 embedding, once.
constexpr double kParams = 48 * 6144.0 * (3 * 6144 + 6144 + 2 * 24576) / 8 + 51200.0 * 6144 / 8;

/// Seconds per byte streamed by an A100 inside training: 2.039 TB/s x 0.852 (stream) x 0.967.
double a100_s_per_byte() {
  const GpuModel& a100 = test::shipped_gpu("A100-SXM-80GB");
  REQUIRE(a100.hbm_bandwidth_Bps == Approx(2.039e12).epsilon(1e-12));
  REQUIRE(a100.hbm_efficiency->fraction == Approx(0.852).epsilon(1e-12));
  REQUIRE(a100.in_training_efficiency->fraction == Approx(0.967).epsilon(1e-12));
  return 1.0 / (2.039e12 * 0.852 * 0.967);
}

}  // namespace

TEST_CASE("the optimizer step streams 42 bytes per parameter in bf16 and 54 in fp16 at the HBM's speed") {
  // Megatron-LM's step, bytes per parameter: the gradient-norm read (4); multi-tensor Adam reading
  // the fp32 gradient, master weight and both moments (16) and writing all but the gradient (12);
  // the master copied into the 16-bit weight (4 + 2); the gradient buffer zeroed (4 in bf16). fp16
  // keeps a 2-byte buffer: cast to fp32 main gradients (2 + 4), unscaled and checked (8), zeroed (2).
  CHECK(optimizer_op(1e9, 4, false).hbm_bytes == Bytes(42e9));
  CHECK(optimizer_op(1e9, 2, true).hbm_bytes == Bytes((4 + 28 + 6 + 6 + 8 + 2) * 1e9));
  const double s_per_byte = a100_s_per_byte();
  const ScenarioSpec fp16 = load_scenario(test::source_path(kScenario));
  REQUIRE(fp16.precision == "fp16");
  CHECK(plan_iteration(fp16).optimizer_s == Approx(54 * kParams * s_per_byte).epsilon(1e-6));
  const ScenarioSpec bf16 = load_scenario(test::source_path(kScenario), {"precision=bf16"});
  CHECK(plan_iteration(bf16).optimizer_s == Approx(42 * kParams * s_per_byte).epsilon(1e-6));
}

TEST_CASE("Adam's state in bf16 (parallel.optimizer_dtype) holds 6 bytes a parameter and streams 28 in the step") {
  // Apex's DistributedFusedAdam with dtype bf16 (NeMo's optim.dtype) keeps its parameter copy and
  // both moments in bf16: 3 x 2 B a parameter, sharded as the fp32 state's 12 B is. Its step reads
  // the norm's fp32 gradient (4), the state and the gradient (6 + 4), writes the state (6), copies the
  // parameter copy into the weights (2 + 2) and zeroes the fp32 buffer (4): 28 B against 42.
  CHECK(optimizer_op(1e9, 4, false, 2).hbm_bytes == Bytes(28e9));
  CHECK(optimizer_op(1e9, 4, false, 4).hbm_bytes == Bytes(42e9));
  CHECK(zero_state_bytes(1e9, 4, 1, 4, 6).optimizer == Bytes(6e9 / 4));
  CHECK(zero_state_bytes(1e9, 4, 1).optimizer == Bytes(12e9 / 4));
  const double s_per_byte = a100_s_per_byte();
  const ScenarioSpec bf16 = load_scenario(test::source_path(kScenario), {"precision=bf16", "parallel.optimizer_dtype=bf16"});
  CHECK(bf16.optimizer_dtype == "bf16");
  CHECK(plan_iteration(bf16).optimizer_s == Approx(28 * kParams * s_per_byte).epsilon(1e-6));
  // A run's stage memory halves its optimizer column (one stage, data-parallel 1, no sharding).
  auto optimizer_gib = [&](const char* dtype) {
    const auto r = test::cli_json("run " + test::source_path(kScenario) + " --set precision=bf16 --set parallel.optimizer_dtype=" + dtype);
    return r["stages"][0]["memory_bytes"]["optimizer"].get<double>();
  };
  CHECK(optimizer_gib("bf16") == Approx(optimizer_gib("fp32") / 2).epsilon(1e-9));
  CHECK(optimizer_gib("fp32") == Approx(12 * kParams).epsilon(1e-3));
}

TEST_CASE("an optimizer dtype the model does not keep is one line naming the field") {
  const auto r = test::run_cli("run " + test::source_path(kScenario) + " --set parallel.optimizer_dtype=fp16");
  test::require_one_line_error(r, "error: ", "parallel.optimizer_dtype: expected one of: fp32, bf16; got 'fp16'");
}
