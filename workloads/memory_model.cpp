#include "workloads/memory_model.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace clustersim {

namespace {

/// Rounded to a byte count; one beyond 2^58 (256 PiB, no GPU's memory) saturates there, so an absurd
/// layout reads as out of memory and a stage's sum of five parts cannot wrap around.
Bytes to_bytes(double bytes) { return bytes >= 0x1p58 ? Bytes{1} << 58 : static_cast<Bytes>(std::llround(bytes)); }

/// One layer, one microbatch, one rank; unrounded so a stage's sum rounds once.
double layer_bytes(const ModelSpec& m, const ActivationLayout& layout, Recompute recompute) {
  assert(layout.microbatch > 0 && layout.tensor_parallel > 0 && "a layout has positive sizes");
  assert(m.heads % layout.tensor_parallel == 0 && "tensor_parallel divides the heads");
  const double t = layout.tensor_parallel;
  const double sb = double(m.seq_len) * layout.microbatch;
  const double sbh = sb * m.hidden;
  const double whole_split = layout.sequence_parallel ? t : 1.0;  // what sequence parallelism splits
  if (recompute == Recompute::full) return 2 * sbh / whole_split;

  const double kv_width_per_rank = std::max(double(m.kv_heads) / t, 1.0) * m.head_dim();
  // Bytes of a GEMM input: 2, or 1 when FP8 training keeps it in FP8.
  const double gemm_in = layout.fp8_gemm_inputs ? 1.0 : 2.0;
  // GELU: its input (2) and the down projection's input; SwiGLU: gate and up outputs (4), the
  // down projection's input.
  const double ffn_inner = ((m.ffn == FfnType::swiglu ? 4.0 : 2.0) + gemm_in) * sb * m.ffn_hidden;
  // Two LayerNorm inputs (4), the QKV and FFN inputs (2 each), two dropout masks (2).
  const double kept_whole = (6 + 2 * gemm_in) * sbh / whole_split;
  const double split = (2 * sbh /*Q*/ + gemm_in * sbh /*projection input*/ + ffn_inner) / t + 4 * sb * kv_width_per_rank;
  const double scores = layout.flash_attention ? 4.0 * m.heads * sb / t : 5.0 * m.heads * m.seq_len * sb / t;
  const double attention_core = recompute == Recompute::none ? scores : 0.0;
  return kept_whole + split + attention_core;
}

}  // namespace

Bytes activation_bytes_per_layer(const ModelSpec& m, int microbatch, int tensor_parallel, bool sequence_parallel,
                                 Recompute recompute) {
  return to_bytes(layer_bytes(m, {microbatch, tensor_parallel, sequence_parallel, recompute}, recompute));
}

StateBytes state_bytes(double params_on_rank, int data_parallel, bool distributed_optimizer) {
  return zero_state_bytes(params_on_rank, data_parallel, distributed_optimizer ? 1 : 0);
}

StateBytes zero_state_bytes(double params_on_rank, int data_parallel, int zero_stage) {
  assert(params_on_rank >= 0 && data_parallel > 0 && zero_stage >= 0 && zero_stage <= 3 && "state of a real rank");
  const double d = data_parallel;
  return {to_bytes(kWeightBytesPerParam * params_on_rank / (zero_stage >= 3 ? d : 1)),
          to_bytes(kGradientBytesPerParam * params_on_rank / (zero_stage >= 2 ? d : 1)),
          to_bytes(kOptimizerBytesPerParam * params_on_rank / (zero_stage >= 1 ? d : 1))};
}

/// An MoE layer keeps, per token, the activations of its top_k routed and its shared experts: as
/// many as a dense FFN of (top_k + shared) x expert width. Dispatch buffers are not counted.
ModelSpec moe_layer_shape(const ModelSpec& m) {
  ModelSpec out = m;
  if (m.moe) out.ffn_hidden = (m.moe->top_k + m.moe->shared_experts) * m.moe->expert_ffn_hidden;
  return out;
}

StageMemory stage_memory(const ModelSpec& m, const ActivationLayout& layout, const StageLoad& stage) {
  const int zero = stage.zero_stage >= 0 ? stage.zero_stage : stage.distributed_optimizer ? 1 : 0;
  StateBytes state = zero_state_bytes(stage.params_on_rank, stage.data_parallel, zero);
  state.weights += to_bytes(kWeightBytesPerParam * stage.gathered_params);
  if (stage.expert_params_on_rank > 0) {
    const StateBytes experts = zero_state_bytes(stage.expert_params_on_rank, stage.expert_data_parallel, zero);
    state.weights += experts.weights;
    state.gradients += experts.gradients;
    state.optimizer += experts.optimizer;
  }
  const double t = layout.tensor_parallel;
  const double sb = double(m.seq_len) * layout.microbatch;
  const double sbh = sb * m.hidden;
  const double whole_split = layout.sequence_parallel ? t : 1.0;

  const ModelSpec moe = moe_layer_shape(m);
  double per_microbatch = (stage.layers - stage.moe_layers) * layer_bytes(m, layout, layout.recompute) +
                          stage.moe_layers * layer_bytes(moe, layout, layout.recompute);
  if (stage.first_stage) per_microbatch += sbh / whole_split;  // embedding dropout mask, 1 B/element
  per_microbatch += stage.extra_activation_bytes;
  if (stage.last_stage)  // final LayerNorm and output-layer inputs, then fp32 logits split by vocabulary
    per_microbatch += 4 * sbh / whole_split + 4 * sb * m.vocab / t;

  StageMemory out;
  out.weights = state.weights;
  out.gradients = state.gradients;
  out.optimizer = state.optimizer;
  out.activations = to_bytes(per_microbatch * stage.in_flight_microbatches);
  if (stage.layers > 0) {
    const ModelSpec& widest = stage.moe_layers > 0 ? moe : m;
    const double stored = layer_bytes(widest, layout, layout.recompute);
    out.recompute_workspace = to_bytes(layer_bytes(widest, layout, Recompute::none) - stored);
  }
  out.total = out.weights + out.gradients + out.optimizer + out.activations + out.recompute_workspace;
  return out;
}

}  // namespace clustersim
