// Layers as compute-stream segments: Megatron's TP collectives between the ops, and for MoE layers
// the expert-parallel all-to-alls around the routed experts.
#include "workloads/layer_segments.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

#include "workloads/fp8_scaling.hpp"

namespace clustersim {

namespace {

/// Accumulates ops into compute steps, cutting a step wherever a collective goes.
class SegmentWriter {
 public:
  SegmentWriter(const ScenarioSpec& s, const KernelTable* kernels, std::vector<Segment>& out, SegmentKind kind,
                const ContextParallelPlan& cp = {})
      : s_(s), kernels_(kernels), out_(out), kind_(kind), cp_(cp) {}

  void op(const ComputeOp& op) {
    const Seconds t = op_time(s_.gpu, s_.precision, op, kernels_);
    pending_s_ += t;
    if (op.attention_core) core_s_ += t;
  }
  /// Before the attention core: all-gather CP collects every rank's K and V.
  void before_attention(bool backward) {
    core_s_ = 0;
    if (s_.layout.cp < 2 || !s_.cp_all_gather || backward) return;
    flush();
    out_.push_back(cp_collective(Op::all_gather, "cp K/V all-gather"));
  }
  /// After it: ring attention shows each step's transfer beyond that step's compute (1/cp of the
  /// core); all-gather CP reduce-scatters the K and V gradients in backward.
  void after_attention(bool backward) {
    if (s_.layout.cp < 2) return;
    flush();
    if (s_.cp_all_gather) {
      if (backward) out_.push_back(cp_collective(Op::reduce_scatter, "cp K/V grad reduce-scatter"));
      return;
    }
    Segment seg;
    seg.kind = SegmentKind::cp_comm;
    seg.label = backward ? "ring attention K/V and grad exchange" : "ring attention K/V exchange";
    seg.traffic = backward ? cp_.ring_backward : cp_.ring_forward;
    seg.repeat = s_.layout.cp - 1;
    seg.hidden_s = core_s_ / s_.layout.cp;
    out_.push_back(seg);
  }
  void collective(Op tp_op, const std::string& label, Bytes bytes, Seconds hidden_s = 0, Seconds hidden_by_weight_s = 0) {
    flush();
    if (s_.layout.tp < 2) return;
    out_.push_back(tp_collective(tp_op, label, bytes, hidden_s, hidden_by_weight_s));
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
  ContextParallelPlan cp_;
  Seconds pending_s_ = 0, core_s_ = 0;

  Segment cp_collective(Op op, const std::string& label) const {
    Segment seg;
    seg.kind = SegmentKind::cp_comm;
    seg.label = label;
    seg.tp_op = op;
    seg.tp_bytes = cp_.gathered_kv_bytes;
    seg.group = CommGroup::cp;
    return seg;
  }
};

/// Whether ops[i] opens or closes the run of attention-core ops.
bool core_starts(const std::vector<ComputeOp>& ops, std::size_t i) {
  return ops[i].attention_core && (i == 0 || !ops[i - 1].attention_core);
}
bool core_ends(const std::vector<ComputeOp>& ops, std::size_t i) {
  return ops[i].attention_core && (i + 1 == ops.size() || !ops[i + 1].attention_core);
}

/// The GEMMs that read a layer's normed input, each block's column-parallel linear in Megatron:
/// the attention's QKV (MLA: its two down-projections) and the FFN's first GEMM (gate and up, one
/// fused linear; in an MoE layer the router and the shared experts).
bool reads_attention_input(const std::string& gemm) { return gemm == "qkv" || gemm == "q_down" || gemm == "kv_down"; }
bool reads_ffn_input(const std::string& gemm) {
  return gemm == "ffn_up" || gemm == "ffn_gate" || gemm == "router" || gemm == "shared_up" || gemm == "shared_gate";
}
/// Under SP, those that read the gathered input: not an MoE layer's router, which Megatron-Core runs
/// on the rank's own sequence slice (its token dispatcher all-gathers over TP only what each rank's
/// experts receive, after the all-to-all; MoE with TP needs SP there).
bool reads_gathered_ffn_input(const std::string& gemm) { return gemm != "router" && reads_ffn_input(gemm); }

/// One layer's forward, with Megatron's TP collectives between its ops. Sequence parallelism's
/// all-gathers feed the QKV and FFN GEMMs, so FP8 training gathers them in FP8 (Transformer Engine
/// casts before it gathers); the reductions carry GEMM outputs and stay 16-bit.
void forward_layer(const ScenarioSpec& s, const std::vector<ComputeOp>& ops, Bytes tp_bytes, SegmentWriter& w) {
  const bool sp = s.sequence_parallel;
  const Bytes gather_bytes = s.eight_bit_gemm_inputs() ? tp_bytes / 2 : tp_bytes;
  bool ffn_started = false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ComputeOp& op = ops[i];
    if (core_starts(ops, i)) w.before_attention(false);
    if (sp && (op.name == "qkv" || op.name == "q_down")) w.collective(Op::all_gather, "attention all-gather", gather_bytes);
    if (sp && !ffn_started && (op.kind == ComputeKind::gemm && reads_gathered_ffn_input(op.name))) {
      w.collective(Op::all_gather, "mlp all-gather", gather_bytes);
      ffn_started = true;
    }
    w.op(op);
    if (core_ends(ops, i)) w.after_attention(false);
    if (op.name == "attn_out") w.collective(sp ? Op::reduce_scatter : Op::all_reduce, "attention output " + std::string(sp ? "reduce-scatter" : "all-reduce"), tp_bytes);
    if (op.name == "ffn_down") w.collective(sp ? Op::reduce_scatter : Op::all_reduce, "mlp output " + std::string(sp ? "reduce-scatter" : "all-reduce"), tp_bytes);
  }
  w.flush("layer forward");
}

/// The backward time of the GEMMs `reads` picks, in one pass (input or weight gradient).
Seconds linear_backward_s(const ScenarioSpec& s, const KernelTable* kernels, const std::vector<ComputeOp>& bwd,
                          bool (*reads)(const std::string&), OpPass pass) {
  Seconds t = 0;
  for (const ComputeOp& op : bwd) {
    const std::string gemm = op.name.substr(0, op.name.find('.'));
    if (op.pass == pass && op.kind == ComputeKind::gemm && reads(gemm)) t += op_time(s.gpu, s.precision, op, kernels);
  }
  return t;
}

/// One layer's input-gradient ops, with the mirrored collectives; weight gradients go to `weight`.
/// A column-parallel linear's input gradient is reduced over TP (reduce-scattered under SP); under
/// SP its weight gradient needs the whole input again, so it is re-gathered first. With Megatron's
/// asynchronous TP backward (s.overlap_tp_backward) the re-gather runs during the input-gradient
/// GEMM and the reduction during the weight-gradient GEMM; otherwise both block.
void backward_layer(const ScenarioSpec& s, const KernelTable* kernels, const std::vector<ComputeOp>& bwd,
                    Bytes tp_bytes, SegmentWriter& input, SegmentWriter& weight) {
  const bool sp = s.sequence_parallel;
  const Bytes gather_bytes = s.eight_bit_gemm_inputs() ? tp_bytes / 2 : tp_bytes;
  const Op reduce = sp ? Op::reduce_scatter : Op::all_reduce;
  const std::string reduce_name = sp ? "reduce-scatter" : "all-reduce";
  auto overlap = [&](bool (*reads)(const std::string&), OpPass pass) {
    return s.overlap_tp_backward ? linear_backward_s(s, kernels, bwd, reads, pass) : 0.0;
  };
  bool (*ffn_input)(const std::string&) = sp ? reads_gathered_ffn_input : reads_ffn_input;
  bool ffn_in_started = false, ffn_in_done = false, attention_in_started = false;
  for (std::size_t i = 0; i < bwd.size(); ++i) {
    const ComputeOp& op = bwd[i];
    if (op.pass == OpPass::backward_weight) {
      weight.op(op);
      continue;
    }
    const std::string gemm = op.name.substr(0, op.name.find('.'));
    if (core_starts(bwd, i)) input.before_attention(true);
    if (sp && op.name == "ffn_down.dgrad") input.collective(Op::all_gather, "mlp grad all-gather", tp_bytes);
    if (sp && op.name == "attn_out.dgrad") input.collective(Op::all_gather, "attention grad all-gather", tp_bytes);
    if (sp && op.kind == ComputeKind::gemm && ffn_input(gemm) && !ffn_in_started) {
      input.collective(Op::all_gather, "mlp input re-gather", gather_bytes, overlap(ffn_input, OpPass::backward_input));
      ffn_in_started = true;
    }
    if (sp && op.kind == ComputeKind::gemm && reads_attention_input(gemm) && !attention_in_started) {
      input.collective(Op::all_gather, "attention input re-gather", gather_bytes,
                       overlap(reads_attention_input, OpPass::backward_input));
      attention_in_started = true;
    }
    input.op(op);
    if (core_ends(bwd, i)) input.after_attention(true);
    // The FFN's input gradient is complete after its last input GEMM's dgrad (gate, else up; in an
    // MoE layer the router, the first GEMM on the FFN's input, or under SP the shared experts' gate
    // or up: the router's slice needs no reduction, and without shared experts nothing is reduced).
    const bool ffn_in = op.kind == ComputeKind::gemm && op.name == gemm + ".dgrad" &&
                        (gemm == "ffn_up" || gemm == "ffn_gate" ||
                         (sp ? gemm == "shared_up" || gemm == "shared_gate" : gemm == "router"));
    const bool last_ffn_in = ffn_in && (gemm == "ffn_gate" || gemm == "shared_gate" || gemm == "router" ||
                                        s.model.ffn != FfnType::swiglu);
    if (last_ffn_in && !ffn_in_done) {
      input.collective(reduce, "mlp input-grad " + reduce_name, tp_bytes, 0, overlap(ffn_input, OpPass::backward_weight));
      ffn_in_done = true;
    }
    if (op.name == "qkv.dgrad" || op.name == "q_down.dgrad")
      input.collective(reduce, "attention input-grad " + reduce_name, tp_bytes, 0,
                       overlap(reads_attention_input, OpPass::backward_weight));
  }
  input.flush("layer backward");
  weight.flush("layer weight grad");
}

/// The weights of `ops`' GEMMs (k x n each) on one GPU; a GEMM of two activations has none.
double gemm_params(const std::vector<ComputeOp>& ops) {
  double params = 0;
  for (const ComputeOp& op : ops)
    if (op.kind == ComputeKind::gemm && !op.weightless) params += double(op.shape.k) * double(op.shape.n);
  return params;
}

Bytes tp_bytes_of(const ScenarioSpec& s) {
  return static_cast<Bytes>(s.local_tokens()) * static_cast<Bytes>(s.model.hidden) * 2;
}

/// The forward ops `module` recomputes (memory_model.hpp's RecomputeModule), by the compute
/// model's op names; core_attn is the attention core, handled with its CP exchange.
bool recomputes(RecomputeModule module, const ComputeOp& op, bool mla) {
  const std::string& n = op.name;
  auto ends_with = [&](const std::string& tail) { return n.size() >= tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0; };
  bool activation = false;
  for (FfnType kind : {FfnType::gelu, FfnType::swiglu, FfnType::squared_relu})
    activation = activation || n == ffn_activation_name(kind) || ends_with(std::string("_") + ffn_activation_name(kind));
  switch (module) {
    case RecomputeModule::layernorm: return n == "norm1" || n == "norm2" || n == "q_norm" || n == "kv_norm";
    case RecomputeModule::core_attn: return op.attention_core;
    case RecomputeModule::mla_up_proj: return mla && (n == "q_up" || n == "kv_up" || n == "rope");
    case RecomputeModule::activation: return activation;
    case RecomputeModule::moe_act: return activation && (n.rfind("shared_", 0) == 0 || n.rfind("expert_", 0) == 0);
    case RecomputeModule::experts: return n.rfind("expert_", 0) == 0;
    case RecomputeModule::mlp:
    case RecomputeModule::moe:
    case RecomputeModule::shared_experts: return false;  // whole blocks, with their collectives (BlockRecompute)
  }
  return false;
}

/// A whole block that a module recomputes (mlp: a dense layer's MLP; moe: an MoE layer's block;
/// shared_experts: its shared experts), segments and all, and the ops it covers, which no finer
/// module repeats again.
struct BlockRecompute {
  std::vector<Segment> segments;
  std::size_t from = 0, to = 0;  // the forward ops [from, to) it repeats
  bool experts = false;          // and the routed experts
};

/// The ops of a layer's FFN block, from its pre-FFN norm (or, with `after_norm`, what follows it)
/// up to the residual after it: [from, to) of `ops`.
std::pair<std::size_t, std::size_t> ffn_block(const std::vector<ComputeOp>& ops, bool after_norm) {
  std::size_t from = ops.size();
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == "norm2") from = after_norm ? i + 1 : i;
  std::size_t to = from;
  while (to < ops.size() && ops[to].name.rfind("residual", 0) != 0 && ops[to].name.rfind("dropout_residual", 0) != 0) ++to;
  return {from, to};
}

/// Recompute: full repeats the layer's forward segments; selective (= the core_attn module) its
/// attention core, which under context parallelism needs every rank's K and V again (the ring
/// turns once more, or the all-gather repeats); modules their own forward ops, in forward order,
/// before the layer's backward, and `block` (mlp, moe, shared_experts) first, since the backward
/// reaches the FFN block first. `experts` are an MoE layer's routed-expert ops (empty for a dense layer);
/// `busiest_experts` the busiest GPU's, whose extra recompute shows as imbalance.
void add_recompute(const ScenarioSpec& s, const KernelTable* kernels, const std::vector<Segment>& forward,
                   const std::vector<ComputeOp>& fwd_ops, const std::vector<ComputeOp>& experts,
                   const std::vector<ComputeOp>& busiest_experts, const ContextParallelPlan& cp,
                   const BlockRecompute& block, LayerSegments& out) {
  if (s.recompute == Recompute::full) {
    out.recompute = forward;
  } else {
    RecomputeModules modules = s.recompute_modules;
    if (s.recompute == Recompute::selective) modules.add(RecomputeModule::core_attn);
    auto chosen = [&](const ComputeOp& op) {
      for (const auto& [name, module] : recompute_module_names())
        if (modules.has(module) && recomputes(module, op, s.model.mla.has_value())) return true;
      return false;
    };
    out.recompute = block.segments;
    SegmentWriter r(s, kernels, out.recompute, SegmentKind::compute, cp);
    for (std::size_t i = 0; i < fwd_ops.size(); ++i) {
      if (!chosen(fwd_ops[i]) || (i >= block.from && i < block.to)) continue;
      const bool core = modules.has(RecomputeModule::core_attn) && fwd_ops[i].attention_core;
      if (core && core_starts(fwd_ops, i)) r.before_attention(false);
      r.op(fwd_ops[i]);
      if (core && core_ends(fwd_ops, i)) r.after_attention(false);
    }
    Seconds own_s = 0, busiest_s = 0;
    for (const ComputeOp& op : experts)
      if (chosen(op) && !block.experts) {
        r.op(op);
        own_s += op_time(s.gpu, s.precision, op, kernels);
      }
    for (const ComputeOp& op : busiest_experts)
      if (chosen(op) && !block.experts) busiest_s += op_time(s.gpu, s.precision, op, kernels);
    r.flush(modules == RecomputeModules{}.add(RecomputeModule::core_attn) ? "attention recompute" : "module recompute");
    if (busiest_s > own_s)
      out.recompute.push_back({SegmentKind::imbalance, "expert recompute imbalance", busiest_s - own_s, Op::all_reduce, 0});
  }
  for (Segment& seg : out.recompute)
    if (seg.kind == SegmentKind::compute) seg.kind = SegmentKind::recompute;
}

/// Names a block's compute segments for traces.
void relabel(std::vector<Segment>& segments, const std::string& label) {
  for (Segment& seg : segments)
    if (seg.kind == SegmentKind::compute) seg.label = label;
}

Segment ep_segment(const std::string& label, int traffic) {
  Segment seg;
  seg.kind = SegmentKind::ep_comm;
  seg.label = label;
  seg.traffic = traffic;
  return seg;
}

Seconds compute_of(const std::vector<Segment>& segments) {
  Seconds t = 0;
  for (const Segment& seg : segments) t += seg.kind == SegmentKind::compute ? seg.duration_s : 0;
  return t;
}

/// ZeRO-2 and 3, per layer and microbatch: the gradients are reduce-scattered after the layer's
/// backward, overlapped with the backward that follows (hidden under as much compute as this
/// layer's); ZeRO-3 all-gathers the parameters before the forward, prefetched under the previous
/// layer's, and again before the backward when they were resharded after forward (FSDP's
/// reshard_after_forward). Dense weights over data parallelism, routed experts over their replicas.
void add_zero(const ScenarioSpec& s, LayerSegments& out) {
  if (s.zero_stage < 2) return;
  const Seconds forward_s = compute_of(out.forward),
                backward_s = compute_of(out.backward_input) + compute_of(out.backward_weight);
  for (const auto& [group, params] : {std::pair(CommGroup::dp, out.params_on_gpu),
                                      std::pair(CommGroup::expert_dp, out.expert_params_on_gpu)}) {
    if (params <= 0) continue;
    auto collective = [&, group = group](Op op, const std::string& label, double bytes, Seconds hidden) {
      Segment seg;
      seg.kind = SegmentKind::dp_comm;
      seg.label = label;
      seg.tp_op = op;
      seg.tp_bytes = static_cast<Bytes>(bytes);
      seg.hidden_s = hidden;
      seg.group = group;
      return seg;
    };
    // Gradients at the scenario's reduce width, parameters at its gather width (2 B, FP8 1 B).
    out.backward_weight.push_back(collective(Op::reduce_scatter, "zero gradient reduce-scatter",
                                             s.gradient_reduce_bytes() * params, backward_s));
    if (s.zero_stage < 3) continue;
    out.forward.insert(out.forward.begin(), collective(Op::all_gather, "zero-3 parameter all-gather", s.parameter_gather_bytes() * params, forward_s));
    if (s.reshard_after_forward)
      out.backward_input.insert(out.backward_input.begin(),
                                collective(Op::all_gather, "zero-3 parameter all-gather", s.parameter_gather_bytes() * params, backward_s));
  }
}

Seconds ops_time(const ScenarioSpec& s, const KernelTable* kernels, const std::vector<ComputeOp>& ops) {
  Seconds t = 0;
  for (const ComputeOp& op : ops) t += op_time(s.gpu, s.precision, op, kernels);
  return t;
}

/// Without gradient accumulation fusion, each microbatch's weight gradients of the layer are added
/// to the gradient buffer (in the width gradients are reduced in) once the layer's backward is done.
void add_gradient_accumulation(const ScenarioSpec& s, const KernelTable* kernels, LayerSegments& out) {
  if (s.gradient_accumulation_fusion) return;
  const ComputeOp add = gradient_accumulation_op(out.params_on_gpu + out.expert_params_on_gpu, s.gradient_reduce_bytes());
  out.backward_weight.push_back({SegmentKind::compute, "gradient accumulation", op_time(s.gpu, s.precision, add, kernels),
                                 Op::all_reduce, 0});
}

/// Under 8-bit training, forward ops with their FP8 input quantization (fp8_scaling.hpp).
std::vector<ComputeOp> forward_of(const ScenarioSpec& s, const std::vector<ComputeOp>& plain) {
  return s.eight_bit_gemm_inputs() ? with_input_quantization(plain) : plain;
}
/// The backward of plain forward ops, with the FP8 output-gradient quantization.
std::vector<ComputeOp> backward_of(const ScenarioSpec& s, const std::vector<ComputeOp>& plain) {
  return s.eight_bit_gemm_inputs() ? with_gradient_quantization(backward_ops(plain)) : backward_ops(plain);
}

}  // namespace

