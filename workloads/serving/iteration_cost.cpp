#include "workloads/serving/iteration_cost.hpp"

#include <algorithm>
#include <cmath>

#include "collectives/algo_deepep.hpp"
#include "workloads/serving/replica_memory.hpp"

namespace clustersim {

namespace {

constexpr double kActivationBytes = 2;

/// The model seen as one sequence of `tokens` tokens: layer_forward_ops' GEMMs then cover every
/// token of the batch once.
ModelSpec as_batch(const ModelSpec& m, long tokens) {
  ModelSpec b = m;
  b.seq_len = static_cast<int>(tokens);
  return b;
}

std::vector<ComputeOp> without_attention_core(std::vector<ComputeOp> ops) {
  std::erase_if(ops, [](const ComputeOp& op) { return op.attention_core; });
  return ops;
}

/// 8-bit weights: a GEMM's k x n weight is read in one byte, not two (its activations keep two).
void weights_in(std::vector<ComputeOp>& ops, double bytes_per_param) {
  if (bytes_per_param >= kActivationBytes) return;
  for (ComputeOp& op : ops)
    if (op.kind == ComputeKind::gemm && !op.keeps_16bit)
      op.hbm_bytes -= Bytes((kActivationBytes - bytes_per_param) * double(op.shape.k) * double(op.shape.n));
}

}  // namespace

/// A grouped GEMM over `rows` token-expert pairs reads every local expert they reach, not one
/// expert's weights: E (1 - (1 - 1/E)^rows) of the E = (routed + redundant) / ep local experts.
void IterationCost::reach_local_experts(std::vector<ComputeOp>& experts, double rows, double bytes_per_param) const {
  const double local = double(model_.moe->routed_experts + s_.parallel.redundant_experts) / s_.parallel.ep;
  const double reached = local * (1 - std::pow(1 - 1 / local, rows));
  for (ComputeOp& op : experts)
    if (op.kind == ComputeKind::gemm)
      op.hbm_bytes += Bytes(std::max(0.0, reached - 1) * bytes_per_param * double(op.shape.k) * double(op.shape.n));
}

long BatchShape::tokens() const {
  long t = decode_requests * decode_query_tokens;
  for (const PrefillChunk& c : chunks) t += c.tokens;
  return t;
}

IterationCost::IterationCost(const ServingSpec& s, const ModelSpec& model, ServingComm& comm, const std::vector<int>& gpus)
    : s_(s), model_(model), comm_(comm) {
  const ServingParallel& p = s.parallel;
  const auto gpu = [&](int rank) { return gpus.empty() ? rank : gpus[std::size_t(rank)]; };
  for (int k = 0; k < p.tp; ++k) tp_group_.push_back(gpu(k));
  for (int k = 0; k < p.ep; ++k) ep_group_.push_back(gpu(k * p.expert_tp()));
  for (int k = 0; k < p.pp; ++k) stage_first_gpu_.push_back(gpu(k * p.tp));
  kv_bytes_token_layer_ = kv_bytes_per_token_layer(model_, p.tp, s.kv.dtype_bytes);
}

Seconds IterationCost::ops_s(const std::vector<ComputeOp>& ops) const {
  Seconds t = 0;
  for (const ComputeOp& op : ops) t += op_time(s_.gpu, s_.precision, op);
  return t;
}

Seconds IterationCost::linear_s(long tokens) { return rank_linear_s(tokens) + expert_linear_s(tokens); }

Seconds IterationCost::communication_s(long tokens) {
  if (tokens <= 0) return 0;
  if (auto it = comm_cache_.find(tokens); it != comm_cache_.end()) return it->second;
  const ServingParallel& p = s_.parallel;
  const double activations = double(tokens) * model_.hidden * kActivationBytes;
  Seconds t = rank_communication_s(tokens);
  for (int k = 0; k + 1 < p.pp; ++k) t += comm_.transfer_s(stage_first_gpu_[k], stage_first_gpu_[k + 1], activations);
  comm_cache_.emplace(tokens, t);
  return t;
}

IterationTime IterationCost::time(const BatchShape& batch) {
  if (s_.parallel.dp_attention > 1) return time_ranks({batch});
  IterationTime out;
  const long tokens = batch.tokens();
  out.linear_s = linear_s(tokens);
  out.communication_s = communication_s(tokens);
  out.attention_s = attention_s(batch);
  out.logits_s = logits_s(batch.sampled_rows);
  const Seconds gpu_s = out.linear_s + out.attention_s + out.communication_s + out.logits_s;
  out.host_s = host_s(batch);
  out.total_s = s_.host.overlapped ? std::max(gpu_s, out.host_s) : gpu_s + out.host_s;
  return out;
}

/// The output layer over the rows that sample a token.
Seconds IterationCost::logits_s(long rows) const {
  return rows > 0 ? op_time(s_.gpu, s_.precision, logits_forward_op(as_batch(model_, rows), 1, s_.parallel.tp)) : 0;
}

/// The engine's CPU time for the batch's requests (serving.host), 0 when none is declared.
Seconds IterationCost::host_s(const BatchShape& batch) const {
  return s_.host.declared ? s_.host.time_s(long(batch.chunks.size()) + batch.decode_requests) : 0;
}

Seconds IterationCost::attention_s(const BatchShape& batch) const {
  const ModelSpec& m = model_;
  const double q_heads = double(m.heads) / s_.parallel.tp;
  Seconds attention = 0;
  for (const PrefillChunk& c : batch.chunks) {
    const double qk = m.mla ? m.mla->qk_head_dim() : m.head_dim(), v = m.mla ? m.mla->v_head_dim : m.head_dim();
    ComputeOp op;
    op.name = "attention.prefill";
    op.kind = ComputeKind::attention;
    op.shape = {long(q_heads), c.context_tokens + c.tokens, long(qk)};
    op.flops = 2 * q_heads * (qk + v) * double(c.tokens) * (double(c.context_tokens) + double(c.tokens) / 2);
    op.hbm_bytes = Bytes(kActivationBytes * double(c.tokens) * q_heads * (qk + v) +
                         kv_bytes_token_layer_ * double(c.context_tokens + c.tokens));
    attention += op_time(s_.gpu, s_.precision, op);
  }
  if (batch.decode_requests > 0) {
    const double qk = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim : m.head_dim();
    const double v = m.mla ? m.mla->kv_lora_rank : m.head_dim();
    const double queries = double(batch.decode_requests) * batch.decode_query_tokens;
    const double keys = batch.decode_context_tokens * batch.decode_query_tokens;  // each query reads its request's keys
    ComputeOp op;
    op.name = "attention.decode";
    op.kind = ComputeKind::attention;
    op.shape = {long(q_heads), std::max(1L, std::lround(batch.decode_context_tokens / double(batch.decode_requests))), long(qk)};
    op.flops = 2 * q_heads * (qk + v) * keys;
    op.hbm_bytes = Bytes(kActivationBytes * queries * q_heads * (qk + v) + kv_bytes_token_layer_ * batch.decode_context_tokens);
    attention += op_time(s_.gpu, s_.precision, op);
  }
  return attention * m.layers;
}

// Data-parallel attention: each rank's own layers beside the experts, the experts over every rank's
// tokens. The MoE all-to-all joins the ranks at every layer, and each rank's share of a layer is
// the same fraction of its whole forward, so the replica's forward is its slowest rank's own work
// plus the experts'. With two-batch overlap each rank runs its batch as two halves, one half's
// all-to-alls beside the other's compute, layer after layer: a layer takes twice the longer of a
// half's compute and a half's all-to-alls. DeepEP's normal kernels, which SGLang runs for a batch
// that prefills, hold their SMs (DeepEpKernel::sms, 20) while they communicate, so the compute beside
// them runs on the rest: of a half's compute C beside its all-to-alls A, A (1 - share) is done by
// the time they end and the rest at full speed, a half taking max(A, C + share x A). Its
// low-latency kernels, which decode batches run, receive through a hook and hold no SM meanwhile
// (DeepEP's README; the SGLang blog of 2025-05-05 gives it as why overlap pays in decode).
IterationTime IterationCost::time_ranks(const std::vector<BatchShape>& ranks) {
  IterationTime out;
  if (s_.host.declared)  // every rank's engine plans, samples and processes its own batch beside the others
    for (const BatchShape& batch : ranks)
      out.host_s = std::max(out.host_s, host_s(batch));
  Seconds gpu_s = 0;
  if (!s_.parallel.two_batch_overlap) {
    const RankStep step = slowest_rank(ranks);
    out.linear_s = step.slowest.linear_s;
    out.attention_s = step.slowest.attention_s;
    out.communication_s = step.slowest.communication_s;
    out.logits_s = step.slowest.logits_s;
    out.all_to_all_s = step.all_to_all_s;
    gpu_s = step.compute_s + step.all_to_all_s;
  } else {
    std::vector<BatchShape> halves;
    for (const BatchShape& b : ranks) halves.push_back(half_of(b));
    const RankStep half = slowest_rank(halves);
    out.linear_s = 2 * half.slowest.linear_s;
    out.attention_s = 2 * half.slowest.attention_s;
    out.communication_s = 2 * half.slowest.communication_s;
    out.logits_s = 2 * half.slowest.logits_s;
    out.all_to_all_s = 2 * half.all_to_all_s;
    const bool prefills = std::any_of(ranks.begin(), ranks.end(), [](const BatchShape& b) { return !b.chunks.empty(); });
    const double held = s_.parallel.deepep && prefills ? s_.gpu.sm_share(DeepEpKernel{}.sms) : 0;
    gpu_s = 2 * std::max(half.all_to_all_s, half.compute_s + held * half.all_to_all_s);
  }
  out.total_s = s_.host.overlapped ? std::max(gpu_s, out.host_s) : gpu_s + out.host_s;
  return out;
}

/// The larger half of a rank's batch: half its decode requests (and their keys), half of each
/// prefill chunk, half its sampled rows, each rounded up.
BatchShape IterationCost::half_of(const BatchShape& b) {
  BatchShape h;
  for (const PrefillChunk& c : b.chunks) h.chunks.push_back({c.context_tokens, (c.tokens + 1) / 2});
  h.decode_requests = (b.decode_requests + 1) / 2;
  h.decode_context_tokens = b.decode_requests > 0 ? b.decode_context_tokens * double(h.decode_requests) / double(b.decode_requests) : 0;
  h.decode_query_tokens = b.decode_query_tokens;
  h.sampled_rows = (b.sampled_rows + 1) / 2;
  return h;
}

/// One step of every rank, no overlap: the slowest rank's own compute (its layers without the
/// routed experts, its TP all-reduces, attention, output layer) and all-to-alls, the experts over
/// all the ranks' tokens added to the compute.
IterationCost::RankStep IterationCost::slowest_rank(const std::vector<BatchShape>& ranks) {
  RankStep out;
  Seconds slowest = -1;
  long tokens = 0;
  for (const BatchShape& batch : ranks) {
    const long t = batch.tokens();
    tokens += t;
    IterationTime r;
    r.linear_s = rank_linear_s(t);
    r.communication_s = rank_communication_s(t);
    r.attention_s = attention_s(batch);
    r.logits_s = logits_s(batch.sampled_rows);
    const Seconds a2a = t > 0 ? model_.moe_layer_count() * dispatch_combine_s(t) : 0;
    const Seconds gpu_s = r.linear_s + r.attention_s + r.communication_s + r.logits_s;
    if (gpu_s > slowest) {
      slowest = gpu_s;
      out.slowest = r;
      out.all_to_all_s = a2a;
      out.compute_s = gpu_s - a2a;
    }
  }
  const Seconds experts = expert_linear_s(tokens);
  out.slowest.linear_s += experts;
  out.compute_s += experts;
  return out;
}

/// Every layer's ops but the routed experts (attention projections, norms, dense FFNs, the router
/// and shared experts) over `tokens` tokens at tp: the replica's, or one attention rank's.
Seconds IterationCost::rank_linear_s(long tokens) {
  if (tokens <= 0) return 0;
  if (auto it = linear_cache_.find(tokens); it != linear_cache_.end()) return it->second;
  const ServingParallel& p = s_.parallel;
  const ModelSpec b = as_batch(model_, tokens);
  const double wb = weight_bytes_per_param(s_.precision);
  const int moe_layers = model_.moe_layer_count(), dense_layers = model_.layers - moe_layers;
  Seconds t = 0;
  if (dense_layers > 0) {
    std::vector<ComputeOp> ops = without_attention_core(layer_forward_ops(b, 1, p.tp, false));
    weights_in(ops, wb);
    t += dense_layers * ops_s(ops);
  }
  if (moe_layers > 0) {
    MoeLayerOps layer = moe_layer_forward_ops(b, 1, p.tp, false, AttentionKernel::flash, 0);
    std::vector<ComputeOp> shared = without_attention_core(layer.before_dispatch);
    shared.insert(shared.end(), layer.after_combine.begin(), layer.after_combine.end());
    weights_in(shared, wb);
    t += moe_layers * ops_s(shared);
  }
  linear_cache_.emplace(tokens, t);
  return t;
}

/// The routed experts of every MoE layer over `tokens` tokens (of all the attention ranks): rows =
/// tokens x top_k / ep a GPU, each expert's FFN over expert_tp GPUs, reading each local expert the
/// rows reach.
Seconds IterationCost::expert_linear_s(long tokens) {
  if (tokens <= 0 || !model_.moe) return 0;
  if (auto it = expert_cache_.find(tokens); it != expert_cache_.end()) return it->second;
  const ServingParallel& p = s_.parallel;
  const MoeSpec& moe = *model_.moe;
  const double rows = double(tokens) * moe.top_k / p.ep;
  std::vector<ComputeOp> experts = moe_layer_forward_ops(as_batch(model_, tokens), 1, p.expert_tp(), false, AttentionKernel::flash, rows).experts;
  const double wb = weight_bytes_per_param(s_.precision);
  weights_in(experts, wb);
  reach_local_experts(experts, rows, wb);
  const Seconds t = model_.moe_layer_count() * ops_s(experts);
  expert_cache_.emplace(tokens, t);
  return t;
}

/// One MoE layer's dispatch and combine for `tokens` tokens of an attention rank (the whole replica
/// without data-parallel attention), spread over the ep / dp_attention EP ranks among its GPUs.
Seconds IterationCost::dispatch_combine_s(long tokens) {
  if (auto it = a2a_cache_.find(tokens); it != a2a_cache_.end()) return it->second;
  const Seconds t = dispatch_combine_uncached_s(tokens);
  a2a_cache_.emplace(tokens, t);
  return t;
}

Seconds IterationCost::dispatch_combine_uncached_s(long tokens) {
  const ServingParallel& p = s_.parallel;
  const MoeSpec& moe = *model_.moe;
  const double h = model_.hidden;
  const double per_gpu = double(tokens) * p.dp_attention / p.ep;
  if (!p.deepep) return 2 * comm_.all_to_all_s(ep_group_, per_gpu * h * kActivationBytes * moe.top_k);
  // DeepEP: FP8 tokens with a 4-byte scale per 128 values under an 8-bit precision, bf16 back.
  const double dispatch_bytes = is_eight_bit(s_.precision) ? h + h / 128 * 4 : h * kActivationBytes;
  const DeepEpRouting routing{moe.routed_experts + p.redundant_experts, moe.top_k, moe.node_limit.value_or(1 << 20)};
  return comm_.deepep_all_to_all_s(ep_group_, per_gpu, dispatch_bytes, routing) +
         comm_.deepep_all_to_all_s(ep_group_, per_gpu, h * kActivationBytes, routing);
}

/// The TP all-reduces over `tokens` tokens and the MoE all-to-alls (an MoE layer with ep > 1
/// replaces its second all-reduce by a dispatch and a combine): the replica's, or one attention
/// rank's.
Seconds IterationCost::rank_communication_s(long tokens) {
  if (tokens <= 0) return 0;
  if (auto it = rank_comm_cache_.find(tokens); it != rank_comm_cache_.end()) return it->second;
  const double activations = double(tokens) * model_.hidden * kActivationBytes;
  const Seconds all_reduce = comm_.all_reduce_s(tp_group_, Bytes(activations));
  const int moe_layers = model_.moe_layer_count(), dense_layers = model_.layers - moe_layers;
  Seconds t = dense_layers * 2 * all_reduce;
  if (moe_layers > 0) t += moe_layers * (all_reduce + (s_.parallel.ep > 1 ? dispatch_combine_s(tokens) : all_reduce));
  rank_comm_cache_.emplace(tokens, t);
  return t;
}

}  // namespace clustersim
