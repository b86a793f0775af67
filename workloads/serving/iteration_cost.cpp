#include "workloads/serving/iteration_cost.hpp"

#include <algorithm>
#include <cmath>

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
  for (int k = 0; k < p.ep; ++k) ep_group_.push_back(gpu(k * (p.tp / p.ep)));
  for (int k = 0; k < p.pp; ++k) stage_first_gpu_.push_back(gpu(k * p.tp));
  kv_bytes_token_layer_ = kv_bytes_per_token_layer(model_, p.tp, s.kv.dtype_bytes);
}

Seconds IterationCost::ops_s(const std::vector<ComputeOp>& ops) const {
  Seconds t = 0;
  for (const ComputeOp& op : ops) t += op_time(s_.gpu, s_.precision, op);
  return t;
}

Seconds IterationCost::linear_s(long tokens) {
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
    const MoeSpec& moe = *model_.moe;
    const double rows = double(tokens) * moe.top_k / p.ep;
    MoeLayerOps layer = moe_layer_forward_ops(b, 1, p.tp, false, AttentionKernel::flash, rows);
    std::vector<ComputeOp> shared = without_attention_core(layer.before_dispatch);
    shared.insert(shared.end(), layer.after_combine.begin(), layer.after_combine.end());
    weights_in(shared, wb);
    std::vector<ComputeOp> experts = moe_layer_forward_ops(b, 1, p.tp / p.ep, false, AttentionKernel::flash, rows).experts;
    // A grouped GEMM over the rows reads every local expert they reach, not one expert's weights.
    weights_in(experts, wb);
    const double local = double(moe.routed_experts) / p.ep;
    const double reached = local * (1 - std::pow(1 - 1 / local, rows));
    for (ComputeOp& op : experts)
      if (op.kind == ComputeKind::gemm)
        op.hbm_bytes += Bytes(std::max(0.0, reached - 1) * wb * double(op.shape.k) * double(op.shape.n));
    t += moe_layers * (ops_s(shared) + ops_s(experts));
  }
  linear_cache_.emplace(tokens, t);
  return t;
}

Seconds IterationCost::communication_s(long tokens) {
  if (tokens <= 0) return 0;
  if (auto it = comm_cache_.find(tokens); it != comm_cache_.end()) return it->second;
  const ServingParallel& p = s_.parallel;
  const double activations = double(tokens) * model_.hidden * kActivationBytes;
  const Seconds all_reduce = comm_.all_reduce_s(tp_group_, Bytes(activations));
  const int moe_layers = model_.moe_layer_count(), dense_layers = model_.layers - moe_layers;
  Seconds t = dense_layers * 2 * all_reduce;
  if (moe_layers > 0) {
    if (p.ep > 1) {
      const Seconds a2a = comm_.all_to_all_s(ep_group_, activations * model_.moe->top_k / p.ep);
      t += moe_layers * (all_reduce + 2 * a2a);
    } else {
      t += moe_layers * 2 * all_reduce;
    }
  }
  for (int k = 0; k + 1 < p.pp; ++k) t += comm_.transfer_s(stage_first_gpu_[k], stage_first_gpu_[k + 1], activations);
  comm_cache_.emplace(tokens, t);
  return t;
}

IterationTime IterationCost::time(const BatchShape& batch) {
  IterationTime out;
  const long tokens = batch.tokens();
  out.linear_s = linear_s(tokens);
  out.communication_s = communication_s(tokens);
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
  out.attention_s = attention * m.layers;
  if (batch.sampled_rows > 0) out.logits_s = op_time(s_.gpu, s_.precision, logits_forward_op(as_batch(m, batch.sampled_rows), 1, s_.parallel.tp));
  const Seconds gpu_s = out.linear_s + out.attention_s + out.communication_s + out.logits_s;
  if (s_.host.declared) out.host_s = s_.host.time_s(long(batch.chunks.size()) + batch.decode_requests);
  out.total_s = s_.host.overlapped ? std::max(gpu_s, out.host_s) : gpu_s + out.host_s;
  return out;
}

}  // namespace clustersim