Segment tp_collective(Op op, const std::string& label, Bytes bytes, Seconds hidden_s, Seconds hidden_by_weight_s) {
  Segment seg;
  seg.kind = SegmentKind::tp_comm;
  seg.label = label;
  seg.tp_op = op;
  seg.tp_bytes = bytes;
  seg.hidden_s = hidden_s;
  seg.hidden_by_weight_s = hidden_by_weight_s;
  return seg;
}

LayerSegments dense_layer_segments(const ScenarioSpec& s, const KernelTable* kernels, const ContextParallelPlan& cp) {
  const std::vector<ComputeOp> plain =
      layer_forward_ops(s.model, s.microbatch, s.layout.tp, s.sequence_parallel, s.attention, s.layout.cp);
  const std::vector<ComputeOp> fwd_ops = forward_of(s, plain);
  LayerSegments out;
  const Bytes tp_bytes = tp_bytes_of(s);
  SegmentWriter f(s, kernels, out.forward, SegmentKind::compute, cp);
  forward_layer(s, fwd_ops, tp_bytes, f);
  SegmentWriter bi(s, kernels, out.backward_input, SegmentKind::compute, cp),
      bw(s, kernels, out.backward_weight, SegmentKind::compute, cp);
  backward_layer(s, kernels, backward_of(s, plain), tp_bytes, bi, bw);
  BlockRecompute mlp;
  if (s.recompute != Recompute::full && s.recompute_modules.has(RecomputeModule::mlp)) {
    std::tie(mlp.from, mlp.to) = ffn_block(fwd_ops, false);
    SegmentWriter r(s, kernels, mlp.segments, SegmentKind::compute, cp);
    forward_layer(s, {fwd_ops.begin() + static_cast<long>(mlp.from), fwd_ops.begin() + static_cast<long>(mlp.to)}, tp_bytes, r);
    relabel(mlp.segments, "mlp recompute");
  }
  add_recompute(s, kernels, out.forward, fwd_ops, {}, {}, cp, mlp, out);
  out.params_on_gpu = gemm_params(fwd_ops);
  add_gradient_accumulation(s, kernels, out);
  add_zero(s, out);
  return out;
}

