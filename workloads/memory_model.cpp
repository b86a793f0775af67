#include "workloads/memory_model.hpp"

#include "workloads/fp8_scaling.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace clustersim {

namespace {

/// Rounded to a byte count; one beyond 2^58 (256 PiB, no GPU's memory) saturates there, so an absurd
/// layout reads as out of memory and a stage's sum of five parts cannot wrap around.
Bytes to_bytes(double bytes) { return bytes >= 0x1p58 ? Bytes{1} << 58 : static_cast<Bytes>(std::llround(bytes)); }

/// Bytes of a GEMM input: 2, or when FP8 training keeps it in FP8 1 B and a 4-B scale per 1 x 128
/// tile (DeepSeek-V3 section 3.3.2, fp8_scaling.hpp).
double gemm_input_bytes(const ActivationLayout& layout) { return layout.fp8_gemm_inputs ? kFp8TiledBytesPerElement : 2.0; }

/// What sequence parallelism splits the whole-sequence tensors by: t, else 1.
double sequence_split(const ActivationLayout& layout) {
  return layout.sequence_parallel ? double(layout.tensor_parallel) : 1.0;
}

/// One layer's terms, one microbatch, one rank, nothing recomputed (memory_model.hpp).
LayerActivations terms(const ModelSpec& m, bool moe_layer, const ActivationLayout& layout) {
  assert(layout.microbatch > 0 && layout.tensor_parallel > 0 && "a layout has positive sizes");
  assert(m.heads % layout.tensor_parallel == 0 && "tensor_parallel divides the heads");
  const double t = layout.tensor_parallel;
  const double sb = double(m.seq_len) * layout.microbatch;
  const double sbh = sb * m.hidden;
  const double ws = sequence_split(layout);
  const double g = gemm_input_bytes(layout);
  const double heads_t = m.heads / t;
  LayerActivations a;
  a.norm_inputs = 4 * sbh / ws;
  a.norm_outputs = 2 * g * sbh / ws;
  a.dropout_masks = 2 * sbh / ws;
  if (m.mla) {
    const MlaSpec& l = *m.mla;
    const double latents = double(l.q_lora_rank) + l.kv_lora_rank;
    a.norm_inputs += 2 * sb * latents / ws;
    a.norm_outputs += g * sb * latents / ws;
    a.qkv = 2 * sb * heads_t * (2.0 * l.qk_head_dim() + l.v_head_dim);
    a.attention_output = g * sb * heads_t * l.v_head_dim;
  } else {
    const double kv_width_per_rank = std::max(double(m.kv_heads) / t, 1.0) * m.head_dim();
    a.qkv = 2 * sbh / t + 4 * sb * kv_width_per_rank;
    a.attention_output = g * sbh / t;
  }
  a.attention_core = layout.flash_attention ? 4.0 * heads_t * sb : 5.0 * heads_t * m.seq_len * sb;
  // GELU keeps its input (2); SwiGLU its gate and up outputs (4).
  const double act_in = m.ffn == FfnType::swiglu ? 4.0 : 2.0;
  const double ffn = moe_layer ? double(m.moe->shared_experts) * m.moe->expert_ffn_hidden : double(m.ffn_hidden);
  a.ffn_act_inputs = act_in * sb * ffn / t;
  a.ffn_act_outputs = g * sb * ffn / t;
  if (moe_layer) {
    const double experts = double(m.moe->top_k) * m.moe->expert_ffn_hidden;
    a.expert_act_inputs = act_in * sb * experts / t;
    a.expert_act_outputs = g * sb * experts / t;
  }
  return a;
}

/// What the layer keeps: full stores its input alone; otherwise every term but those recomputed.
double stored(const ModelSpec& m, bool moe_layer, const ActivationLayout& layout, Recompute mode,
              RecomputeModules r) {
  const double sbh = double(m.seq_len) * layout.microbatch * m.hidden;
  if (mode == Recompute::full) return 2 * sbh / sequence_split(layout);
  LayerActivations a = terms(m, moe_layer, layout);
  if (mode == Recompute::none && r.empty()) return a.total();
  if (mode == Recompute::selective) r.add(RecomputeModule::core_attn);
  if (r.has(RecomputeModule::layernorm)) a.norm_outputs = 0;
  if (r.has(RecomputeModule::core_attn)) a.attention_core = 0;
  if (r.has(RecomputeModule::mla_up_proj) && m.mla) a.qkv = 0;
  const bool expert_act = moe_layer && (r.has(RecomputeModule::activation) || r.has(RecomputeModule::moe_act));
  if (expert_act) {
    a.ffn_act_outputs = a.expert_act_outputs = 0;
    // DeepSeek-V3 section 3.3.3 (2): with its output recomputed, the MoE SwiGLU's inputs are
    // cached in FP8 (fine-grained quantized).
    if (layout.fp8_gemm_inputs) {
      a.ffn_act_inputs *= kFp8TiledBytesPerElement / 2;
      a.expert_act_inputs *= kFp8TiledBytesPerElement / 2;
    }
  }
  if (r.has(RecomputeModule::activation)) a.ffn_act_outputs = a.expert_act_outputs = 0;
  if (r.has(RecomputeModule::experts) && moe_layer) a.expert_act_inputs = a.expert_act_outputs = 0;
  if (r.has(RecomputeModule::mlp) && !moe_layer) {
    // The FFN input is the norm's output, which the MLP's checkpoint no longer holds.
    if (!r.has(RecomputeModule::layernorm)) a.norm_outputs -= gemm_input_bytes(layout) * sbh / sequence_split(layout);
    a.ffn_act_inputs = a.ffn_act_outputs = 0;
  }
  if (r.has(RecomputeModule::moe) && moe_layer)
    a.ffn_act_inputs = a.ffn_act_outputs = a.expert_act_inputs = a.expert_act_outputs = 0;
  if (r.has(RecomputeModule::shared_experts) && moe_layer) a.ffn_act_inputs = a.ffn_act_outputs = 0;
  return a.total();
}

}  // namespace

