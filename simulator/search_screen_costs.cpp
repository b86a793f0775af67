// The screen's costs, computed once and cached: per-layer pass times of a (tp, cp, microbatch,
// recompute, ZeRO, ep) from one small probe plan, collectives at NCCL's closed-form cost, pipeline
// transfers, and each schedule's table replayed once per (pipeline ranks, microbatches, chunks).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "collectives/nccl_closed_form.hpp"
#include "collectives/tuner_nccl.hpp"
#include "simulator/heterogeneous.hpp"
#include "simulator/pass_times.hpp"
#include "simulator/search_screen_state.hpp"
#include "workloads/model_math.hpp"

namespace clustersim {

Seconds screen_transfer_s(const Cluster& cluster, int a, int b, Bytes bytes, int channels) {
  if (bytes == 0 || a == b) return 0;
  const NcclTopology topo = nccl_topology(cluster, {a, b}, channels);
  const double GBps = topo.nodes > 1 ? topo.inter_GBps : topo.intra_GBps;
  return GBps > 0 ? static_cast<double>(bytes) / (GBps * 1e9) : 0;
}

namespace {

bool splits_backward(const Schedule& s) {
  const ScheduleShape shape{4, 8, s.chunks_required() > 0 ? s.chunks_required() : 2, 0};
  if (s.not_applicable(shape)) return false;
  for (const PassOp& op : s.rank_ops(shape, 0))
    if (op.kind == PassKind::backward_weight) return true;
  return false;
}

}  // namespace

Screen::State::State(const ScenarioSpec& s) : base(s), cluster(build_cluster(s.cluster)), gpus(s.gpus()) {
  channels = 2 * s.cluster.node.nics;
  nccl_share = s.gpu.sm_share(channels);
  peak_flops = *s.gpu.peak_flops(s.precision);
  if (s.heterogeneous()) {
    models.emplace(s.cluster.gpu, &base.gpu);
    for (const auto& [name, model] : base.group_gpus) models.emplace(name, &model);
    double sum = 0;
    for (int n = 0; n * s.cluster.node.gpus < gpus; ++n)
      sum += *s.gpu_of_node(s.node_of(n * s.cluster.node.gpus)).peak_flops(s.precision) *
             std::min(s.cluster.node.gpus, gpus - n * s.cluster.node.gpus);
    peak_flops = sum / gpus;
  }
  tokens_per_iteration = static_cast<double>(s.global_batch) * s.model.seq_len;
  flops_per_token = model_flops_per_token(s.model);
}

Seconds Screen::State::collective_s(Op op, const std::vector<int>& group, Bytes bytes, bool tuned) {
  if (bytes == 0 || group.size() < 2) return 0;
  auto key = std::make_tuple(static_cast<int>(op), group, bytes, tuned);
  if (auto it = collectives.find(key); it != collectives.end()) return it->second;
  const Seconds t = nccl_closed_form_s(cluster, op, group, bytes, channels, tuned);
  collectives.emplace(key, t);
  return t;
}

ScenarioSpec Screen::State::with(const Configuration& c, int pp_override) const {
  ScenarioSpec s = base;
  s.layout.tp = c.tp;
  s.layout.cp = c.cp;
  s.layout.pp = pp_override > 0 ? pp_override : c.pp;
  s.layout.dp = gpus / (c.tp * c.cp * s.layout.pp);
  s.ep = c.ep;
  s.microbatch = c.microbatch;
  s.recompute = c.recompute;
  if (c.recompute != base.recompute) s.recompute_modules = {};
  s.zero_stage = c.zero_stage;
  s.distributed_optimizer = c.zero_stage >= 1;
  if (c.zero_stage != 3) s.reshard_after_forward = true;
  if (c.zero_stage >= 2) s.overlap_grad_reduce = true;
  return s;
}

const RawCosts& Screen::State::raw_costs(const Configuration& c) {
  auto key = std::make_tuple(c.tp, c.cp, c.microbatch, static_cast<int>(c.recompute), c.zero_stage, c.ep);
  if (auto it = raw.find(key); it != raw.end()) return *it->second;
  ScenarioSpec s = with(c, 1);
  s.virtual_stages = 1;
  s.schedule = find_schedule("1f1b");
  s.schedule_name = "1f1b";
  s.global_batch = s.microbatch * s.layout.dp;
  // Every layer of a kind has the same segments: the probe builds one of each (MoE models: the
  // dense layers before the first MoE layer, then one MoE layer), so its plan is small.
  s.model.layers = s.model.moe ? s.model.moe->dense_layers + 1 : 1;
  s.stage_layers = {s.model.layers};
  auto out = std::make_shared<RawCosts>();
  out->plan = plan_iteration(s);
  const StagePlan& sp = out->plan.stages.front();
  const ModelSpec& m = s.model;
  const int dense_layer = m.moe ? (m.moe->dense_layers > 0 ? 0 : -2) : 0;
  const int moe_layer = m.moe ? m.moe->dense_layers : -2;
  // The probe's segments into one dense layer, one MoE layer, the first stage's and the last's.
  auto split_into = [&](RawCosts& into, const StagePlan& stage) {
    auto split = [&](const std::vector<Segment>& list, std::vector<Segment> SegmentLists::*field, bool leading_is_first) {
      bool seen_layer = false;
      int accumulations = 0;
      for (const Segment& seg : list) {
        if (seg.layer >= 0) {
          seen_layer = true;
          if (seg.layer == dense_layer) (into.dense.*field).push_back(seg);
          if (seg.layer == moe_layer) (into.moe.*field).push_back(seg);
          continue;
        }
        bool first = seen_layer ? !leading_is_first : leading_is_first;
        if (field == &SegmentLists::bw) first = seg.label == "gradient accumulation" && accumulations++ == 0;
        ((first ? into.first : into.last).*field).push_back(seg);
      }
    };
    split(stage.forward, &SegmentLists::f, true);
    split(stage.backward_input, &SegmentLists::bi, false);
    split(stage.backward_weight, &SegmentLists::bw, false);
  };
  split_into(*out, sp);
  // Each GPU model's compute for the same segments: what apply_gpu_models turns into a speed.
  for (const auto& [name, gpu] : models) {
    RawCosts other;
    const RawCosts* on = out.get();
    if (gpu != &base.gpu) {
      ScenarioSpec there = s;
      there.gpu = *gpu;
      other.plan = plan_iteration(there);
      split_into(other, other.plan.stages.front());
      on = &other;
    }
    auto compute = [](const SegmentLists& l) { return segments_compute_s(l.f) + segments_compute_s(l.bi) + segments_compute_s(l.bw); };
    out->compute_on[name] = {compute(on->dense), compute(on->moe), compute(on->first), compute(on->last)};
  }
  out->embedding_params = static_cast<double>(m.vocab) * m.hidden / c.tp;
  const double w = out->plan.gradient_bytes_per_param;
  const int moe_layers = m.moe ? m.layers - m.moe->dense_layers : 0;
  const int probe_moe_layers = m.moe ? 1 : 0;
  // The probe's one stage is both first and last: it holds the output layer's own copy of the
  // embedding too unless the two are tied.
  const double embedding_copies = m.tied_embeddings ? 1 : 2;
  out->dense_params_per_layer =
      (static_cast<double>(sp.gradient_bytes) / w - embedding_copies * out->embedding_params) / s.model.layers;
  out->expert_params_per_moe_layer = moe_layers > 0 ? static_cast<double>(sp.expert_gradient_bytes) / w / probe_moe_layers : 0;
  out->activation_bytes = sp.activation_bytes;
  out->p2p_gather_bytes = out->plan.p2p_gather_bytes;
  return *raw.emplace(key, out).first->second;
}

std::pair<Seconds, Seconds> Screen::State::timed(const RawCosts& raw, const std::vector<Segment>& list, bool weight_in_pass,
                                                 const std::vector<int>& tp_group, const std::vector<int>& cp_group,
                                                 const std::vector<int>& dp_group, const std::vector<int>& expert_group,
                                                 std::map<int, Seconds>& zero_hiding) {
  Seconds total = 0, waits = 0;
  for (const Segment& s : list) {
    Seconds d = s.duration_s, comm = 0, hidden = s.hidden_s;
    bool waits_here = is_wait(s.kind);
    switch (s.kind) {
      case SegmentKind::tp_comm:
        comm = collective_s(s.tp_op, tp_group, s.tp_bytes, base.nccl_tuner);
        hidden = s.hidden_s + (weight_in_pass ? s.hidden_by_weight_s : 0);
        d = std::max(0.0, comm - hidden);
        break;
      case SegmentKind::ep_comm:
      case SegmentKind::cp_comm:
        if (s.traffic >= 0) {
          const GroupTraffic& t = raw.plan.traffic[static_cast<std::size_t>(s.traffic)];
          // The busiest sender's bytes over the bandwidth NCCL's model gives its group.
          double bytes = 0;
          for (const auto* rows : {&t.bytes, &t.network_bytes})
            for (const auto& row : *rows) bytes = std::max(bytes, std::accumulate(row.begin(), row.end(), 0.0));
          const std::vector<int>& group = s.kind == SegmentKind::cp_comm ? cp_group : expert_group;
          const NcclTopology topo = nccl_topology(cluster, group.size() > 1 ? group : tp_group, channels);
          const double per_rank_GBps = topo.nodes > 1 ? topo.inter_GBps * topo.nodes / std::max(1, topo.ranks)
                                                      : topo.intra_GBps;
          comm = per_rank_GBps > 0 ? bytes / (per_rank_GBps * 1e9) : 0;
          if (s.kind == SegmentKind::cp_comm) {
            d = s.repeat * std::max(0.0, comm - s.hidden_s);
            total += s.repeat * interference_s(comm, s.hidden_s, nccl_share);
          } else {
            d = comm;
          }
        } else {
          d = comm = collective_s(s.tp_op, cp_group, s.tp_bytes, base.nccl_tuner);
        }
        hidden = 0;
        break;
      case SegmentKind::dp_comm:
        comm = collective_s(s.tp_op, s.group == CommGroup::expert_dp ? expert_group : dp_group, s.tp_bytes, base.nccl_tuner);
        hidden = zero_hidden_s(comm, s.hidden_s, zero_hiding[s.layer]);
        d = std::max(0.0, comm - hidden);
        break;
      default:
        break;
    }
    total += d;
    if (waits_here) waits += d;
    if (s.kind == SegmentKind::tp_comm || s.kind == SegmentKind::dp_comm) total += interference_s(comm, hidden, nccl_share);
  }
  return {total, waits};
}

PassCost Screen::State::pass_cost(const RawCosts& raw, const SegmentLists& l, const std::vector<int>& tp,
                                  const std::vector<int>& cp, const std::vector<int>& dp, const std::vector<int>& ex) {
  PassCost c;
  std::map<int, Seconds> f_zero, b_zero, bi_zero, w_zero;  // each pass's own: a whole backward's lists share one
  std::tie(c.f, c.f_wait) = timed(raw, l.f, false, tp, cp, dp, ex, f_zero);
  const auto [bi_full, bi_full_wait] = timed(raw, l.bi, true, tp, cp, dp, ex, b_zero);
  std::tie(c.bi, c.bi_wait) = timed(raw, l.bi, false, tp, cp, dp, ex, bi_zero);
  std::tie(c.w, c.w_wait) = timed(raw, l.bw, false, tp, cp, dp, ex, w_zero);
  // The weight gradients after a whole backward's input gradients: only ZeRO's collectives (which
  // the input gradients' have left less compute to hide) make them differ from a pass of their own.
  const auto [w_after, w_after_wait] = b_zero.empty() ? std::pair(c.w, c.w_wait) : timed(raw, l.bw, false, tp, cp, dp, ex, b_zero);
  c.b = bi_full + w_after;
  c.b_wait = bi_full_wait + w_after_wait;
  return c;
}

const ReplayShape* Screen::State::replay_shape(const Schedule& s, int p, int m, int v) {
  auto key = std::make_tuple(&s, p, m, v);
  if (auto it = replays.find(key); it != replays.end()) return it->second ? &*it->second : nullptr;
  std::optional<ReplayShape> out;
  const ScheduleShape shape{p, m, v, 0};
  if (!s.not_applicable(shape)) {
    const bool splits = split.count(&s) ? split[&s] : (split[&s] = splits_backward(s));
    const ScheduleTiming t = replay(s, shape, 1.0, 2.0, splits ? 1.0 : 0.0);
    out = ReplayShape{t.makespan_s, t.peak_in_flight_microbatches, t.peak_held_by_chunk};
    if (splits) {  // memory's peaks as training_run counts them: the table replayed with W = 0
      const ScheduleTiming mem = replay(s, shape, 1.0, 2.0);
      out->in_flight = mem.peak_in_flight_microbatches;
      out->held_by_chunk = mem.peak_held_by_chunk;
    }
  }
  const auto& kept = replays.emplace(key, std::move(out)).first->second;
  return kept ? &*kept : nullptr;
}

void Screen::State::resolve(LayoutPoint& point) {
  const Configuration& c = point.config;
  point.raw = &raw_costs(c);
  const RawCosts& raw = *point.raw;
  // This layout's groups, as plan_iteration forms them for pipeline rank 0.
  ParallelLayout& layout = point.layout;
  layout = base.layout;
  layout.tp = c.tp, layout.cp = c.cp, layout.pp = c.pp, layout.dp = c.dp;
  const int r0 = layout.rank({});
  const std::vector<int> tp_group = layout.group(r0, Dim::tp), cp_group = layout.group(r0, Dim::cp);
  std::vector<int>& dp_group = point.dp_group;
  std::vector<int> expert_group;
  dp_group.clear();
  for (int cp_rank : cp_group) {
    const std::vector<int> dp = layout.group(cp_rank, Dim::dp);
    dp_group.insert(dp_group.end(), dp.begin(), dp.end());
    for (std::size_t i = 0; i < dp.size(); i += static_cast<std::size_t>(c.ep)) expert_group.push_back(dp[i]);
  }
  Resolved& res = point.costs;
  res.dense = pass_cost(raw, raw.dense, tp_group, cp_group, dp_group, expert_group);
  res.moe = pass_cost(raw, raw.moe, tp_group, cp_group, dp_group, expert_group);
  res.first = pass_cost(raw, raw.first, tp_group, cp_group, dp_group, expert_group);
  res.last = pass_cost(raw, raw.last, tp_group, cp_group, dp_group, expert_group);
  ParallelLayout::Coord next;
  next.pp = c.pp > 1 ? 1 : 0;
  // Each pipeline rank's GPU models, over the GPUs the rank holds in this layout.
  point.rank_models.clear();
  if (!models.empty()) {
    point.rank_models.resize(static_cast<std::size_t>(c.pp));
    for (int g = 0; g < gpus; ++g) {
      auto& held = point.rank_models[static_cast<std::size_t>(layout.coord(g).pp)];
      const std::string& name = base.gpu_name_of_node(base.node_of(g));
      if (std::find(held.begin(), held.end(), name) == held.end()) held.push_back(name);
    }
  }
  point.p2p_s = transfer_s(r0, layout.rank(next), raw.activation_bytes) +
                (raw.p2p_gather_bytes > 0 ? collective_s(Op::all_gather, tp_group, raw.p2p_gather_bytes, base.nccl_tuner) : 0);
}

}  // namespace clustersim