LayerSegments moe_layer_segments(const ScenarioSpec& s, const KernelTable* kernels, const MoeTrafficIds& traffic,
                                 ExpertRows rows, const ContextParallelPlan& cp) {
  const int t = s.layout.tp;
  const bool sp = s.sequence_parallel;
  const int c = s.layout.cp;
  const MoeLayerOps own = moe_layer_forward_ops(s.model, s.microbatch, t, sp, s.attention, rows.own, c);
  const MoeLayerOps busiest = moe_layer_forward_ops(s.model, s.microbatch, t, sp, s.attention, rows.busiest, c);
  const Bytes tp_bytes = tp_bytes_of(s);
  const Op reduce = sp ? Op::reduce_scatter : Op::all_reduce;
  const std::string reduce_name = sp ? "reduce-scatter" : "all-reduce";
  // Under SP, Megatron-Core's token dispatcher (moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher)
  // sends each rank's own sequence slice through the all-to-all (plan_iteration.cpp sizes it so),
  // then all-gathers over TP the tokens this rank's experts received (its `own` rows, each expert
  // TP-sharded), and reduce-scatters their outputs before the combine. Only the shared experts read
  // the gathered layer input, so only their output is reduced after it.
  const bool slice = sp && t > 1, shared = s.model.moe->shared_experts > 0;
  const double expert_rows_x_hidden = rows.own * double(s.model.hidden);
  const Bytes expert_input_bytes = static_cast<Bytes>(expert_rows_x_hidden * (s.eight_bit_gemm_inputs() ? 1 : 2));
  const Bytes expert_output_bytes = static_cast<Bytes>(expert_rows_x_hidden * 2);
  LayerSegments out;

  // Forward: attention (its own TP collectives), norm, router and shared experts; dispatch; the
  // routed experts; waiting for the busiest rank; combine; the FFN output's TP reduction; residual.
  const std::vector<ComputeOp> own_before = forward_of(s, own.before_dispatch), own_experts = forward_of(s, own.experts),
                               busiest_experts = forward_of(s, busiest.experts);
  // From the dispatch to the FFN output's TP reduction, as MoELayer.forward runs it after the router
  // and shared experts: once in the forward, again under the `moe` recompute module.
  auto dispatch_to_combine = [&](SegmentWriter& w, std::vector<Segment>& segments) {
    segments.push_back(ep_segment("moe dispatch", traffic.dispatch));
    if (slice) w.collective(Op::all_gather, "moe dispatch all-gather", expert_input_bytes);
    for (const ComputeOp& op : own_experts) w.op(op);
    w.flush("routed experts");
    const Seconds wait = ops_time(s, kernels, busiest_experts) - ops_time(s, kernels, own_experts);
    if (wait > 0) segments.push_back({SegmentKind::imbalance, "expert imbalance", wait, Op::all_reduce, 0});
    if (slice) w.collective(Op::reduce_scatter, "moe combine reduce-scatter", expert_output_bytes);
    segments.push_back(ep_segment("moe combine", traffic.combine));
    if (!sp || shared) w.collective(reduce, "moe output " + reduce_name, tp_bytes);
  };
  SegmentWriter f(s, kernels, out.forward, SegmentKind::compute, cp);
  forward_layer(s, own_before, tp_bytes, f);
  dispatch_to_combine(f, out.forward);
  for (const ComputeOp& op : own.after_combine) f.op(op);
  f.flush("layer forward");

  // Backward mirrors it: the combine's gradient goes out like a dispatch, the experts' input and
  // weight gradients, the wait, the dispatch's gradient comes back like a combine.
  SegmentWriter bi(s, kernels, out.backward_input, SegmentKind::compute, cp),
      bw(s, kernels, out.backward_weight, SegmentKind::compute, cp);
  for (const ComputeOp& op : backward_of(s, own.after_combine)) bi.op(op);
  if (sp && shared) bi.collective(Op::all_gather, "moe grad all-gather", tp_bytes);
  out.backward_input.push_back(ep_segment("moe combine grad", traffic.dispatch_shaped_grad));
  if (slice) bi.collective(Op::all_gather, "moe combine grad all-gather", expert_output_bytes);
  for (const ComputeOp& op : backward_of(s, own.experts)) (op.pass == OpPass::backward_weight ? bw : bi).op(op);
  bi.flush("routed experts backward");
  const Seconds wait_bwd =
      ops_time(s, kernels, backward_of(s, busiest.experts)) - ops_time(s, kernels, backward_of(s, own.experts));
  if (wait_bwd > 0)
    out.backward_input.push_back({SegmentKind::imbalance, "expert imbalance", wait_bwd, Op::all_reduce, 0});
  if (slice) bi.collective(Op::reduce_scatter, "moe dispatch grad reduce-scatter", expert_output_bytes);
  out.backward_input.push_back(ep_segment("moe dispatch grad", traffic.combine));
  backward_layer(s, kernels, backward_of(s, own.before_dispatch), tp_bytes, bi, bw);
  // moe repeats the block from the router on (the norm is the layer's); shared_experts only the
  // shared experts, whose output it reduces over TP again.
  BlockRecompute block;
  const bool whole = s.recompute_modules.has(RecomputeModule::moe),
             shared_only = !whole && shared && s.recompute_modules.has(RecomputeModule::shared_experts);
  if (s.recompute != Recompute::full && (whole || shared_only)) {
    std::tie(block.from, block.to) = ffn_block(own_before, true);
    if (shared_only)
      while (block.from < block.to && own_before[block.from].name.rfind("shared_", 0) != 0) ++block.from;
    block.experts = whole;
    SegmentWriter r(s, kernels, block.segments, SegmentKind::compute, cp);
    forward_layer(s, {own_before.begin() + static_cast<long>(block.from), own_before.begin() + static_cast<long>(block.to)},
                  tp_bytes, r);
    if (whole) dispatch_to_combine(r, block.segments);
    else r.collective(reduce, "shared experts output " + reduce_name, tp_bytes);
    relabel(block.segments, whole ? "moe recompute" : "shared experts recompute");
  }
  add_recompute(s, kernels, out.forward, own_before, own_experts, busiest_experts, cp, block, out);

  out.params_on_gpu = gemm_params(own.before_dispatch);
  // The experts' GEMMs above are one expert's matrices; this GPU holds routed_experts / ep of them.
  std::vector<ComputeOp> one_expert = moe_layer_forward_ops(s.model, s.microbatch, t, sp, s.attention, 1, c).experts;
  out.expert_params_on_gpu = gemm_params(one_expert) * (s.model.moe->routed_experts / s.ep);
  add_gradient_accumulation(s, kernels, out);
  add_zero(s, out);
  return out;
}

