// Per-iteration fixed costs: the optimizer step as Megatron-LM runs it (workloads/compute_model.hpp,
// optimizer_op) is memory-bound, its bytes per parameter over the HBM bandwidth a streaming kernel
// reaches, inside training.
#include <catch2/catch.hpp>

#include "support.hpp"
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
