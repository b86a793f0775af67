#include "workloads/plan_iteration.hpp"

#include <algorithm>

namespace clustersim {

namespace {

/// Accumulates ops into compute steps, cutting a step wherever a TP collective goes.
class SegmentWriter {
 public:
  SegmentWriter(const ScenarioSpec& s, const KernelTable* kernels, std::vector<Segment>& out, SegmentKind kind)
      : s_(s), kernels_(kernels), out_(out), kind_(kind) {}

  void op(const ComputeOp& op) { pending_s_ += op_time(s_.gpu, s_.precision, op, kernels_); }
  void collective(Op tp_op, const std::string& label, Bytes bytes) {
    flush();
    if (s_.layout.tp < 2) return;
    Segment seg;
    seg.kind = SegmentKind::tp_comm;
    seg.label = label;
    seg.tp_op = tp_op;
    seg.tp_bytes = bytes;
    out_.push_back(seg);
  }
  void flush(const std::string& label = "compute") {
    if (pending_s_ <= 0) return;
    out_.push_back({kind_, label, pending_s_, Op::all_reduce, 0});
    pending_s_ = 0;
  }

 private:
  const ScenarioSpec& s_;
  const KernelTable* kernels_;
  std::vector<Segment>& out_;
  SegmentKind kind_;
  Seconds pending_s_ = 0;
};

/// One layer's forward, with Megatron's TP collectives between its ops.
void forward_layer(const ScenarioSpec& s, const std::vector<ComputeOp>& ops, Bytes tp_bytes, SegmentWriter& w) {
  const bool sp = s.sequence_parallel;
  bool ffn_started = false;
  for (const ComputeOp& op : ops) {
    if (sp && op.name == "qkv") w.collective(Op::all_gather, "attention all-gather", tp_bytes);
    if (sp && !ffn_started && (op.name == "ffn_gate" || op.name == "ffn_up")) {
      w.collective(Op::all_gather, "mlp all-gather", tp_bytes);
      ffn_started = true;
    }
    w.op(op);
    if (op.name == "attn_out") w.collective(sp ? Op::reduce_scatter : Op::all_reduce, "attention output " + std::string(sp ? "reduce-scatter" : "all-reduce"), tp_bytes);
    if (op.name == "ffn_down") w.collective(sp ? Op::reduce_scatter : Op::all_reduce, "mlp output " + std::string(sp ? "reduce-scatter" : "all-reduce"), tp_bytes);
  }
  w.flush("layer forward");
}

/// One layer's input-gradient ops, with the mirrored collectives; weight gradients go to `weight`.
void backward_layer(const ScenarioSpec& s, const std::vector<ComputeOp>& bwd, Bytes tp_bytes, SegmentWriter& input,
                    SegmentWriter& weight) {
  const bool sp = s.sequence_parallel;
  bool ffn_in_done = false;
  for (const ComputeOp& op : bwd) {
    if (op.pass == OpPass::backward_weight) {
      weight.op(op);
      continue;
    }
    if (sp && op.name == "ffn_down.dgrad") input.collective(Op::all_gather, "mlp grad all-gather", tp_bytes);
    if (sp && op.name == "attn_out.dgrad") input.collective(Op::all_gather, "attention grad all-gather", tp_bytes);
    input.op(op);
    const bool ffn_in = op.name == "ffn_up.dgrad" || op.name == "ffn_gate.dgrad";
    // The FFN's input gradient is complete after its last input GEMM's dgrad (gate, else up).
    const bool last_ffn_in = ffn_in && (op.name == "ffn_gate.dgrad" || s.model.ffn == FfnType::gelu);
    if (last_ffn_in && !ffn_in_done) {
      input.collective(sp ? Op::reduce_scatter : Op::all_reduce, "mlp input-grad " + std::string(sp ? "reduce-scatter" : "all-reduce"), tp_bytes);
      ffn_in_done = true;
    }
    if (op.name == "qkv.dgrad")
      input.collective(sp ? Op::reduce_scatter : Op::all_reduce, "attention input-grad " + std::string(sp ? "reduce-scatter" : "all-reduce"), tp_bytes);
  }
  input.flush("layer backward");
  weight.flush("layer weight grad");
}

/// Weights on one GPU in one layer: the GEMMs' k x n matrices (already split over TP).
double layer_params_on_gpu(const std::vector<ComputeOp>& ops) {
  double params = 0;
  for (const ComputeOp& op : ops)
    if (op.kind == ComputeKind::gemm) params += static_cast<double>(op.shape.k) * static_cast<double>(op.shape.n);
  return params;
}

}  // namespace

IterationPlan plan_iteration(const ScenarioSpec& s, const KernelTable* kernels) {
  IterationPlan plan;
  plan.schedule = s.schedule;
  plan.shape = s.schedule_shape();
  plan.distributed_optimizer = s.distributed_optimizer;
  const ParallelLayout& layout = s.layout;
  const int p = layout.pp, v = s.virtual_stages, t = layout.tp;
  // p * v stages, or p for a schedule that holds each stage twice (DualPipe).
  const int stages = plan.schedule->model_stages(plan.shape);
  const int layers_per_stage = s.model.layers / stages;
  const Bytes tokens = static_cast<Bytes>(s.microbatch) * static_cast<Bytes>(s.model.seq_len);
  const Bytes tp_bytes = tokens * static_cast<Bytes>(s.model.hidden) * 2;

  const std::vector<ComputeOp> fwd_ops = layer_forward_ops(s.model, s.microbatch, t, s.sequence_parallel, s.attention);
  const std::vector<ComputeOp> bwd_ops = backward_ops(fwd_ops);
  const double layer_params = layer_params_on_gpu(fwd_ops);
  const double embedding_params = static_cast<double>(s.model.vocab) * s.model.hidden / t;

  // One layer's segments, computed once: every layer of the model has the same shape.
  std::vector<Segment> layer_fwd, layer_bwd_in, layer_bwd_w, layer_recompute;
  {
    SegmentWriter f(s, kernels, layer_fwd, SegmentKind::compute);
    forward_layer(s, fwd_ops, tp_bytes, f);
    SegmentWriter bi(s, kernels, layer_bwd_in, SegmentKind::compute), bw(s, kernels, layer_bwd_w, SegmentKind::compute);
    backward_layer(s, bwd_ops, tp_bytes, bi, bw);
    SegmentWriter r(s, kernels, layer_recompute, SegmentKind::recompute);
    if (s.recompute == Recompute::full) {
      forward_layer(s, fwd_ops, tp_bytes, r);
    } else if (s.recompute == Recompute::selective) {
      for (const ComputeOp& op : fwd_ops)
        if (op.attention_core) r.op(op);
      r.flush("attention recompute");
    }
    for (Segment& seg : layer_recompute)
      if (seg.kind == SegmentKind::compute) seg.kind = SegmentKind::recompute;
  }

  const ComputeOp logits = logits_forward_op(s.model, s.microbatch, t);
  const std::vector<ComputeOp> logits_bwd = backward_ops({logits});
  for (int stage = 0; stage < stages; ++stage) {
    StagePlan sp;
    double params = layer_params * layers_per_stage;
    for (int l = 0; l < layers_per_stage; ++l) {
      sp.forward.insert(sp.forward.end(), layer_fwd.begin(), layer_fwd.end());
      sp.backward_input.insert(sp.backward_input.end(), layer_recompute.begin(), layer_recompute.end());
      sp.backward_input.insert(sp.backward_input.end(), layer_bwd_in.begin(), layer_bwd_in.end());
      sp.backward_weight.insert(sp.backward_weight.end(), layer_bwd_w.begin(), layer_bwd_w.end());
    }
    if (stage == 0) params += embedding_params;
    if (stage == stages - 1) {
      // The output layer: logits GEMM forward, its input and weight gradients backward.
      sp.forward.push_back({SegmentKind::compute, "logits", op_time(s.gpu, s.precision, logits, kernels), Op::all_reduce, 0});
      for (const ComputeOp& op : logits_bwd) {
        const Segment seg{SegmentKind::compute, op.name, op_time(s.gpu, s.precision, op, kernels), Op::all_reduce, 0};
        (op.pass == OpPass::backward_weight ? sp.backward_weight : sp.backward_input).insert(
            op.pass == OpPass::backward_weight ? sp.backward_weight.end() : sp.backward_input.begin(), seg);
      }
      if (!s.model.tied_embeddings || stages > 1) params += embedding_params;
    }
    sp.activation_bytes = tp_bytes / static_cast<Bytes>(t);
    sp.gradient_bytes = static_cast<Bytes>(params * 4);
    plan.stages.push_back(std::move(sp));
  }

  double params_per_rank_max = 0;
  for (int r = 0; r < p; ++r) {
    ParallelLayout::Coord c;
    c.pp = r;
    const int rank = layout.rank(c);
    plan.rank_gpu.push_back(rank);
    plan.tp_group.push_back(layout.group(rank, Dim::tp));
    plan.dp_group.push_back(layout.group(rank, Dim::dp));
    double params = 0;
    for (int chunk = 0; chunk < v; ++chunk)
      params += static_cast<double>(plan.stages[plan.schedule->chunk_stage(plan.shape, r, chunk)].gradient_bytes) / 4;
    params_per_rank_max = std::max(params_per_rank_max, params);
  }
  const double optimizer_params = s.distributed_optimizer ? params_per_rank_max / layout.dp : params_per_rank_max;
  plan.optimizer_s = op_time(s.gpu, s.precision, optimizer_op(optimizer_params), kernels);
  plan.channels = 2 * s.cluster.node.nics;
  if (s.model.tied_embeddings && stages > 1) plan.embedding_sync_bytes = static_cast<Bytes>(embedding_params * 4);
  return plan;
}

}  // namespace clustersim
