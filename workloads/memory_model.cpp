#include "workloads/memory_model.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace clustersim {

namespace {

Bytes to_bytes(double bytes) { return static_cast<Bytes>(std::llround(bytes)); }

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
  const double ffn_inner = (m.ffn == FfnType::swiglu ? 6.0 : 4.0) * sb * m.ffn_hidden;
  const double kept_whole = 10 * sbh / whole_split;
  const double split = (2 * sbh /*Q*/ + 2 * sbh /*projection input*/ + ffn_inner) / t + 4 * sb * kv_width_per_rank;
  const double attention_core = recompute == Recompute::none ? 5.0 * m.heads * m.seq_len * sb / t : 0.0;
  return kept_whole + split + attention_core;
}

}  // namespace

Bytes activation_bytes_per_layer(const ModelSpec& m, int microbatch, int tensor_parallel, bool sequence_parallel,
                                 Recompute recompute) {
  return to_bytes(layer_bytes(m, {microbatch, tensor_parallel, sequence_parallel, recompute}, recompute));
}

StateBytes state_bytes(double params_on_rank, int data_parallel, bool distributed_optimizer) {
  assert(params_on_rank >= 0 && data_parallel > 0 && "state of a real rank");
  const double optimizer_shards = distributed_optimizer ? data_parallel : 1;
  return {to_bytes(kWeightBytesPerParam * params_on_rank), to_bytes(kGradientBytesPerParam * params_on_rank),
          to_bytes(kOptimizerBytesPerParam * params_on_rank / optimizer_shards)};
}

StageMemory stage_memory(const ModelSpec& m, const ActivationLayout& layout, const StageLoad& stage) {
  const StateBytes state = state_bytes(stage.params_on_rank, stage.data_parallel, stage.distributed_optimizer);
  const double t = layout.tensor_parallel;
  const double sb = double(m.seq_len) * layout.microbatch;
  const double sbh = sb * m.hidden;
  const double whole_split = layout.sequence_parallel ? t : 1.0;

  double per_microbatch = stage.layers * layer_bytes(m, layout, layout.recompute);
  if (stage.first_stage) per_microbatch += sbh / whole_split;  // embedding dropout mask, 1 B/element
  if (stage.last_stage)  // final LayerNorm and output-layer inputs, then fp32 logits split by vocabulary
    per_microbatch += 4 * sbh / whole_split + 4 * sb * m.vocab / t;

  StageMemory out;
  out.weights = state.weights;
  out.gradients = state.gradients;
  out.optimizer = state.optimizer;
  out.activations = to_bytes(per_microbatch * stage.in_flight_microbatches);
  if (stage.layers > 0) {
    const double stored = layer_bytes(m, layout, layout.recompute);
    out.recompute_workspace = to_bytes(layer_bytes(m, layout, Recompute::none) - stored);
  }
  out.total = out.weights + out.gradients + out.optimizer + out.activations + out.recompute_workspace;
  return out;
}

}  // namespace clustersim
