#include "simulator/search_screen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <tuple>

#include "collectives/nccl_closed_form.hpp"
#include "collectives/tuner_nccl.hpp"
#include "simulator/pass_times.hpp"
#include "topologies/cluster.hpp"
#include "topologies/user_error.hpp"
#include "workloads/model_math.hpp"
#include "workloads/plan_iteration.hpp"

namespace clustersim {

Seconds screen_transfer_s(const Cluster& cluster, int a, int b, Bytes bytes, int channels) {
  if (bytes == 0 || a == b) return 0;
  const NcclTopology topo = nccl_topology(cluster, {a, b}, channels);
  const double GBps = topo.nodes > 1 ? topo.inter_GBps : topo.intra_GBps;
  return GBps > 0 ? static_cast<double>(bytes) / (GBps * 1e9) : 0;
}

const std::vector<std::string>& search_dimensions() {
  static const std::vector<std::string> dims{"tp", "pp", "dp", "cp", "ep", "vpp", "microbatch", "recompute", "zero", "schedule"};
  return dims;
}

namespace {

std::vector<int> powers_of_two(int up_to) {
  std::vector<int> out;
  for (int v = 1; v <= up_to; v *= 2) out.push_back(v);
  return out;
}

bool has(const std::vector<std::string>& vary, const char* d) { return std::find(vary.begin(), vary.end(), d) != vary.end(); }

const char* recompute_name(Recompute r) {
  return r == Recompute::none ? "none" : r == Recompute::selective ? "selective" : "full";
}

/// One pass kind's time on one GPU for one microbatch, and how much of it is waiting on others.
struct PassCost {
  Seconds f = 0, b = 0, bi = 0, w = 0;           // forward, full backward, input gradient, weight gradient
  Seconds f_wait = 0, b_wait = 0, bi_wait = 0, w_wait = 0;
  PassCost& operator+=(const PassCost& o) {
    f += o.f, b += o.b, bi += o.bi, w += o.w;
    f_wait += o.f_wait, b_wait += o.b_wait, bi_wait += o.bi_wait, w_wait += o.w_wait;
    return *this;
  }
};
PassCost operator*(double k, PassCost c) {
  c.f *= k, c.b *= k, c.bi *= k, c.w *= k;
  c.f_wait *= k, c.b_wait *= k, c.bi_wait *= k, c.w_wait *= k;
  return c;
}

/// The segments of one pp = 1 plan, split into one dense layer, one MoE layer, and what only the
/// first and the last stage run (embedding; output layer, loss, MTP).
struct SegmentLists {
  std::vector<Segment> f, bi, bw;
};
struct RawCosts {
  IterationPlan plan;  // of the pp = 1 probe: its traffic and groups
  SegmentLists dense, moe, first, last;
  double dense_params_per_layer = 0, expert_params_per_moe_layer = 0, embedding_params = 0;
  Bytes activation_bytes = 0;  // per GPU, sent between stages
  Bytes p2p_gather_bytes = 0;
};

struct Resolved {
  PassCost dense, moe, first, last;
};

struct ReplayShape {
  double makespan_units = 0;  // with F = 1, B = 2 (W = 1 where the schedule splits backward)
  std::vector<double> in_flight;              // per rank
  std::vector<std::vector<int>> held_by_chunk;  // per rank and chunk
};

bool splits_backward(const Schedule& s) {
  const ScheduleShape shape{4, 8, s.chunks_required() > 0 ? s.chunks_required() : 2, 0};
  if (s.not_applicable(shape)) return false;
  for (const PassOp& op : s.rank_ops(shape, 0))
    if (op.kind == PassKind::backward_weight) return true;
  return false;
}

}  // namespace

struct Screen::State {
  ScenarioSpec base;
  Cluster cluster;
  int gpus = 0;
  int channels = 2;
  double nccl_share = 0;
  double peak_flops = 0;
  std::map<std::tuple<int, int, int, int, int, int>, std::shared_ptr<RawCosts>> raw;
  std::map<std::tuple<const Schedule*, int, int, int>, std::optional<ReplayShape>> replays;
  std::map<std::tuple<int, std::vector<int>, Bytes, bool>, Seconds> collectives;  // (op, group, bytes, tuned)
  std::map<const Schedule*, bool> split;

