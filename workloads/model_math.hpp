#pragma once
// Parameter and FLOP counts of a ModelSpec: what the compute model charges per operation and what
// MFU divides by. Pure functions of the spec.
//
// Model family. model.hpp has no field for biases or norm kind, so the FFN type stands for it:
//  - ffn: gelu   = GPT/Megatron: every linear layer has a bias; two LayerNorms per layer and a final
//                  one, each weight + bias; learned position embeddings (seq_len x hidden).
//  - ffn: swiglu = Llama: no biases; two RMSNorms per layer and a final one, weight only; rotary
//                  positions (no parameters).
// Either family adds an output head of vocab x hidden when embeddings are untied.
//
// FLOPs count matrix multiplies only, 2 per multiply-add, as Narayanan et al. SC'21 do: softmax,
// norms, biases, activations and the embedding lookup are free. Attention scores cover the full
// seq x seq square (no saving from the causal mask), as in Narayanan et al. and PaLM.
#include "workloads/model.hpp"

namespace clustersim {

/// Every trainable weight, under the family convention above.
double parameter_count(const ModelSpec& m);

/// Forward FLOPs of one transformer layer on one GPU, for a microbatch of `microbatch` sequences
/// of seq_len tokens, with the layer split Megatron-style over `tensor_parallel` GPUs: heads and
/// the FFN inner size are divided; when tensor_parallel exceeds kv_heads each GPU computes a
/// replica of one KV head. tensor_parallel must divide heads, and divide or be a multiple of
/// kv_heads.
struct LayerFlops {
  double qkv_flops = 0;             // Q, K, V projections
  double attention_core_flops = 0;  // Q K^T scores and scores x V
  double attn_out_flops = 0;        // attention output projection
  double ffn_flops = 0;             // both (gelu) or all three (swiglu) FFN matmuls
  double total_flops() const { return qkv_flops + attention_core_flops + attn_out_flops + ffn_flops; }
};
LayerFlops layer_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel);

/// Forward FLOPs of the output (logit) layer on one GPU, vocabulary split over tensor_parallel.
double logits_forward_flops(const ModelSpec& m, int microbatch, int tensor_parallel);

/// FLOPs of one training iteration over `global_batch` sequences, all GPUs together: backward is
/// twice forward; full recompute runs the layers' forward once more (never the logit layer).
/// For GELU, MHA, ffn = 4h models this is Narayanan et al.'s 96 B s l h^2 (1 + s/6h + V/16lh).
double training_flops_per_iteration(const ModelSpec& m, long global_batch, bool full_recompute);

/// Model FLOPs per trained token, PaLM's MFU numerator (Chowdhery et al. 2022, appendix B):
/// 6 N + 12 l s h, recompute excluded. Here N is the weights that multiply activations (layer
/// matmuls and the output head), not the embedding lookup, position table, biases or norms, so
/// that model_flops_per_token * B * s == training_flops_per_iteration(m, B, false) exactly.
double model_flops_per_token(const ModelSpec& m);

}  // namespace clustersim
