#pragma once
// The time of one serving iteration of a replica: a batch of prefill chunks and decode steps run as
// one forward over all their tokens (continuous batching), timed by the compute model's roofline
// (workloads/compute_model.hpp) op by op and the communication by comm_cost.hpp:
//  - per layer, the linear ops (projections, FFN or experts, norms, activations, residuals) over all
//    T tokens of the batch: layer_forward_ops' ops without its attention core. Prefill-sized T makes
//    them compute-bound; a decode batch's few tokens leave them bound by reading the weights;
//  - the attention core by phase: one op per prefill chunk (c new tokens against c + context keys,
//    2 (qk + v) q_heads c (context + c / 2) FLOPs, the catalog's attention curve at the key count,
//    reading the chunk's Q and O and its keys' KV), and one batched op for every decode query
//    (reading each request's whole KV cache: memory-bound);
//  - TP: two all-reduces of T x hidden x 2 B per layer; an MoE layer with ep > 1 replaces the
//    second by a dispatch and a combine all-to-all of T x top_k x hidden x 2 B / ep per GPU;
//  - data-parallel attention (time_ranks): each attention rank's own layers (attention, norms,
//    router, shared experts, its TP all-reduces) over its own tokens T_k, and its all-to-alls of
//    T_k x top_k x hidden x 2 B / (ep / dp_attention) a GPU; the slowest rank's, plus the routed
//    experts over the sum of T_k; with two_batch_overlap, twice the longer of a half batch's
//    compute and its all-to-alls (a prefilling batch's compute slowed by the SMs DeepEP's normal
//    kernels hold while they run);
//  - PP: every stage's layers, with a send of T x hidden x 2 B between stages (the loop pipelines
//    batches through the stages: simulator/serve_sim.cpp);
//  - the output layer over the rows that sample a token;
//  - the host's time for the batch's requests (HostSpec), after the forward or overlapped with it.
// Under an 8-bit precision, GEMMs read 1-byte weights. MoE expert GEMMs read the weights of every
// local expert the batch's rows reach: E (1 - (1 - 1/E)^rows) of the E = routed / ep local experts
// under uniform routing. MLA decodes in the latent (DeepSeek-V2's absorbed projections: keys of
// kv_lora_rank + qk_rope_head_dim, values of kv_lora_rank), and prefills with the full head widths.
// The linear part depends on T alone, so it is cached per T: exact, not bucketed.
#include <unordered_map>
#include <vector>

#include "topologies/cluster.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/serving/comm_cost.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim {

struct PrefillChunk {
  long context_tokens = 0;  // already in the KV cache
  long tokens = 0;          // computed now
};

struct BatchShape {
  std::vector<PrefillChunk> chunks;
  long decode_requests = 0;
  double decode_context_tokens = 0;  // KV tokens every decode request reads, summed
  int decode_query_tokens = 1;       // per decode request: 1, or speculative tokens + 1 to verify
  long sampled_rows = 0;             // rows of the output layer: decode queries and finished prompts
  long tokens() const;
};

struct IterationTime {
  Seconds total_s = 0;
  Seconds linear_s = 0, attention_s = 0, communication_s = 0, logits_s = 0;
  Seconds host_s = 0;  // the engine's CPU time for the batch (serving_spec.hpp, HostSpec)
  Seconds all_to_all_s = 0;  // time_ranks: the MoE dispatch and combine (under two-batch overlap, both halves')
};

class IterationCost {
 public:
  /// `model` is the target, or a draft model on the same replica's GPUs; `gpus` the replica's GPUs in
  /// rank order (tensor-parallel rank fastest; empty: GPUs 0 onwards). Computes on `s.gpu`.
  IterationCost(const ServingSpec& s, const ModelSpec& model, ServingComm& comm, const std::vector<int>& gpus = {});
  IterationTime time(const BatchShape& batch);
  /// Under data-parallel attention (serving.parallel.dp_attention > 1): one step of every attention
  /// rank, rank k running ranks[k] (empty: idle), the experts over all their tokens. time(batch) is
  /// then one busy rank beside idle ones.
  IterationTime time_ranks(const std::vector<BatchShape>& ranks);
  int layers() const { return model_.layers; }

 private:
  /// One layer's linear ops (and their TP / EP communication, PP sends) over `tokens` tokens, dense
  /// and MoE layers each times their count, over the whole model (every stage).
  Seconds linear_s(long tokens);
  Seconds communication_s(long tokens);
  // Their parts, which data-parallel attention takes apart (a rank's own tokens, all ranks' experts).
  Seconds rank_linear_s(long tokens);
  Seconds rank_communication_s(long tokens);
  Seconds expert_linear_s(long tokens);
  Seconds dispatch_combine_s(long tokens);  // cached per token count
  Seconds dispatch_combine_uncached_s(long tokens);
  Seconds logits_s(long rows) const;
  Seconds host_s(const BatchShape& batch) const;
  struct RankStep {
    IterationTime slowest;  // the slowest rank's parts, the experts in its linear_s
    Seconds compute_s = 0, all_to_all_s = 0;
  };
  RankStep slowest_rank(const std::vector<BatchShape>& ranks);
  static BatchShape half_of(const BatchShape& b);
  Seconds attention_s(const BatchShape& batch) const;
  void reach_local_experts(std::vector<ComputeOp>& experts, double rows, double bytes_per_param) const;
  Seconds ops_s(const std::vector<ComputeOp>& ops) const;
  const ServingSpec& s_;
  ModelSpec model_;
  ServingComm& comm_;
  std::vector<int> tp_group_;
  std::vector<int> ep_group_;
  std::vector<int> stage_first_gpu_;
  double kv_bytes_token_layer_ = 0;
  std::unordered_map<long, Seconds> linear_cache_, comm_cache_, expert_cache_, rank_comm_cache_, a2a_cache_;
};

}  // namespace clustersim
