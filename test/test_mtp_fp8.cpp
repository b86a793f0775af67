// DeepSeek-V3's multi-token prediction module (report section 2.2) and FP8 with fine-grained
// scaling (section 3.3.2): MTP's own weights against the published count, its activations and its
// time on the last stage in closed form; the quantization passes and the scales' bytes.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "support.hpp"
#include "workloads/fp8_scaling.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model_math.hpp"
#include "workloads/plan_iteration.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::shipped_model;
using clustersim::test::source_path;

TEST_CASE("deepseek-v3's mtp module has its block, its projection and three norms of its own") {
  const ModelSpec m = shipped_model("deepseek-v3");
  REQUIRE(m.mtp_depth == 1);
  const double h = m.hidden;
  const double own = layer_parameter_count(m, m.layers - 1).total() + 2 * h * h + 3 * h;
  CHECK(mtp_parameter_count(m) == own);
  // Hugging Face deepseek-ai/DeepSeek-V3 README_WEIGHTS.md: "11.5B unique parameters" in the MTP
  // module (the shared embedding and head aside).
  CHECK(test::relative_error(mtp_parameter_count(m), 11.5e9) < 0.01);
  // The 671B main-model count leaves it out, as the report does.
  ModelSpec without = m;
  without.mtp_depth = 0;
  CHECK(parameter_count(m) == parameter_count(without));
  // Its FLOPs: the block, the projection (2 x 2h x h per token) and one more head pass (2 V h).
  const double tokens = m.seq_len;
  CHECK(mtp_forward_flops(m, 1, 1) == layer_forward_flops(m, m.layers - 1, 1, 1).total_flops() +
                                          2 * tokens * 2 * h * h + 2 * tokens * h * m.vocab);
}

TEST_CASE("an mtp module keeps a layer, its inputs and a second head's activations on the last stage") {
  const ModelSpec m = shipped_model("deepseek-v3");
  ActivationLayout layout;
  layout.flash_attention = true;
  StageLoad load;
  load.last_stage = true;
  load.head_in_flight_microbatches = 3;
  const StageMemory without = stage_memory(m, layout, load);
  load.mtp_modules = 1;
  const StageMemory with = stage_memory(m, layout, load);
  const double sb = m.seq_len, sbh = sb * m.hidden;
  // Per microbatch held by the head: the block, the two norms' inputs (2 sbh each) and the
  // projection's 2h-wide input (2 x 2 sbh), the head's norm and output-layer inputs and fp32 logits.
  const double module = stored_activation_bytes(m, m.layers - 1, layout) + 4 * sbh + 4 * sbh + 4 * sbh + 4 * sb * m.vocab;
  CHECK(double(with.activations - without.activations) == Approx(3 * module).epsilon(1e-12));
}

TEST_CASE("the mtp projection runs once per depth on the last stage, as an fp8 gemm") {
  const ScenarioSpec s = load_scenario(source_path("scenarios/deepseek-v3-h800-2048.yaml"));
  const IterationPlan plan = plan_iteration(s, nullptr);
  ComputeOp projection;
  projection.name = "mtp_proj";
  projection.kind = ComputeKind::gemm;
  projection.shape = {4096, 7168, 2 * 7168};
  projection.flops = 2.0 * 4096 * 7168 * 2 * 7168;
  projection.hbm_bytes = static_cast<Bytes>(2.0 * (4096.0 * 2 * 7168 + 2.0 * 7168 * 7168 + 4096.0 * 7168));
  for (std::size_t stage = 0; stage < plan.stages.size(); ++stage) {
    int count = 0;
    for (const Segment& seg : plan.stages[stage].forward)
      if (seg.label == "mtp_proj") {
        ++count;
        CHECK(seg.duration_s == Approx(op_time(s.gpu, s.precision, projection)).epsilon(1e-12));
      }
    CHECK(count == (stage + 1 == plan.stages.size() ? 1 : 0));
  }
}

TEST_CASE("fp8 quantizes each distinct gemm input once and each gemm's output gradient, 2 B in, 1 B and a scale per 128 out") {
  const ScenarioSpec s = load_scenario(source_path("scenarios/llama3-70b-h100-1024.yaml"));
  const std::vector<ComputeOp> plain = layer_forward_ops(s.model, s.microbatch, s.layout.tp, s.sequence_parallel);
  std::map<std::string, OpShape> gemms;
  for (const ComputeOp& op : plain)
    if (op.kind == ComputeKind::gemm) gemms[op.name] = op.shape;
  const double per_element = 2 + 1 + 4.0 / 128;
  std::map<std::string, double> quantized;
  for (const ComputeOp& op : with_input_quantization(plain))
    if (op.name.find(".quantize") != std::string::npos) quantized[op.name] = double(op.hbm_bytes);
  // qkv reads the normed input, gate and up share the FFN's (quantized before gate), attn_out and
  // ffn_down read their own: the GEMM's m x k input each.
  REQUIRE(quantized.size() == 4);
  for (const char* gemm : {"qkv", "attn_out", "ffn_gate", "ffn_down"}) {
    INFO(gemm);
    const OpShape g = gemms.at(gemm);
    CHECK(quantized.at(std::string(gemm) + ".quantize") == Approx(per_element * g.m * g.k).epsilon(1e-9));
  }
  std::map<std::string, double> gradients;
  for (const ComputeOp& op : with_gradient_quantization(backward_ops(plain)))
    if (op.name.find(".grad_quantize") != std::string::npos) gradients[op.name] = double(op.hbm_bytes);
  REQUIRE(gradients.size() == 5);  // qkv, attn_out, gate, up, down: each GEMM's m x n output gradient
  for (const auto& [gemm, g] : gemms) {
    INFO(gemm);
    CHECK(gradients.at(gemm + ".grad_quantize") == Approx(per_element * g.m * g.n).epsilon(1e-9));
  }
}

TEST_CASE("fp8 weights carry a 4-byte scale per 128 x 128 block") {
  const ModelSpec m = shipped_model("llama3-70b");
  StageLoad load;
  load.params_on_rank = 1e9;
  ActivationLayout bf16, fp8;
  fp8.fp8_gemm_inputs = true;
  CHECK(double(stage_memory(m, fp8, load).weights - stage_memory(m, bf16, load).weights) == Approx(4 * 1e9 / (128 * 128)));
}
