#pragma once
// Parameter and FLOP counts of a ModelSpec: what the compute model charges per operation and what
// MFU divides by. Pure functions of the spec.
//
// Model family. model.hpp has no field for biases or norm kind, so the FFN type stands for it:
//  - ffn: gelu   = GPT/Megatron: every linear layer has a bias; two LayerNorms per layer and a final
//                  one, each weight + bias; learned position embeddings (seq_len x hidden).
//  - ffn: swiglu = Llama: no biases; two RMSNorms per layer and a final one, weight only; rotary
//                  positions (no parameters).
//  - ffn: squared_relu = Nemotron-4: Llama's family (no biases, rotary positions) with an ungated
//                  FFN (up, squared ReLU, down). Its LayerNorms' biases are left out, as the
//                  weight-only norms are (one vector of hidden elements a norm: under 1e-6 of 340B).
// Either family adds an output head of vocab x hidden when embeddings are untied. An expert is an
// FFN of the family's type (biases included for gelu); the router has no bias. MLA adds a norm on
// each latent (query, key/value) of the family's kind, and its projections follow the bias rule.
//
// FLOPs count matrix multiplies only, 2 per multiply-add, as Narayanan et al. SC'21 do: softmax,
// norms, biases, activations, the embedding lookup and the routing top-k are free. Attention scores
// cover the full seq x seq square (no saving from the causal mask), as in Narayanan et al. and PaLM.
// MoE FLOPs assume uniform routing and no dropped tokens.
#include <optional>

#include "workloads/model.hpp"

namespace clustersim {

/// Every trainable weight of the main model, under the family convention above: DeepSeek-V3's
/// multi-token prediction modules are left out, as its 671B leaves them out (mtp_parameter_count),
/// and so is its router's balancing bias, which no gradient trains.
double parameter_count(const ModelSpec& m);

/// The weights of the mtp_depth multi-token prediction modules that are their own (DeepSeek-V3
/// report section 2.2): per module one transformer block like the model's last layer, the
/// projection M_k (2h x h), and three norms of width h (on the hidden state, on the embedding, and
/// before the shared output head); the embedding and output head are shared and not counted again.
double mtp_parameter_count(const ModelSpec& m);

/// Forward FLOPs of one multi-token prediction module on one GPU for a microbatch: its block
/// (layer_forward_flops of the last layer), the projection (2 x 2h x h per token) and one more
/// output-head pass (2 V h per token), split over tensor_parallel like the rest.
double mtp_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel);

/// The weights one token's forward pass uses: parameter_count with top_k of each MoE layer's routed
/// experts instead of all of them; the router, shared experts, attention, dense layers, the whole
/// embedding table and the head count in full. Equals parameter_count for a dense model. Publishers
/// differ on the input embedding: Mistral counts it (Mixtral 8x7B's 12.9 B), DeepSeek does not
/// (V3's 36.6 B in README_WEIGHTS.md); this counts it.
double active_parameter_count(const ModelSpec& m);

/// One layer's weights, grouped by what expert parallelism does with them.
struct LayerParameters {
  double attention = 0;       // projections, their biases, MLA's latent norms, the pre-attention norm
  double ffn = 0;             // dense FFN, or an MoE layer's router and shared experts; the pre-FFN norm
  double routed_experts = 0;  // all of an MoE layer's routed experts: what expert parallelism divides
  double total() const { return attention + ffn + routed_experts; }
};
/// Layer `layer`, 0-based (the first moe.dense_layers are dense).
LayerParameters layer_parameter_count(const ModelSpec& m, int layer);

/// Forward FLOPs of one expert's FFN on one token: 2 per multiply-add over the SwiGLU gate, up and
/// down matrices (3 h f_e multiply-adds), or GELU's up and down (2 h f_e).
double expert_ffn_flops_per_token(const ModelSpec& m);

/// Tokens one routed expert computes before dropping, when `tokens` tokens enter its MoE layer:
/// capacity_factor x tokens x top_k / routed_experts (GShard, Switch). None when dropless.
std::optional<double> expert_capacity_tokens(const ModelSpec& m, double tokens);

/// Forward FLOPs of one transformer layer on one GPU, for a microbatch of `microbatch` sequences
/// of seq_len tokens, with the layer split Megatron-style over `tensor_parallel` GPUs: heads and
/// the FFN inner sizes (dense and expert) are divided; when tensor_parallel exceeds kv_heads each
/// GPU computes a replica of one KV head. tensor_parallel must divide heads, and divide or be a
/// multiple of kv_heads. MLA's down-projections and the router are divided too, as Megatron-Core
/// runs them under sequence parallelism (each GPU on its 1/t of the tokens).
/// An MoE layer's expert FLOPs are what this microbatch's tokens ask of the experts, wherever
/// expert parallelism places them.
struct LayerFlops {
  double qkv_flops = 0;             // Q, K, V projections; MLA: both latents' down- and up-projections
  double attention_core_flops = 0;  // Q K^T scores and scores x V
  double attn_out_flops = 0;        // attention output projection
  double ffn_flops = 0;             // dense FFN; in an MoE layer the shared experts
  double router_flops = 0;          // MoE layer: routing scores, hidden x routed_experts per token
  double expert_flops = 0;          // MoE layer: tokens x top_k x expert_ffn_flops_per_token
  double total_flops() const {
    return qkv_flops + attention_core_flops + attn_out_flops + ffn_flops + router_flops + expert_flops;
  }
};
/// Layer `layer`, 0-based.
LayerFlops layer_forward_flops(const ModelSpec& m, int layer, int microbatch, int tensor_parallel);
/// Any layer of a model whose layers are all alike: dense, or MoE with no dense layers.
LayerFlops layer_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel);

/// Forward FLOPs of the output (logit) layer on one GPU, vocabulary split over tensor_parallel.
double logits_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel);

/// FLOPs of one training iteration over `global_batch` sequences, all GPUs together: backward is
/// twice forward; full recompute runs the layers' forward once more (never the logit layer).
/// Multi-token prediction modules count like layers (their block recomputed with the rest), with
/// their projection and output-head pass at 3 forwards.
/// For GELU, MHA, ffn = 4h models this is Narayanan et al.'s 96 B s l h^2 (1 + s/6h + V/16lh).
double training_flops_per_iteration(const ModelSpec& m, long global_batch, bool full_recompute);

/// Model FLOPs per trained token, PaLM's MFU numerator (Chowdhery et al. 2022, appendix B):
/// 6 N + 12 l s h, recompute excluded. Here N is the weights that multiply activations (layer
/// matmuls and the output head), not the embedding lookup, position table, biases or norms, so
/// that model_flops_per_token * B * s == training_flops_per_iteration(m, B, false) exactly. In an
/// MoE model N counts the router, the shared experts and top_k routed experts (active weights), and
/// multi-token prediction modules their block, projection and second head pass;
/// with MLA the attention term is 6 s a (d_qk + d_v) per layer, d_qk = nope + rope.
double model_flops_per_token(const ModelSpec& m);

}  // namespace clustersim
