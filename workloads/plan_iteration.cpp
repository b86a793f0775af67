#include "workloads/plan_iteration.hpp"

#include "collectives/algo_deepep.hpp"

#include <optional>

#include "workloads/layer_segments.hpp"
#include "workloads/model_math.hpp"
#include "workloads/moe_routing.hpp"

#include <algorithm>

namespace clustersim {

namespace {


/// One MoE all-to-all's sizes from the routing: a dispatch sends token copies from rank i to the
/// experts on rank j; a combine brings them back (the transpose). DeepEP sends a token once per
/// remote node and fans it out over NVLink from the relay on the sender's rail there. Each rank
/// sends `share` of the routed tokens (its sequence slice under SP).
GroupTraffic moe_traffic(const std::string& label, const std::vector<int>& gpus, const MoeLayerTraffic& routes, bool deepep,
                         double token_size_bytes, bool combine, double share) {
  const double bytes_per_token = token_size_bytes * share;
  const std::size_t n = gpus.size();
  GroupTraffic out;
  out.label = label;
  out.gpus = gpus;
  out.deepep = deepep;
  out.ranks_per_node = routes.ranks_per_node;
  out.token_bytes = token_size_bytes;
  auto at = [combine](const std::vector<std::vector<double>>& m, std::size_t i, std::size_t j) {
    return combine ? m[j][i] : m[i][j];
  };
  if (!deepep) {
    out.bytes.assign(n, std::vector<double>(n, 0));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) out.bytes[i][j] = at(routes.token_copies, i, j) * bytes_per_token;
    return out;
  }
  // The combine runs DeepEP's legs backwards: NVLink to the relay, then one network send per node.
  const std::size_t nodes = static_cast<std::size_t>(routes.nodes), per = static_cast<std::size_t>(routes.ranks_per_node);
  out.network_bytes.assign(n, std::vector<double>(nodes, 0));
  out.nvlink_bytes.assign(n, std::vector<double>(n, 0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < nodes; ++k) {
      if (!combine) out.network_bytes[i][k] = routes.network_tokens[i][k] * bytes_per_token;
      // Back from node k's relay of rank i (the rank with i's local index) to i.
      else out.network_bytes[k * per + i % per][i / per] += routes.network_tokens[i][k] * bytes_per_token;
    }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const std::size_t relay = static_cast<std::size_t>(routes.relay(static_cast<int>(i), static_cast<int>(j)));
      if (relay == j) continue;
      const double b = routes.nvlink_tokens[i][j] * bytes_per_token;
      if (!combine) out.nvlink_bytes[relay][j] += b;
      else out.nvlink_bytes[j][relay] += b;
    }
  return out;
}

/// Context parallelism's K and V exchange for one microbatch of one layer: ring attention passes
/// each rank's block to the next CP rank (K and V forward; K, V and their gradients backward);
/// all-gather CP gathers every rank's block.
template <typename Add>
ContextParallelPlan context_parallel_plan(const ScenarioSpec& s, Bytes tokens, Add add) {
  ContextParallelPlan out;
  const int cp = s.layout.cp, t = s.layout.tp;
  if (cp < 2) return out;
  const ModelSpec& m = s.model;
  const double kv_width = m.mla ? double(m.heads) / t * (m.mla->qk_head_dim() + m.mla->v_head_dim)
                                : 2.0 * std::max(1, m.kv_heads / t) * m.head_dim();
  const double kv_bytes = double(tokens) * kv_width * 2;
  out.gathered_kv_bytes = static_cast<Bytes>(kv_bytes * cp);
  if (s.cp_all_gather) return out;
  const std::vector<int> gpus = s.layout.group(s.layout.rank({}), Dim::cp);
  for (double factor : {1.0, 2.0}) {
    GroupTraffic ring;
    ring.label = factor == 1 ? "ring attention step" : "ring attention backward step";
    ring.gpus = gpus;
    ring.bytes.assign(gpus.size(), std::vector<double>(gpus.size(), 0));
    for (std::size_t i = 0; i < gpus.size(); ++i) ring.bytes[i][(i + 1) % gpus.size()] = kv_bytes * factor;
    (factor == 1 ? out.ring_forward : out.ring_backward) = add(std::move(ring));
  }
  return out;
}

}  // namespace