  explicit State(const ScenarioSpec& s) : base(s), cluster(build_cluster(s.cluster)), gpus(s.gpus()) {
    channels = 2 * s.cluster.node.nics;
    nccl_share = s.gpu.sm_share(channels);
    peak_flops = *s.gpu.peak_flops(s.precision);
  }

  /// A collective's closed-form time: what NCCL's tuner predicts for its pick (TP, CP, ZeRO:
  /// the engine times that pick), or NCCL's ring with Simple (data-parallel gradients, which the
  /// engine always runs so).
  Seconds collective_s(Op op, const std::vector<int>& group, Bytes bytes, bool tuned) {
    if (bytes == 0 || group.size() < 2) return 0;
    auto key = std::make_tuple(static_cast<int>(op), group, bytes, tuned);
    if (auto it = collectives.find(key); it != collectives.end()) return it->second;
    const Seconds t = nccl_closed_form_s(cluster, op, group, bytes, channels, tuned);
    collectives.emplace(key, t);
    return t;
  }

  /// A point-to-point transfer of `bytes` from GPU a to GPU b (screen_transfer_s).
  Seconds transfer_s(int a, int b, Bytes bytes) { return screen_transfer_s(cluster, a, b, bytes, channels); }

  /// The scenario with a configuration's layout (nothing else of it checked or resolved).
  ScenarioSpec with(const Configuration& c, int pp_override = 0) const {
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

  const RawCosts& raw_costs(const Configuration& c) {
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
    auto split = [&](const std::vector<Segment>& list, std::vector<Segment> SegmentLists::*field, bool leading_is_first) {
      bool seen_layer = false;
      int accumulations = 0;
      for (const Segment& seg : list) {
        if (seg.layer >= 0) {
          seen_layer = true;
          if (seg.layer == dense_layer) (out->dense.*field).push_back(seg);
          if (seg.layer == moe_layer) (out->moe.*field).push_back(seg);
          continue;
        }
        bool first = seen_layer ? !leading_is_first : leading_is_first;
        if (field == &SegmentLists::bw) first = seg.label == "gradient accumulation" && accumulations++ == 0;
        ((first ? out->first : out->last).*field).push_back(seg);
      }
    };
    split(sp.forward, &SegmentLists::f, true);
    split(sp.backward_input, &SegmentLists::bi, false);
    split(sp.backward_weight, &SegmentLists::bw, false);
    out->embedding_params = static_cast<double>(m.vocab) * m.hidden / c.tp;
    const double w = out->plan.gradient_bytes_per_param;
    const int moe_layers = m.moe ? m.layers - m.moe->dense_layers : 0;
    const int probe_moe_layers = m.moe ? 1 : 0;
    out->dense_params_per_layer = (static_cast<double>(sp.gradient_bytes) / w - out->embedding_params) / s.model.layers;
    out->expert_params_per_moe_layer = moe_layers > 0 ? static_cast<double>(sp.expert_gradient_bytes) / w / probe_moe_layers : 0;
    out->activation_bytes = sp.activation_bytes;
    out->p2p_gather_bytes = out->plan.p2p_gather_bytes;
    return *raw.emplace(key, out).first->second;
  }

  /// One list of segments timed as PassTimes::pass times it, with closed-form communication.
  std::pair<Seconds, Seconds> timed(const RawCosts& raw, const std::vector<Segment>& list, bool weight_in_pass,
                                    const std::vector<int>& tp_group, const std::vector<int>& cp_group,
                                    const std::vector<int>& dp_group, const std::vector<int>& expert_group) {
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
          d = std::max(0.0, comm - s.hidden_s);
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

  PassCost pass_cost(const RawCosts& raw, const SegmentLists& l, const std::vector<int>& tp, const std::vector<int>& cp,
                     const std::vector<int>& dp, const std::vector<int>& ex) {
    PassCost c;
    std::tie(c.f, c.f_wait) = timed(raw, l.f, false, tp, cp, dp, ex);
    const auto [bi_full, bi_full_wait] = timed(raw, l.bi, true, tp, cp, dp, ex);
    std::tie(c.bi, c.bi_wait) = timed(raw, l.bi, false, tp, cp, dp, ex);
    std::tie(c.w, c.w_wait) = timed(raw, l.bw, false, tp, cp, dp, ex);
    c.b = bi_full + c.w;
    c.b_wait = bi_full_wait + c.w_wait;
    return c;
  }

  /// The cached replay (nullptr when the schedule cannot run the shape); its address stays valid.
  const ReplayShape* replay_shape(const Schedule& s, int p, int m, int v) {
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
};

Screen::Screen(const ScenarioSpec& base) : state_(std::make_unique<State>(base)) {
  if (base.model.encoder)
    throw UserError(base.file, 0, "model", "expected a model without an encoder: search does not screen multimodal models yet");
}
Screen::~Screen() = default;

std::vector<std::string> Configuration::overrides() const {
  std::vector<std::string> out{
      "parallel.tp=" + std::to_string(tp), "parallel.pp=" + std::to_string(pp), "parallel.dp=" + std::to_string(dp),
      "parallel.cp=" + std::to_string(cp), "parallel.ep=" + std::to_string(ep),
      "parallel.virtual_stages=" + std::to_string(virtual_stages), "microbatch=" + std::to_string(microbatch),
      std::string("recompute=") + recompute_name(recompute), "parallel.zero_stage=" + std::to_string(zero_stage),
      std::string("parallel.distributed_optimizer=") + (zero_stage >= 1 ? "true" : "false"),
      "schedule=" + schedule->name()};
  return out;
}

std::string Configuration::text() const {
  return fmt::format("tp {} pp {} dp {}{}{} v {} mb {} {} zero {} {}", tp, pp, dp, cp > 1 ? fmt::format(" cp {}", cp) : "",
                     ep > 1 ? fmt::format(" ep {}", ep) : "", virtual_stages, microbatch, recompute_name(recompute),
                     zero_stage, schedule->name());
}

SearchSpace search_space(const ScenarioSpec& s, const std::vector<std::string>& vary) {
  SearchSpace out;
  const int gpus = s.gpus();
  const int node = s.cluster.node.gpus;
  auto fixed_or = [&](const char* dim, int own, std::vector<int> all) { return has(vary, dim) ? all : std::vector<int>{own}; };
  out.tp = fixed_or("tp", s.layout.tp, powers_of_two(std::min(node, gpus)));
  std::vector<int> divisors;
  for (int d = 1; d <= std::min(gpus, s.model.layers); ++d)
    if (gpus % d == 0) divisors.push_back(d);
  out.pp = fixed_or("pp", s.layout.pp, divisors);
  out.cp = fixed_or("cp", s.layout.cp, powers_of_two(std::min(16, gpus)));
  out.ep = fixed_or("ep", s.ep, s.model.moe ? powers_of_two(std::min(s.model.moe->routed_experts, gpus)) : std::vector<int>{1});
  out.virtual_stages = fixed_or("vpp", s.virtual_stages, {1, 2, 3, 4, 6, 8});
  std::vector<int> micro;
  for (int b : powers_of_two(16))
    if (b <= s.global_batch) micro.push_back(b);
  out.microbatch = fixed_or("microbatch", s.microbatch, micro);
  out.zero_stage = fixed_or("zero", s.zero_stage, {0, 1, 2, 3});
  out.recompute = has(vary, "recompute") ? std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full}
                                         : std::vector<Recompute>{s.recompute};
  out.schedules = has(vary, "schedule") ? all_schedules() : std::vector<const Schedule*>{s.schedule};
  // dp is what the GPUs leave: varying it alone changes nothing, so it is varied through pp (and tp, cp).
  if (has(vary, "dp") && !has(vary, "pp")) out.pp = divisors;
  return out;
}

ScreenResult Screen::run(const SearchSpace& space, const std::function<void(long, long)>& progress) {
  State& st = *state_;
  const ScenarioSpec& base = st.base;
  const ModelSpec& model = base.model;
  const int gpus = st.gpus;
  ScreenResult result;
  const long total = static_cast<long>(space.tp.size() * space.cp.size() * space.pp.size() * space.ep.size() *
                                       space.microbatch.size() * space.recompute.size() * space.zero_stage.size() *
                                       space.virtual_stages.size() * space.schedules.size());
  result.candidates = total;
  const char* rules[] = {"gpus", "layout", "expert parallelism", "batch", "sequence parallelism", "zero", "schedule", "memory"};
  result.removed.resize(std::size(rules));
  for (std::size_t i = 0; i < std::size(rules); ++i) result.removed[i].rule = rules[i];
  long done = 0;
  auto remove = [&](int rule, long count, const std::function<std::string()>& why) {
    ScreenRemoval& r = result.removed[static_cast<std::size_t>(rule)];
    if (r.count == 0) r.example = why();
    r.count += count;
    done += count;
  };
  const long per_ep_block = static_cast<long>(space.microbatch.size() * space.recompute.size() * space.zero_stage.size() *
                                              space.virtual_stages.size() * space.schedules.size());
  const long per_mb = per_ep_block / static_cast<long>(space.microbatch.size());
  const double tokens_per_iteration = static_cast<double>(base.global_batch) * model.seq_len;
  const double flops_per_token = model_flops_per_token(model);
  ScenarioSpec probe = base;
  long last_report = 0;

  for (int tp : space.tp)
    for (int cp : space.cp)
      for (int pp : space.pp) {
        const long block = per_ep_block * static_cast<long>(space.ep.size());
        ModelSpec local = model;  // what one context-parallel rank holds of each sequence
        local.seq_len = model.seq_len / cp;
        Configuration c;
        c.tp = tp, c.cp = cp, c.pp = pp;
        if (gpus % (tp * cp * pp) != 0) {
          remove(0, block, [&] { return fmt::format("tp {} x cp {} x pp {} does not divide the {} GPUs", tp, cp, pp, gpus); });
          continue;
        }
        c.dp = gpus / (tp * cp * pp);
        probe.layout.tp = tp, probe.layout.cp = cp, probe.layout.pp = pp, probe.layout.dp = c.dp;
        if (auto p = layout_problem(probe, gpus, false)) {
          remove(1, block, [&] { return fmt::format("tp {} cp {} pp {}: parallel{}: {}", tp, cp, pp, p->field.empty() ? "" : "." + p->field, p->expected); });
          continue;
        }
        for (int ep : space.ep) {
          c.ep = ep;
          if (model.moe ? (c.dp % ep != 0 || model.moe->routed_experts % ep != 0) : ep != 1) {
            remove(2, per_ep_block, [&] {
              return model.moe ? fmt::format("ep {} must divide dp {} and the {} routed experts", ep, c.dp, model.moe->routed_experts)
                               : fmt::format("ep {}: {} has no MoE layers", ep, model.name);
            });
            continue;
          }
          for (int mb : space.microbatch) {
            c.microbatch = mb;
            const long per_step = static_cast<long>(mb) * c.dp;
            if (base.global_batch % per_step != 0) {
              remove(3, per_mb, [&] {
                return fmt::format("global_batch {} is not a multiple of microbatch x dp ({} x {})", base.global_batch, mb, c.dp);
              });
              continue;
            }
            const int m = static_cast<int>(base.global_batch / per_step);
            if (base.sequence_parallel && (long(mb) * model.seq_len / cp) % tp != 0) {
              remove(4, per_mb, [&] { return fmt::format("tp {} does not divide the {} tokens of a microbatch on a GPU", tp, long(mb) * model.seq_len / cp); });
              continue;
            }
            for (Recompute rc : space.recompute)
              for (int zero : space.zero_stage) {
                c.recompute = rc, c.zero_stage = zero;
                if (zero >= 2 && !base.overlap_grad_reduce) {  // as load_scenario: ZeRO-2/3 reduce during the backward
                  remove(5, static_cast<long>(space.virtual_stages.size() * space.schedules.size()), [&] {
                    return fmt::format("zero {} needs parallel.overlap_grad_reduce: true (ZeRO-2 and 3 reduce-scatter each layer's gradients during the backward)", zero);
                  });
                  continue;
                }
                const RawCosts& raw = st.raw_costs(c);
                // This layout's groups, as plan_iteration forms them for pipeline rank 0.
                ParallelLayout layout = base.layout;
                layout.tp = tp, layout.cp = cp, layout.pp = pp, layout.dp = c.dp;
                const int r0 = layout.rank({});
                const std::vector<int> tp_group = layout.group(r0, Dim::tp), cp_group = layout.group(r0, Dim::cp);
                std::vector<int> dp_group, expert_group;
                for (int cp_rank : cp_group) {
                  const std::vector<int> dp = layout.group(cp_rank, Dim::dp);
                  dp_group.insert(dp_group.end(), dp.begin(), dp.end());
                  for (std::size_t i = 0; i < dp.size(); i += static_cast<std::size_t>(ep)) expert_group.push_back(dp[i]);
                }
                Resolved res;
                res.dense = st.pass_cost(raw, raw.dense, tp_group, cp_group, dp_group, expert_group);
                res.moe = st.pass_cost(raw, raw.moe, tp_group, cp_group, dp_group, expert_group);
                res.first = st.pass_cost(raw, raw.first, tp_group, cp_group, dp_group, expert_group);
                res.last = st.pass_cost(raw, raw.last, tp_group, cp_group, dp_group, expert_group);
                ParallelLayout::Coord next;
                next.pp = pp > 1 ? 1 : 0;
                const Seconds p2p_s = st.transfer_s(r0, layout.rank(next), raw.activation_bytes) +
                                      (raw.p2p_gather_bytes > 0 ? st.collective_s(Op::all_gather, tp_group, raw.p2p_gather_bytes, false) : 0);

                for (int v : space.virtual_stages)
                  for (const Schedule* sched : space.schedules) {
                    c.virtual_stages = v, c.schedule = sched;
                    ++done;
                    if (progress && done - last_report >= 4096) {
                      progress(done, total);
                      last_report = done;
                    }
                    const int chunks_required = sched->chunks_required();
                    const ScheduleShape shape{pp, m, v, 0};
                    std::optional<std::string> why;
                    if (chunks_required > 0 && v != chunks_required)
                      why = fmt::format("{} runs {} chunks per rank, not {}", sched->name(), chunks_required, v);
                    else if (!base.overlap_p2p_comm && !sched->runs_blocking_p2p())
                      why = fmt::format("{} does not run the scenario's blocking p2p (overlap_p2p_comm: false)", sched->name());
                    else if (double(pp) * v * m > double(1 << 22))
                      why = "more than 2^22 pipeline steps";
                    else if (auto na = sched->not_applicable(shape))
                      why = fmt::format("{} cannot run pp {}, {} microbatches, v {}: {}", sched->name(), pp, m, v, *na);
                    const int stages = why ? 1 : sched->model_stages(shape);
                    if (!why && model.layers % stages != 0)
                      why = fmt::format("{} model stages do not divide the {} layers", stages, model.layers);
                    const ReplayShape* rs = nullptr;  // replayed only for what fits without activations
                    if (why) {
                      --done;
                      remove(6, 1, [&] { return c.text() + ": " + *why; });
                      continue;
                    }
                    // Each rank's passes for one microbatch (all its chunks) and its state.
                    const int layers_per_stage = model.layers / stages;
                    const bool splits = st.split[sched];
                    const int ranks_to_check[2] = {0, pp - 1};
                    Bytes memory = 0;
                    double params_max = 0, rank0_chunk0_params = 0;
                    Seconds rank0_chunk0_b = 0;
                    std::optional<std::string> oom;
                    // Interior ranks hold layers only; the first and the last add the embedding and head.
                    auto rank_cost = [&](int r, double* params_out, double* chunk0_params, Seconds* chunk0_b,
                                         StageLoad* load) {
                      PassCost pc;
                      double params = 0, expert_params = 0;
                      int layers = 0, moe_layers = 0;
                      bool first = false, last = false;
                      double emb_flight = -1, head_flight = -1;
                      for (int ch = 0; ch < v; ++ch) {
                        const int stage = sched->chunk_stage(shape, r, ch);
                        PassCost chunk;
                        double chunk_params = 0;
                        for (int l = stage * layers_per_stage; l < (stage + 1) * layers_per_stage; ++l) {
                          const bool moe_l = model.is_moe_layer(l);
                          chunk += moe_l ? res.moe : res.dense;
                          chunk_params += raw.dense_params_per_layer + (moe_l ? raw.expert_params_per_moe_layer : 0);
                          expert_params += moe_l ? raw.expert_params_per_moe_layer : 0;
                          ++layers;
                          moe_layers += moe_l;
                        }
                        if (stage == 0) {
                          chunk += res.first;
                          chunk_params += raw.embedding_params;
                          first = true;
                          emb_flight = rs ? rs->held_by_chunk[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)] : 0;
                        }
                        if (stage == stages - 1) {
                          chunk += res.last;
                          if (!model.tied_embeddings || stages > 1) chunk_params += raw.embedding_params;
                          last = true;
                          head_flight = rs ? rs->held_by_chunk[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)] : 0;
                        }
                        if (ch == 0 && chunk0_params) *chunk0_params = chunk_params;
                        if (ch == 0 && chunk0_b) *chunk0_b = splits ? chunk.bi + chunk.w : chunk.b;
                        params += chunk_params;
                        pc += chunk;
                      }
                      *params_out = params;
                      load->params_on_rank = params - expert_params;
                      load->expert_params_on_rank = expert_params;
                      load->expert_data_parallel = c.dp / ep * cp;
                      const double unit = static_cast<double>(stages) / (pp * v);
                      load->layers = layers * unit;
                      load->moe_layers = moe_layers * unit;
                      load->in_flight_microbatches = rs ? rs->in_flight[static_cast<std::size_t>(r)] : 0;
                      load->first_stage = first;
                      load->last_stage = last;
                      load->embedding_in_flight_microbatches = emb_flight;
                      load->head_in_flight_microbatches = head_flight;
                      load->mtp_modules = last ? model.mtp_depth : 0;
                      load->data_parallel = c.dp * cp;
                      load->distributed_optimizer = zero >= 1;
                      load->zero_stage = zero;
                      if (zero == 3 && layers > 0) {
                        const double per_layer = params / layers;
                        load->gathered_params = base.reshard_after_forward ? 2 * per_layer : params;
                      }
                      return pc;
                    };
                    const ActivationLayout act{mb, tp, base.sequence_parallel, rc, base.eight_bit_gemm_inputs(),
                                               base.attention == AttentionKernel::flash,
                                               rc == base.recompute ? base.recompute_modules : RecomputeModules{}};
                    // Weights, gradients and optimizer state alone (no activations held) first: what
                    // cannot fit even so needs no schedule replay.
                    for (int i = 0; i < 2 && !oom; ++i) {
                      StageLoad load;
                      double params = 0;
                      rank_cost(ranks_to_check[i], &params, nullptr, nullptr, &load);
                      const StageMemory mem = stage_memory(local, act, load);
                      if (mem.total > base.gpu.hbm_bytes)
                        oom = fmt::format("{}: pipeline rank {} needs more than {:.1f} GiB before activations, more than the {}'s {:.1f} GiB",
                                          c.text(), ranks_to_check[i], mem.total / double(1ULL << 30), base.gpu.name,
                                          base.gpu.hbm_bytes / double(1ULL << 30));
                    }
                    if (!oom && !(rs = st.replay_shape(*sched, pp, m, v))) {
                      --done;
                      remove(6, 1, [&] { return c.text() + ": " + sched->name() + " cannot run this shape"; });
                      continue;
                    }
                    PassCost rank_pass[2];
                    for (int i = 0; i < 2 && !oom; ++i) {
                      const int r = ranks_to_check[i];
                      StageLoad load;
                      double params = 0;
                      rank_pass[i] = rank_cost(r, &params, r == 0 ? &rank0_chunk0_params : nullptr,
                                               r == 0 ? &rank0_chunk0_b : nullptr, &load);
                      const StageMemory mem = stage_memory(local, act, load);
                      memory = std::max(memory, mem.total);
                      if (!oom && mem.total > base.gpu.hbm_bytes)
                        oom = fmt::format("{}: pipeline rank {} needs {:.1f} GiB, more than the {}'s {:.1f} GiB", c.text(), r,
                                          mem.total / double(1ULL << 30), base.gpu.name, base.gpu.hbm_bytes / double(1ULL << 30));
                      params_max = std::max(params_max, params);
                    }
                    if (oom) {
                      --done;
                      remove(7, 1, [&] { return *oom; });
                      continue;
                    }
                    // Interior ranks hold layers only (uniform).
                    const PassCost interior = (static_cast<double>(layers_per_stage) * v) * (model.moe ? res.moe : res.dense);
                    const PassCost& r0 = rank_pass[0];
                    const PassCost& rl = rank_pass[1];
                    auto fb_of = [&](const PassCost& p) { return p.f + (splits ? p.bi + p.w : p.b); };
                    const double mean = pp == 1 ? fb_of(r0) : (fb_of(r0) + fb_of(rl) + (pp - 2) * fb_of(interior)) / pp;
                    const double bottleneck = std::max({fb_of(r0), fb_of(rl), pp > 2 ? fb_of(interior) : 0.0});
                    // The schedule's table with uniform passes, at the pipeline's mean pass, then the
                    // bottleneck rank's extra work in every microbatch.
                    const Seconds pipeline_s = rs->makespan_units * mean / 3 + m * (bottleneck - mean);
                    const Seconds busy_s = m * bottleneck;
                    // Pipeline transfers on the critical path: through every stage boundary forward
                    // and back once (the warm-up and the drain); blocking p2p holds each pass.
                    const double hops = stages > 1 ? 2.0 * (stages - 1) : 0;
                    const Seconds pp_exposed = hops * p2p_s + (base.overlap_p2p_comm ? 0 : 2.0 * m * v * p2p_s);
                    // Data-parallel gradients: rank 0's first chunk in buckets during its last backward
                    // (finish = max(B/n + all buckets, B + last bucket)), the rest hidden before it.
                    Seconds dp_exposed = 0, zero_gather = 0, embedding_sync = 0;
                    const double w = raw.plan.gradient_bytes_per_param;
                    const Op reduce = zero >= 1 ? Op::reduce_scatter : Op::all_reduce;
                    if (zero < 2 && c.dp * cp > 1) {
                      const Bytes bytes = static_cast<Bytes>(rank0_chunk0_params * w);
                      if (base.overlap_grad_reduce) {
                        const double bucket_params = std::max(40e6, 1e6 * static_cast<double>(dp_group.size()));
                        const Bytes bucket = static_cast<Bytes>(bucket_params * w);
                        const long n = static_cast<long>((bytes + bucket - 1) / bucket);
                        const Bytes last_bucket = bytes - static_cast<Bytes>(n - 1) * bucket;
                        const Seconds full = st.collective_s(reduce, dp_group, bucket, false);
                        const Seconds tail = st.collective_s(reduce, dp_group, last_bucket, false);
                        const Seconds all = (n - 1) * full + tail;
                        dp_exposed = std::max({rank0_chunk0_b / n + all - rank0_chunk0_b, tail, 0.0});
                      } else {
                        dp_exposed = st.collective_s(reduce, dp_group, static_cast<Bytes>(params_max * w), false);
                      }
                    }
                    if (zero == 1 || zero == 2)
                      zero_gather = st.collective_s(Op::all_gather, dp_group, static_cast<Bytes>(params_max * 2), false);
                    if (model.tied_embeddings && stages > 1 && pp > 1) {
                      ParallelLayout::Coord lastc;
                      lastc.pp = pp - 1;
                      embedding_sync = st.collective_s(Op::all_reduce, std::vector<int>{layout.rank({}), layout.rank(lastc)},
                                                       static_cast<Bytes>(raw.embedding_params * w), false);
                    }
                    const double optimizer_params = params_max / (zero >= 1 ? c.dp * cp : 1);
                    const Seconds optimizer_s =
                        op_time(base.gpu, base.precision, optimizer_op(optimizer_params, base.gradient_reduce_bytes(), base.precision == "fp16"));
                    ScreenPrediction pr;
                    pr.config = c;
                    pr.iteration_s = pipeline_s + pp_exposed + dp_exposed + zero_gather + embedding_sync + optimizer_s;
                    pr.tokens_per_s = tokens_per_iteration / pr.iteration_s;
                    pr.mfu = flops_per_token * pr.tokens_per_s / gpus / st.peak_flops;
                    pr.memory_bytes = memory;
                    const PassCost& worst = fb_of(r0) >= fb_of(rl) && fb_of(r0) >= fb_of(interior) ? r0
                                            : fb_of(rl) >= fb_of(interior)                         ? rl
                                                                                                   : interior;
                    const Seconds waits = worst.f_wait + (splits ? worst.bi_wait + worst.w_wait : worst.b_wait);
                    pr.exposed_comm_s = m * waits + pp_exposed + dp_exposed + zero_gather + embedding_sync;
                    pr.bubble_s = std::max(0.0, pipeline_s - busy_s);
                    result.valid.push_back(pr);
                  }
              }
          }
        }
      }
  std::stable_sort(result.valid.begin(), result.valid.end(),
                   [](const ScreenPrediction& a, const ScreenPrediction& b) { return a.iteration_s < b.iteration_s; });
  if (progress) progress(total, total);
  return result;
}

}  // namespace clustersim
