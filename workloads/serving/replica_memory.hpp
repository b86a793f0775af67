#pragma once
// A serving replica's GPU memory: the weights of its fullest GPU (from model_math's per-layer
// parameter counts, as the training memory model takes them), the activations of one iteration's
// forward at the token budget, and the paged KV cache in what is left of the memory the engine may
// use (HBM x memory_fraction), in blocks of block_tokens tokens (vLLM's PagedAttention).
//
// KV bytes per token per layer on one GPU, by attention kind:
//   MHA / GQA: 2 (K and V) x max(1, kv_heads / tp) x head_dim x dtype bytes (tp > kv_heads
//              replicates a KV head on tp / kv_heads ranks, as vLLM and Megatron-Core do);
//   MLA:       (kv_lora_rank + qk_rope_head_dim) x dtype bytes, the latent and the shared rope key,
//              whole on every tensor-parallel rank (DeepSeek-V2 section 2.1.4; vLLM's MLA cache).
// FP8 KV (kv_cache.dtype: fp8) halves both. A block holds block_tokens tokens of every layer the
// GPU holds; each GPU of a replica holds its shard of every block, so the replica has as many
// blocks as its fullest GPU. Under data-parallel attention each attention rank has that many
// blocks of its own (the routed experts split over every rank's GPUs, the rest copied on each).
#include "topologies/units.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim {

struct ReplicaMemory {
  Bytes usable_bytes = 0;      // HBM x memory_fraction, per GPU
  Bytes weight_bytes = 0;      // the fullest GPU's weights
  Bytes workspace_bytes = 0;   // one iteration's transient activations at the token budget
  Bytes kv_bytes = 0;          // what is left for the KV cache
  double kv_bytes_per_token = 0;  // on the fullest GPU, all its layers
  Bytes block_bytes = 0;
  long blocks = 0;             // of the replica, or of each attention rank (dp_attention > 1)
  int stage_layers = 0;        // layers on the fullest pipeline stage
};

/// 1 byte per weight under an 8-bit precision (FP8 / MX inference weights), else 2.
double weight_bytes_per_param(const std::string& precision);
/// KV cache bytes of one token in one layer on one GPU (see above).
double kv_bytes_per_token_layer(const ModelSpec& m, int tp, int dtype_bytes);
/// The weights of the fullest GPU of a replica (first or last pipeline stage: embedding, head).
Bytes replica_weight_bytes(const ModelSpec& m, const ServingParallel& p, double bytes_per_param);
/// Transient activations of one forward at `tokens` tokens and `rows` sampled rows: per token the
/// layer input and residual (2 h), the QKV output and the FFN's widest intermediate (SwiGLU's gate
/// and up, or the experts' top_k of them), over tp where split, in 2 bytes; the logits of the rows
/// in fp32 (4 x vocab / tp).
Bytes workspace_bytes(const ModelSpec& m, const ServingParallel& p, long tokens, long rows);

/// The replica's memory; a model that does not fit (weights and workspace above the usable memory,
/// or room for less than one block) is a UserError at serving.parallel saying by how many GiB.
ReplicaMemory plan_replica_memory(const ServingSpec& s);

}  // namespace clustersim