IterationPlan plan_iteration(const ScenarioSpec& s, const KernelTable* kernels) {
  IterationPlan plan;
  plan.schedule = s.schedule;
  plan.shape = s.schedule_shape();
  plan.gradient_bytes_per_param = s.gradient_reduce_bytes();
  plan.parameter_gather_bytes = s.parameter_gather_bytes();
  plan.overlap_param_gather = s.overlap_param_gather;
  plan.distributed_optimizer = s.distributed_optimizer;
  plan.zero_stage = s.zero_stage;
  plan.overlap_grad_reduce = s.overlap_grad_reduce;
  plan.blocking_p2p = !s.overlap_p2p_comm;
  plan.embedding_stage = s.first_language_stage();
  const ParallelLayout& layout = s.layout;
  const int p = layout.pp, v = s.virtual_stages, t = layout.tp;
  // p * v stages, or p for a schedule that holds each stage twice (DualPipe).
  const int stages = plan.schedule->model_stages(plan.shape);
  const Bytes tokens = static_cast<Bytes>(s.local_tokens());  // one microbatch on one context-parallel rank
  const Bytes tp_bytes = tokens * static_cast<Bytes>(s.model.hidden) * 2;
  // Sequence-parallel activations are already split over tp; otherwise scatter, then gather.
  if (!s.sequence_parallel && t > 1) plan.p2p_gather_bytes = tp_bytes;
  auto add = [&](GroupTraffic traffic) {
    plan.traffic.push_back(std::move(traffic));
    return static_cast<int>(plan.traffic.size()) - 1;
  };
  const ContextParallelPlan cp = context_parallel_plan(s, tokens, add);
  const double embedding_params = static_cast<double>(s.model.vocab) * s.model.hidden / t;

  // Each kind of layer's segments, computed once: dense layers, and MoE layers when the model has them.
  const LayerSegments dense = dense_layer_segments(s, kernels, cp);
  std::optional<LayerSegments> moe;
  if (s.model.moe) {
    const MoeLayerTraffic routes = route_moe_layer(s.moe_routing(static_cast<std::int64_t>(tokens)));
    const std::vector<int> ep_gpus = s.ep_group();
    // DeepSeek-V3 dispatches in FP8 when it computes in FP8, and combines in BF16 (section 3.3).
    // Under sequence parallelism each TP rank sends only its 1/tp slice of the microbatch's tokens,
    // as Megatron-Core's token dispatcher does (the TP all-gather after it: layer_segments.cpp).
    const double share = s.sequence_parallel ? 1.0 / t : 1.0;
    const double dispatch_bytes = token_bytes(s.model.hidden, s.eight_bit_gemm_inputs() ? WireFormat::fp8 : WireFormat::bf16);
    const double bf16_bytes = token_bytes(s.model.hidden, WireFormat::bf16);
    MoeTrafficIds ids;
    ids.dispatch = add(moe_traffic("moe dispatch", ep_gpus, routes, s.moe.deepep, dispatch_bytes, false, share));
    ids.combine = add(moe_traffic("moe combine", ep_gpus, routes, s.moe.deepep, bf16_bytes, true, share));
    ids.dispatch_shaped_grad = dispatch_bytes == bf16_bytes
                                   ? ids.dispatch
                                   : add(moe_traffic("moe combine grad", ep_gpus, routes, s.moe.deepep, bf16_bytes, false, share));
    // The representative GPU computes the mean load and waits for the busiest: every rank's
    // timeline is the busiest's, and the breakdown shows the difference as imbalance.
    // With a capacity factor an expert computes at most its capacity and drops the rest (GShard).
    const std::optional<double> capacity = expert_capacity_tokens(s.model, double(tokens) * s.ep);
    const std::size_t per_rank = routes.expert_load.size() / static_cast<std::size_t>(s.ep);
    std::vector<double> rows(static_cast<std::size_t>(s.ep), 0);
    for (std::size_t e = 0; e < routes.expert_load.size(); ++e)
      rows[e / per_rank] += capacity ? std::min(routes.expert_load[e], *capacity) : routes.expert_load[e];
    double total = 0;
    for (double r : rows) total += r;
    const double busiest = *std::max_element(rows.begin(), rows.end());
    moe = moe_layer_segments(s, kernels, ids, {total / s.ep, busiest}, cp);
  }

  // A vision or speech encoder runs on the first stage, before the language model's layers: its
  // own layers (sequences of its own length, never split by context parallelism), then the
  // projection to the language model's width.
  std::optional<LayerSegments> encoder;
  if (s.model.encoder) {
    ScenarioSpec e = s;
    e.model = encoder_model(s.model);
    e.layout.cp = 1;
    e.zero_stage = std::min(s.zero_stage, 1);  // its per-layer collectives are not modelled
    encoder = dense_layer_segments(e, kernels);
  }

  // A GEMM outside the transformer layers (encoder projection, logits) as one compute step.
  auto timed = [&](const ComputeOp& op, const std::string& label) {
    return Segment{SegmentKind::compute, label, op_time(s.gpu, s.precision, op, kernels), Op::all_reduce, 0};
  };
  const ComputeOp logits = logits_forward_op(s.model, s.microbatch, t, layout.cp);
  const std::vector<ComputeOp> logits_bwd = backward_ops({logits});
  const CrossEntropyOps loss = cross_entropy_ops(s.model, s.microbatch, t, layout.cp);
  // The vocabulary-parallel embedding and output layer's TP collectives (Megatron's
  // VocabParallelEmbedding and parallel_lm_logits): the embedding's partial outputs are reduced
  // (reduce-scattered under SP); under SP the output layer gathers its input, and its input gradient
  // is reduced like a column-parallel linear's, beside the logits' weight gradient when the TP
  // backward is asynchronous; the cross-entropy all-reduces a max, a target logit and a sum per token.
  const bool sp_on = s.sequence_parallel;
  const Op tp_reduce = sp_on ? Op::reduce_scatter : Op::all_reduce;
  const std::string tp_reduce_name = sp_on ? "reduce-scatter" : "all-reduce";
  const Bytes per_token_float_bytes = static_cast<Bytes>(s.local_tokens()) * 4;
  // Without gradient accumulation fusion the embedding's and the output layer's weight gradients
  // are added to the gradient buffer each microbatch too.
  const Segment embedding_accumulation{
      SegmentKind::compute, "gradient accumulation",
      op_time(s.gpu, s.precision, gradient_accumulation_op(embedding_params, s.gradient_reduce_bytes()), kernels),
      Op::all_reduce, 0};
  for (int stage = 0; stage < stages; ++stage) {
    StagePlan sp;
    double params = 0, expert_params = 0;
    const int first = s.first_layer(stage);
    for (int l = first; l < first + s.stage_layers[static_cast<std::size_t>(stage)]; ++l) {
      const LayerSegments& layer = s.model.is_moe_layer(l) ? *moe : dense;
      const std::size_t f0 = sp.forward.size(), i0 = sp.backward_input.size(), w0 = sp.backward_weight.size();
      sp.forward.insert(sp.forward.end(), layer.forward.begin(), layer.forward.end());
      sp.backward_input.insert(sp.backward_input.end(), layer.recompute.begin(), layer.recompute.end());
      sp.backward_input.insert(sp.backward_input.end(), layer.backward_input.begin(), layer.backward_input.end());
      sp.backward_weight.insert(sp.backward_weight.end(), layer.backward_weight.begin(), layer.backward_weight.end());
      for (auto [list, from] : {std::pair(&sp.forward, f0), std::pair(&sp.backward_input, i0), std::pair(&sp.backward_weight, w0)})
        for (std::size_t k = from; k < list->size(); ++k) (*list)[k].layer = l;
      params += layer.params_on_gpu;
      expert_params += layer.expert_params_on_gpu;
    }
    if (stage == plan.embedding_stage) {
      params += embedding_params;
      if (t > 1) sp.forward.insert(sp.forward.begin(), tp_collective(tp_reduce, "embedding " + tp_reduce_name, tp_bytes));
      if (!s.gradient_accumulation_fusion) sp.backward_weight.push_back(embedding_accumulation);
    }
    if (stage == 0 && encoder) {
      std::vector<Segment> fwd, bwd_in, bwd_w;
      for (int l = 0; l < s.model.encoder->layers; ++l) {
        fwd.insert(fwd.end(), encoder->forward.begin(), encoder->forward.end());
        bwd_in.insert(bwd_in.begin(), encoder->backward_input.begin(), encoder->backward_input.end());
        bwd_in.insert(bwd_in.begin(), encoder->recompute.begin(), encoder->recompute.end());
        bwd_w.insert(bwd_w.end(), encoder->backward_weight.begin(), encoder->backward_weight.end());
        params += encoder->params_on_gpu;
      }
      const ComputeOp projector = encoder_projection_op(s.model, s.microbatch, t);
      fwd.push_back(timed(projector, "encoder projection"));
      for (const ComputeOp& op : backward_ops({projector}))
        (op.pass == OpPass::backward_weight ? bwd_w : bwd_in).push_back(timed(op, op.name));
      params += double(projector.shape.k) * double(projector.shape.n);
      sp.forward.insert(sp.forward.begin(), fwd.begin(), fwd.end());
      sp.backward_input.insert(sp.backward_input.end(), bwd_in.begin(), bwd_in.end());
      sp.backward_weight.insert(sp.backward_weight.end(), bwd_w.begin(), bwd_w.end());
    }
    if (stage == stages - 1) {
      // The output layer: logits GEMM and cross-entropy forward; backward, the cross-entropy's, the
      // logits' input gradient and its TP reduction first, the weight gradient with the others.
      std::vector<Segment> head_bwd;
      if (t > 1 && sp_on) sp.forward.push_back(tp_collective(Op::all_gather, "output all-gather", tp_bytes));
      sp.forward.push_back(timed(logits, "logits"));
      sp.forward.push_back(timed(loss.forward, "cross-entropy"));
      head_bwd.push_back(timed(loss.backward, "cross-entropy.bwd"));
      Seconds logits_wgrad_s = 0;
      for (const ComputeOp& op : logits_bwd) {
        const Segment seg = timed(op, op.name);
        if (op.pass == OpPass::backward_weight) logits_wgrad_s += seg.duration_s;
        (op.pass == OpPass::backward_weight ? sp.backward_weight : head_bwd).push_back(seg);
      }
      if (t > 1) {
        for (const char* what : {"max", "target logit", "sum"})
          sp.forward.push_back(tp_collective(Op::all_reduce, std::string("cross-entropy ") + what + " all-reduce", per_token_float_bytes));
        head_bwd.push_back(tp_collective(tp_reduce, "output input-grad " + tp_reduce_name, tp_bytes, 0,
                                         s.overlap_tp_backward ? logits_wgrad_s : 0));
      }
      sp.backward_input.insert(sp.backward_input.begin(), head_bwd.begin(), head_bwd.end());
      if (!s.gradient_accumulation_fusion) sp.backward_weight.push_back(embedding_accumulation);
      if (!s.model.tied_embeddings || stage > plan.embedding_stage) params += embedding_params;
      // Multi-token prediction after the head, as DeepSeek-V3 placed it; its backward runs first.
      if (s.model.mtp_depth > 0) {
        const LayerSegments mtp = mtp_module_segments(s, kernels, s.model.is_moe_layer(s.model.layers - 1) ? *moe : dense);
        for (int d = 0; d < s.model.mtp_depth; ++d) {
          sp.forward.insert(sp.forward.end(), mtp.forward.begin(), mtp.forward.end());
          sp.backward_input.insert(sp.backward_input.begin(), mtp.backward_input.begin(), mtp.backward_input.end());
          sp.backward_weight.insert(sp.backward_weight.end(), mtp.backward_weight.begin(), mtp.backward_weight.end());
          params += mtp.params_on_gpu;
          expert_params += mtp.expert_params_on_gpu;
        }
      }
    }
    sp.activation_bytes = tp_bytes / static_cast<Bytes>(t);
    sp.gradient_bytes = static_cast<Bytes>(params * plan.gradient_bytes_per_param);
    sp.expert_gradient_bytes = static_cast<Bytes>(expert_params * plan.gradient_bytes_per_param);
    plan.stages.push_back(std::move(sp));
  }

  double params_per_rank_max = 0;
  for (int r = 0; r < p; ++r) {
    ParallelLayout::Coord c;
    c.pp = r;
    const int rank = layout.rank(c);
    plan.rank_gpu.push_back(rank);
    plan.tp_group.push_back(layout.group(rank, Dim::tp));
    plan.cp_group.push_back(layout.group(rank, Dim::cp));
    // Gradients are reduced over every rank holding the same weights: data parallel and context
    // parallel ranks alike; a rank's experts are replicated on every ep-th data-parallel rank.
    std::vector<int> dp_cp, expert_dp;
    for (int cp_rank : plan.cp_group.back()) {
      const std::vector<int> dp = layout.group(cp_rank, Dim::dp);
      dp_cp.insert(dp_cp.end(), dp.begin(), dp.end());
      for (std::size_t i = 0; i < dp.size(); i += static_cast<std::size_t>(s.ep)) expert_dp.push_back(dp[i]);
    }
    plan.dp_group.push_back(dp_cp);
    plan.expert_dp_group.push_back(expert_dp);
    // The same groups for every TP rank, and every expert-parallel rank's expert replicas.
    std::vector<std::vector<int>> dp_groups, expert_groups;
    for (int tp_rank : plan.tp_group.back()) {
      std::vector<std::vector<int>> dp_by_cp;
      for (int cp_rank : layout.group(tp_rank, Dim::cp)) dp_by_cp.push_back(layout.group(cp_rank, Dim::dp));
      std::vector<int>& all = dp_groups.emplace_back();
      for (const auto& dp : dp_by_cp) all.insert(all.end(), dp.begin(), dp.end());
      if (!s.model.moe) continue;
      for (int e = 0; e < s.ep; ++e) {
        std::vector<int>& replicas = expert_groups.emplace_back();
        for (const auto& dp : dp_by_cp)
          for (std::size_t i = static_cast<std::size_t>(e); i < dp.size(); i += static_cast<std::size_t>(s.ep))
            replicas.push_back(dp[i]);
      }
    }
    plan.dp_groups.push_back(std::move(dp_groups));
    plan.expert_dp_groups.push_back(std::move(expert_groups));
    double params = 0;
    for (int chunk = 0; chunk < v; ++chunk) {
      const StagePlan& held = plan.stages[plan.schedule->chunk_stage(plan.shape, r, chunk)];
      // ZeRO-1 shards dense state over dp and expert state over the dp / ep expert replicas.
      const bool zero1 = s.distributed_optimizer;
      const double width = plan.gradient_bytes_per_param;
      params += static_cast<double>(held.gradient_bytes) / width / (zero1 ? layout.dp * layout.cp : 1) +
                static_cast<double>(held.expert_gradient_bytes) / width / (zero1 ? layout.dp / s.ep * layout.cp : 1);
    }
    params_per_rank_max = std::max(params_per_rank_max, params);
  }
  // Every GPU by (replica, pipeline rank, member): the data-parallel index, then tp x cp.
  plan.replicas = layout.dp;
  if (s.model.moe) plan.expert_parallel = s.ep;
  for (int d = 0; d < layout.dp; ++d)
    for (int r = 0; r < p; ++r) {
      std::vector<int>& unit = plan.unit_gpus.emplace_back();
      for (int c = 0; c < layout.cp; ++c)
        for (int tp_rank = 0; tp_rank < t; ++tp_rank) {
          ParallelLayout::Coord at;
          at.tp = tp_rank;
          at.cp = c;
          at.dp = d;
          at.pp = r;
          unit.push_back(layout.rank(at));
        }
    }
  plan.optimizer_s = op_time(s.gpu, s.precision,
                             optimizer_op(params_per_rank_max, s.gradient_reduce_bytes(), s.precision == "fp16", s.optimizer_state_element_bytes()), kernels);
  plan.channels = 2 * s.cluster.node.nics;
  plan.nccl_tuner = s.nccl_tuner;
  if (!s.pinned_algorithm.empty()) plan.pinned = find_algorithm(s.pinned_algorithm);
  // NCCL runs one CUDA block per channel, each on an SM of its own (NCCL's NCCL_MIN_NCHANNELS: more
  // channels, more blocks, more of the GPU's compute); DeepEP's kernels hold 20 SMs (DeepSeek-V3,
  // arXiv:2412.19437 section 3.2.2: 20 of the H800's 132 saturate IB and NVLink; DeepEP's
  // Buffer.num_sms defaults to 20).
  plan.nccl_sm_share = s.gpu.sm_share(plan.channels);
  plan.deepep_sm_share = s.moe.deepep ? s.gpu.sm_share(DeepEpKernel{}.sms) : 0;
  if (s.model.tied_embeddings && stages - 1 > plan.embedding_stage)
    plan.embedding_sync_bytes = static_cast<Bytes>(embedding_params * plan.gradient_bytes_per_param);
  return plan;
}

}  // namespace clustersim
