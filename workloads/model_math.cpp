#include "workloads/model_math.hpp"

#include <cassert>

namespace clustersim {

namespace {
bool gpt_style(const ModelSpec& m) { return m.ffn == FfnType::gelu; }

/// Width of K (or V) as one layer's weights see it: kv_heads of head_dim each.
double kv_width(const ModelSpec& m) { return double(m.kv_heads) * m.head_dim(); }

/// Matmuls in the FFN per token and per hidden x ffn weight block: up + down, or gate + up + down.
double ffn_matrices(const ModelSpec& m) { return m.ffn == FfnType::swiglu ? 3.0 : 2.0; }

/// A norm over `width` elements: LayerNorm weight + bias, or RMSNorm weight.
double norm_parameters(const ModelSpec& m, double width) { return gpt_style(m) ? 2 * width : width; }

/// One FFN (dense, or one expert) of inner size f, with its up and down biases for gelu.
double ffn_parameters(const ModelSpec& m, double f) {
  const double h = m.hidden;
  return ffn_matrices(m) * h * f + (gpt_style(m) ? f + h : 0.0);
}

/// Attention projections, their biases and any latent norms (not the layer's input norm).
double attention_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  if (!m.mla) {
    const double qkv_out = h + 2 * kv_width(m);  // Q is h wide (heads * head_dim == hidden)
    return h * qkv_out + h * h + (gpt_style(m) ? qkv_out + h : 0.0);
  }
  const MlaSpec& a = *m.mla;
  const double heads = m.heads, q_lat = a.q_lora_rank, kv_lat = a.kv_lora_rank;
  // Output widths of the five projections: query down and up, key/value down (the latent plus the
  // shared rope key), key/value up (per head: the nope key and the value), output.
  const double q_up_out = heads * a.qk_head_dim();
  const double kv_down_out = kv_lat + a.qk_rope_head_dim;
  const double kv_up_out = heads * (a.qk_nope_head_dim + a.v_head_dim);
  const double weights = h * q_lat + q_lat * q_up_out + h * kv_down_out + kv_lat * kv_up_out + heads * a.v_head_dim * h;
  const double biases = gpt_style(m) ? q_lat + q_up_out + kv_down_out + kv_up_out + h : 0.0;
  return weights + biases + norm_parameters(m, q_lat) + norm_parameters(m, kv_lat);
}

/// Embeddings, output head, final norm and (gpt) learned positions.
double outside_parameters(const ModelSpec& m) {
  const double h = m.hidden, v = m.vocab, s = m.seq_len;
  double outside = v * h;  // input embedding; it is also the output head when tied
  if (!m.tied_embeddings) outside += v * h;
  outside += norm_parameters(m, h);    // final norm
  if (gpt_style(m)) outside += s * h;  // learned positions
  return outside;
}

/// Sum over layers, counting `routed_counted` of each MoE layer's routed experts.
double parameters_with_routed(const ModelSpec& m, double routed_counted) {
  double layers = 0;
  const int dense = m.layers - m.moe_layer_count();
  if (dense > 0) layers += dense * layer_parameter_count(m, 0).total();
  if (m.moe_layer_count() > 0) {
    const LayerParameters moe = layer_parameter_count(m, m.layers - 1);
    const double routed = routed_counted * ffn_parameters(m, m.moe->expert_ffn_hidden);
    layers += m.moe_layer_count() * (moe.attention + moe.ffn + routed);
  }
  return layers + outside_parameters(m);
}
}  // namespace

LayerParameters layer_parameter_count(const ModelSpec& m, int layer) {
  assert(layer >= 0 && layer < m.layers && "layer index within the model");
  const double h = m.hidden;
  LayerParameters out;
  out.attention = attention_parameters(m) + norm_parameters(m, h);
  if (!m.is_moe_layer(layer)) {
    out.ffn = ffn_parameters(m, m.ffn_hidden) + norm_parameters(m, h);
    return out;
  }
  const MoeSpec& e = *m.moe;
  const double expert = ffn_parameters(m, e.expert_ffn_hidden);
  out.ffn = h * e.routed_experts + e.shared_experts * expert + norm_parameters(m, h);
  out.routed_experts = e.routed_experts * expert;
  return out;
}

/// An encoder's layers and its projection to the language model's width (no embedding table).
double encoder_parameters(const ModelSpec& m) {
  if (!m.encoder) return 0;
  const ModelSpec e = encoder_model(m);
  double params = 0;
  for (int l = 0; l < e.layers; ++l) params += layer_parameter_count(e, l).total();
  return params + double(e.hidden) * m.hidden;
}

double parameter_count(const ModelSpec& m) {
  return parameters_with_routed(m, m.moe ? m.moe->routed_experts : 0) + encoder_parameters(m);
}

double mtp_parameter_count(const ModelSpec& m) {
  const double h = m.hidden;
  return m.mtp_depth * (layer_parameter_count(m, m.layers - 1).total() + 2 * h * h + 3 * norm_parameters(m, h));
}

double mtp_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel) {
  const double tokens = double(microbatch) * m.seq_len, h = m.hidden;
  return layer_forward_flops(m, m.layers - 1, microbatch, tensor_parallel).total_flops() +
         2 * tokens * 2 * h * h / tensor_parallel + logits_forward_flops(m, microbatch, tensor_parallel);
}

double active_parameter_count(const ModelSpec& m) {
  return parameters_with_routed(m, m.moe ? m.moe->top_k : 0) + encoder_parameters(m);
}

double expert_ffn_flops_per_token(const ModelSpec& m) {
  assert(m.moe && "the model has experts");
  return 2 * ffn_matrices(m) * m.hidden * double(m.moe->expert_ffn_hidden);
}

