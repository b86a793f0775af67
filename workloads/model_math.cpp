#include "workloads/model_math.hpp"

#include <cassert>

namespace clustersim {

namespace {
bool gpt_style(const ModelSpec& m) { return m.ffn == FfnType::gelu; }

/// Width of K (or V) as one layer's weights see it: kv_heads of head_dim each.
double kv_width(const ModelSpec& m) { return double(m.kv_heads) * m.head_dim(); }

/// Matmuls in the FFN per token and per hidden x ffn weight block: up + down, or gate + up + down.
double ffn_matrices(const ModelSpec& m) { return m.ffn == FfnType::gelu ? 2.0 : 3.0; }
}  // namespace

double parameter_count(const ModelSpec& m) {
  const double h = m.hidden, f = m.ffn_hidden, v = m.vocab, s = m.seq_len;
  const double qkv_out = h + 2 * kv_width(m);  // Q is h wide (heads * head_dim == hidden)
  double layer = h * qkv_out + h * h + ffn_matrices(m) * h * f;
  double outside = v * h;  // input embedding; it is also the output head when tied
  if (!m.tied_embeddings) outside += v * h;
  if (gpt_style(m)) {
    const double biases = qkv_out + h + f + h;  // QKV, attention output, FFN up, FFN down
    const double layer_norms = 2 * 2 * h;       // two LayerNorms, weight + bias
    layer += biases + layer_norms;
    outside += 2 * h + s * h;  // final LayerNorm, learned positions
  } else {
    layer += 2 * h;   // two RMSNorms, weight only
    outside += h;     // final RMSNorm
  }
  return m.layers * layer + outside;
}

// Per token and layer, forward, at tensor_parallel 1 (2 FLOPs per multiply-add):
//   QKV 2h(h + 2 kv_width), scores Q K^T 2sh and scores x V 2sh (every head attends to all s keys),
//   output projection 2h^2, FFN 2 * ffn_matrices * h * f.
// With MHA and f = 4h that is 24 h^2 + 4 s h, Narayanan et al.'s per-layer count; the logit layer
// adds 2 V h. Tensor parallelism divides the query heads and the FFN inner size.
LayerFlops layer_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel) {
  assert(tensor_parallel > 0 && m.heads % tensor_parallel == 0 && "tensor parallel size divides the heads");
  assert((m.kv_heads % tensor_parallel == 0 || tensor_parallel % m.kv_heads == 0) &&
         "tensor parallel size divides kv_heads or replicates whole KV heads");
  const double tokens = double(microbatch) * m.seq_len;
  const double h = m.hidden, hd = m.head_dim(), t = tensor_parallel;
  const double q_heads_per_gpu = m.heads / t;
  const double kv_heads_per_gpu = m.kv_heads >= tensor_parallel ? m.kv_heads / t : 1.0;
  LayerFlops out;
  out.qkv_flops = 2 * tokens * h * hd * (q_heads_per_gpu + 2 * kv_heads_per_gpu);
  out.attention_core_flops = 2 * 2 * tokens * m.seq_len * hd * q_heads_per_gpu;
  out.attn_out_flops = 2 * tokens * hd * q_heads_per_gpu * h;
  out.ffn_flops = 2 * ffn_matrices(m) * tokens * h * m.ffn_hidden / t;
  return out;
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
  const double per_sequence = m.layers * layer_passes * layer_forward_flops(m, 1, 1).total_flops() +
                              3.0 * logits_forward_flops(m, 1, 1);
  return double(global_batch) * per_sequence;
}

double model_flops_per_token(const ModelSpec& m) {
  return training_flops_per_iteration(m, 1, false) / m.seq_len;
}

}  // namespace clustersim