LayerSegments mtp_module_segments(const ScenarioSpec& s, const KernelTable* kernels, const LayerSegments& block) {
  const int t = s.layout.tp;
  const long tokens = s.local_tokens(), h = s.model.hidden;
  auto norm = [&](const std::string& name) {
    ComputeOp op;
    op.name = name;
    op.kind = ComputeKind::elementwise;
    op.shape = {tokens, h, 0};
    op.hbm_bytes = static_cast<Bytes>(4.0 * double(tokens) * double(h));  // read and write, 2 B each
    return op;
  };
  ComputeOp projection;
  projection.name = "mtp_proj";
  projection.kind = ComputeKind::gemm;
  projection.shape = {tokens, h / t, 2 * h};
  projection.flops = 2.0 * double(tokens) * double(h / t) * double(2 * h);
  projection.hbm_bytes = static_cast<Bytes>(2.0 * (double(tokens) * 2 * h + 2.0 * h * (h / t) + double(tokens) * (h / t)));
  const std::vector<ComputeOp> before = {norm("mtp_hidden_norm"), norm("mtp_embedding_norm"), projection};
  const CrossEntropyOps loss = cross_entropy_ops(s.model, s.microbatch, t, s.layout.cp);
  const std::vector<ComputeOp> after = {norm("mtp_head_norm"), logits_forward_op(s.model, s.microbatch, t, s.layout.cp)};
  auto timed = [&](const ComputeOp& op) {
    return Segment{SegmentKind::compute, op.name, op_time(s.gpu, s.precision, op, kernels), Op::all_reduce, 0};
  };
  LayerSegments out;
  for (const ComputeOp& op : forward_of(s, before)) out.forward.push_back(timed(op));
  out.forward.insert(out.forward.end(), block.forward.begin(), block.forward.end());
  for (const ComputeOp& op : after) out.forward.push_back(timed(op));
  out.forward.push_back(timed(loss.forward));
  out.backward_input.push_back(timed(loss.backward));
  auto backward = [&](const std::vector<ComputeOp>& fwd) {
    for (const ComputeOp& op : backward_of(s, fwd))
      (op.pass == OpPass::backward_weight ? out.backward_weight : out.backward_input).push_back(timed(op));
  };
  backward(after);
  out.backward_input.insert(out.backward_input.end(), block.recompute.begin(), block.recompute.end());
  out.backward_input.insert(out.backward_input.end(), block.backward_input.begin(), block.backward_input.end());
  out.backward_weight.insert(out.backward_weight.end(), block.backward_weight.begin(), block.backward_weight.end());
  backward(before);
  out.params_on_gpu = block.params_on_gpu + double(h / t) * double(2 * h) + 3.0 * double(h);
  out.expert_params_on_gpu = block.expert_params_on_gpu;
  return out;
}

}  // namespace clustersim