std::optional<double> expert_capacity_tokens(const ModelSpec& m, double tokens) {
  assert(m.moe && "the model has experts");
  if (!m.moe->capacity_factor) return std::nullopt;
  return *m.moe->capacity_factor * tokens * m.moe->top_k / m.moe->routed_experts;
}

// Per token and layer, forward, at tensor_parallel 1 (2 FLOPs per multiply-add):
//   QKV 2h(h + 2 kv_width), scores Q K^T 2sh and scores x V 2sh (every head attends to all s keys),
//   output projection 2h^2, FFN 2 * ffn_matrices * h * f.
// With MHA and f = 4h that is 24 h^2 + 4 s h, Narayanan et al.'s per-layer count; the logit layer
// adds 2 V h. Tensor parallelism divides the query heads and the FFN inner size.
// MLA: twice each projection's weights (as in attention_parameters), scores 2 s a d_qk and
// scores x V 2 s a d_v. An MoE layer: router 2 h E, shared experts and top_k routed experts each
// an FFN of expert_ffn_hidden.
LayerFlops layer_forward_flops(const ModelSpec& m, int layer, int microbatch, int tensor_parallel) {
  assert(layer >= 0 && layer < m.layers && "layer index within the model");
  assert(tensor_parallel > 0 && m.heads % tensor_parallel == 0 && "tensor parallel size divides the heads");
  assert((m.kv_heads % tensor_parallel == 0 || tensor_parallel % m.kv_heads == 0) &&
         "tensor parallel size divides kv_heads or replicates whole KV heads");
  const double tokens = double(microbatch) * m.seq_len;
  const double h = m.hidden, t = tensor_parallel;
  const double q_heads_per_gpu = m.heads / t;
  LayerFlops out;
  if (!m.mla) {
    const double hd = m.head_dim();
    const double kv_heads_per_gpu = m.kv_heads >= tensor_parallel ? m.kv_heads / t : 1.0;
    out.qkv_flops = 2 * tokens * h * hd * (q_heads_per_gpu + 2 * kv_heads_per_gpu);
    out.attention_core_flops = 2 * 2 * tokens * m.seq_len * hd * q_heads_per_gpu;
    out.attn_out_flops = 2 * tokens * hd * q_heads_per_gpu * h;
  } else {
    const MlaSpec& a = *m.mla;
    const double q_lat = a.q_lora_rank, kv_lat = a.kv_lora_rank;
    const double down = h * (q_lat + kv_lat + a.qk_rope_head_dim) / t;
    const double up = q_heads_per_gpu * (q_lat * a.qk_head_dim() + kv_lat * (a.qk_nope_head_dim + a.v_head_dim));
    out.qkv_flops = 2 * tokens * (down + up);
    out.attention_core_flops = 2 * tokens * m.seq_len * q_heads_per_gpu * (a.qk_head_dim() + a.v_head_dim);
    out.attn_out_flops = 2 * tokens * q_heads_per_gpu * a.v_head_dim * h;
  }
  if (!m.is_moe_layer(layer)) {
    out.ffn_flops = 2 * ffn_matrices(m) * tokens * h * m.ffn_hidden / t;
    return out;
  }
  const MoeSpec& e = *m.moe;
  const double expert = expert_ffn_flops_per_token(m);
  out.ffn_flops = e.shared_experts * tokens * expert / t;
  out.router_flops = 2 * tokens * h * e.routed_experts / t;
  out.expert_flops = e.top_k * tokens * expert / t;
  return out;
}

LayerFlops layer_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel) {
  assert((!m.moe || m.moe->dense_layers == 0) && "every layer alike: use the overload with a layer index");
  return layer_forward_flops(m, 0, microbatch, tensor_parallel);
}

double logits_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel) {
  assert(tensor_parallel > 0 && "tensor parallel size is positive");
  return 2.0 * microbatch * m.seq_len * m.hidden * double(m.vocab) / tensor_parallel;
}

// Backward costs twice forward (gradients of activations and of weights, one matmul each), so one
// pass is 3 forwards; Megatron's full recompute repeats the layers' forward, not the logit layer's.
// With 24 h^2 + 4 s h per token and layer this gives B s l (24 h^2 + 4 s h) * 4 + B s 2 V h * 3
// = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), Narayanan et al.'s formula term for term.
double training_flops_per_iteration(const ModelSpec& m, long global_batch, bool full_recompute) {
  const double layer_passes = full_recompute ? 4.0 : 3.0;
  const int moe_layers = m.moe_layer_count(), dense_layers = m.layers - moe_layers;
  double layers = 0;  // dense layers first, then MoE layers: each kind is alike
  if (dense_layers > 0) layers += dense_layers * layer_passes * layer_forward_flops(m, 0, 1, 1).total_flops();
  if (moe_layers > 0) layers += moe_layers * layer_passes * layer_forward_flops(m, m.layers - 1, 1, 1).total_flops();
  double per_sequence = layers + 3.0 * logits_forward_flops(m, 1, 1);
  if (m.mtp_depth > 0) {
    const double block = layer_forward_flops(m, m.layers - 1, 1, 1).total_flops();
    per_sequence += m.mtp_depth * (layer_passes * block + 3.0 * (mtp_forward_flops(m, 1, 1) - block));
  }
  if (m.encoder) {  // the encoder's layers (recomputed like the rest) and its projection
    const ModelSpec e = encoder_model(m);
    per_sequence += e.layers * layer_passes * layer_forward_flops(e, 0, 1, 1).total_flops() +
                    3.0 * 2.0 * e.seq_len * double(e.hidden) * m.hidden;
  }
  return double(global_batch) * per_sequence;
}

double model_flops_per_token(const ModelSpec& m) {
  return training_flops_per_iteration(m, 1, false) / m.seq_len;
}

}  // namespace clustersim