Bytes activation_bytes_per_layer(const ModelSpec& m, int microbatch, int tensor_parallel, bool sequence_parallel,
                                 Recompute recompute) {
  return to_bytes(stored(m, false, {microbatch, tensor_parallel, sequence_parallel, recompute}, recompute, {}));
}

LayerActivations layer_activations(const ModelSpec& m, int layer, const ActivationLayout& layout) {
  return terms(m, m.is_moe_layer(layer), layout);
}

double stored_activation_bytes(const ModelSpec& m, int layer, const ActivationLayout& layout) {
  return stored(m, m.is_moe_layer(layer), layout, layout.recompute, layout.recompute_modules);
}

const std::vector<std::pair<std::string, RecomputeModule>>& recompute_module_names() {
  static const std::vector<std::pair<std::string, RecomputeModule>> names = {
      {"layernorm", RecomputeModule::layernorm},     {"core_attn", RecomputeModule::core_attn},
      {"mla_up_proj", RecomputeModule::mla_up_proj}, {"activation", RecomputeModule::activation},
      {"moe_act", RecomputeModule::moe_act},         {"experts", RecomputeModule::experts},
      {"mlp", RecomputeModule::mlp},                 {"moe", RecomputeModule::moe},
      {"shared_experts", RecomputeModule::shared_experts}};
  return names;
}

std::string recompute_text(Recompute mode, RecomputeModules modules) {
  if (mode == Recompute::full) return "full";
  if (mode == Recompute::selective) modules.add(RecomputeModule::core_attn);
  if (modules.empty()) return "no";
  if (mode == Recompute::selective && modules == RecomputeModules{}.add(RecomputeModule::core_attn)) return "selective";
  std::string out;
  for (const auto& [name, module] : recompute_module_names())
    if (modules.has(module)) out += (out.empty() ? "" : "+") + name;
  return out;
}

StateBytes state_bytes(double params_on_rank, int data_parallel, bool distributed_optimizer) {
  return zero_state_bytes(params_on_rank, data_parallel, distributed_optimizer ? 1 : 0);
}

