#include "workloads/serving/replica_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "topologies/user_error.hpp"
#include "workloads/model_math.hpp"

namespace clustersim {

double weight_bytes_per_param(const std::string& precision) { return is_eight_bit(precision) ? 1 : 2; }

double kv_bytes_per_token_layer(const ModelSpec& m, int tp, int dtype_bytes) {
  if (m.mla) return double(m.mla->kv_lora_rank + m.mla->qk_rope_head_dim) * dtype_bytes;
  const double kv_heads = m.kv_heads >= tp ? double(m.kv_heads) / tp : 1.0;
  return 2 * kv_heads * m.head_dim() * dtype_bytes;
}

namespace {

/// Layers of each pipeline stage: an even split, the first stages taking one more where it does not divide.
int stage_layer_count(int layers, int pp, int stage) { return layers / pp + (stage < layers % pp ? 1 : 0); }

double stage_params(const ModelSpec& m, const ServingParallel& p, int stage) {
  int first = 0;
  for (int k = 0; k < stage; ++k) first += stage_layer_count(m.layers, p.pp, k);
  double params = 0;
  for (int l = first; l < first + stage_layer_count(m.layers, p.pp, stage); ++l) {
    const LayerParameters lp = layer_parameter_count(m, l);
    // Routed experts: / ep ranks, each / expert_tp GPUs: / (tp x dp_attention); the rest / tp, a copy
    // on every attention rank.
    // Redundant experts add their copies' weights.
    const double routed = p.redundant_experts == 0 ? lp.routed_experts
                                                   : lp.routed_experts * double(m.moe->routed_experts + p.redundant_experts) / m.moe->routed_experts;
    params += p.dp_attention == 1 && p.redundant_experts == 0 ? lp.total() / p.tp
                                                              : (lp.attention + lp.ffn) / p.tp + routed / (p.tp * p.dp_attention);
  }
  const double table = double(m.vocab) * m.hidden / p.tp;  // vocabulary-parallel embedding and head
  if (stage == 0) params += table;
  if (stage == p.pp - 1 && (!m.tied_embeddings || p.pp > 1)) params += table;
  return params;
}

}  // namespace

Bytes replica_weight_bytes(const ModelSpec& m, const ServingParallel& p, double bytes_per_param) {
  const double params = std::max(stage_params(m, p, 0), stage_params(m, p, p.pp - 1));
  return Bytes(std::llround(params * bytes_per_param));
}

Bytes workspace_bytes(const ModelSpec& m, const ServingParallel& p, long tokens, long rows) {
  const double h = m.hidden;
  const double qkv = m.mla ? double(m.heads) / p.tp * (m.mla->qk_head_dim() + m.mla->v_head_dim)
                           : double(m.head_dim()) * (m.heads + 2.0 * m.kv_heads) / p.tp;
  const double gates = m.ffn == FfnType::swiglu ? 2 : 1;
  double ffn = m.ffn_hidden > 0 ? gates * m.ffn_hidden / p.tp : 0;
  if (m.moe) ffn = std::max(ffn, gates * double(m.moe->expert_ffn_hidden) * (m.moe->top_k + m.moe->shared_experts) / p.tp);
  const double per_token = 2.0 * (2 * h + qkv + ffn);
  return Bytes(std::llround(double(tokens) * per_token + double(rows) * 4.0 * std::ceil(double(m.vocab) / p.tp)));
}

ReplicaMemory plan_replica_memory(const ServingSpec& s) {
  const ModelSpec& m = s.model;
  ReplicaMemory r;
  r.usable_bytes = Bytes(std::floor(double(s.gpu.hbm_bytes) * s.kv.memory_fraction));
  r.weight_bytes = replica_weight_bytes(m, s.parallel, weight_bytes_per_param(s.precision));
  r.workspace_bytes = workspace_bytes(m, s.parallel, s.scheduler.max_batch_tokens, s.scheduler.max_batch_requests);
  r.stage_layers = stage_layer_count(m.layers, s.parallel.pp, 0);
  r.kv_bytes_per_token = kv_bytes_per_token_layer(m, s.parallel.tp, s.kv.dtype_bytes) * r.stage_layers;
  r.block_bytes = Bytes(std::llround(r.kv_bytes_per_token * s.kv.block_tokens));
  const double need = double(r.weight_bytes) + double(r.workspace_bytes) + double(r.block_bytes);
  if (need > double(r.usable_bytes)) {
    const double gib = 1024.0 * 1024 * 1024;
    throw UserError(s.file, s.parallel_line, "serving.parallel",
                    fmt::format("expected {} to fit a replica of tp {} x pp {}{} {}: its fullest GPU needs {:.2f} GiB "
                                "(weights {:.2f}, activations at the token budget {:.2f}, one KV block {:.4f}), "
                                "{:.2f} GiB over the {:.2f} GiB it may use (HBM x memory_fraction {:g})",
                                m.name, s.parallel.tp, s.parallel.pp,
                                s.parallel.dp_attention > 1 ? fmt::format(" x dp_attention {}", s.parallel.dp_attention) : "", s.gpu.name, need / gib, double(r.weight_bytes) / gib,
                                double(r.workspace_bytes) / gib, double(r.block_bytes) / gib,
                                (need - double(r.usable_bytes)) / gib, double(r.usable_bytes) / gib, s.kv.memory_fraction));
  }
  r.kv_bytes = r.usable_bytes - r.weight_bytes - r.workspace_bytes;
  r.blocks = r.kv_bytes / r.block_bytes;
  return r;
}

}  // namespace clustersim