StateBytes zero_state_bytes(double params_on_rank, int data_parallel, int zero_stage, double gradient_bytes_per_param,
                            double optimizer_bytes_per_param) {
  assert(params_on_rank >= 0 && data_parallel > 0 && zero_stage >= 0 && zero_stage <= 3 && "state of a real rank");
  const double d = data_parallel;
  return {to_bytes(kWeightBytesPerParam * params_on_rank / (zero_stage >= 3 ? d : 1)),
          to_bytes(gradient_bytes_per_param * params_on_rank / (zero_stage >= 2 ? d : 1)),
          to_bytes(optimizer_bytes_per_param * params_on_rank / (zero_stage >= 1 ? d : 1))};
}

StageMemory stage_memory(const ModelSpec& m, const ActivationLayout& layout, const StageLoad& stage) {
  const int zero = stage.zero_stage >= 0 ? stage.zero_stage : stage.distributed_optimizer ? 1 : 0;
  StateBytes state = zero_state_bytes(stage.params_on_rank, stage.data_parallel, zero, stage.gradient_bytes_per_param,
                                      stage.optimizer_bytes_per_param);
  state.weights += to_bytes(kWeightBytesPerParam * stage.gathered_params);
  // FP8 weights' 128 x 128 block scales, over every parameter (norms and the 16-bit head included:
  // an upper bound by under 0.03%).
  if (layout.fp8_gemm_inputs)
    state.weights += to_bytes(kFp8WeightScaleBytesPerParam * (stage.params_on_rank + stage.expert_params_on_rank));
  if (stage.expert_params_on_rank > 0) {
    const StateBytes experts = zero_state_bytes(stage.expert_params_on_rank, stage.expert_data_parallel, zero,
                                               stage.gradient_bytes_per_param, stage.optimizer_bytes_per_param);
    state.weights += experts.weights;
    state.gradients += experts.gradients;
    state.optimizer += experts.optimizer;
  }
  const double t = layout.tensor_parallel;
  const double sb = double(m.seq_len) * layout.microbatch;
  const double sbh = sb * m.hidden;
  const double whole_split = sequence_split(layout);

  const bool moe_model = m.moe.has_value();
  double per_microbatch = (stage.layers - stage.moe_layers) * stored(m, false, layout, layout.recompute, layout.recompute_modules) +
                          (moe_model ? stage.moe_layers * stored(m, true, layout, layout.recompute, layout.recompute_modules) : 0.0);
  per_microbatch += stage.extra_activation_bytes;
  double activations = per_microbatch * stage.in_flight_microbatches;
  auto held = [&](double chunk_peak) { return chunk_peak >= 0 ? chunk_peak : stage.in_flight_microbatches; };
  if (stage.first_stage)  // embedding dropout mask, 1 B/element
    activations += sbh / whole_split * held(stage.embedding_in_flight_microbatches);
  // final LayerNorm and output-layer inputs, then fp32 logits split by vocabulary
  const double head = 4 * sbh / whole_split + 4 * sb * m.vocab / t;
  if (stage.last_stage) activations += head * held(stage.head_in_flight_microbatches);
  if (stage.last_stage && stage.mtp_modules > 0) {
    const double g = gemm_input_bytes(layout);
    const double module = stored(m, m.is_moe_layer(m.layers - 1), layout, layout.recompute, layout.recompute_modules) +
                          (4 + 2 * g) * sbh / whole_split + head;
    activations += stage.mtp_modules * module * held(stage.head_in_flight_microbatches);
  }

  StageMemory out;
  out.weights = state.weights;
  out.gradients = state.gradients;
  out.optimizer = state.optimizer;
  out.activations = to_bytes(activations);
  if (stage.layers > 0) {
    const bool widest_moe = moe_model && stage.moe_layers > 0;
    out.recompute_workspace =
        to_bytes(stored(m, widest_moe, layout, Recompute::none, {}) -
                 stored(m, widest_moe, layout, layout.recompute, layout.recompute_modules));
  }
  out.total = out.weights + out.gradients + out.optimizer + out.activations + out.recompute_workspace;
  return out;
}

}  // namespace clustersim
