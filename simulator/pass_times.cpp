#include "simulator/pass_times.hpp"

#include <algorithm>

#include "collectives/algo_deepep.hpp"
#include "collectives/pipeline.hpp"
#include "collectives/point_to_point.hpp"
#include "collectives/tuner_nccl.hpp"
#include "simulator/collective_sweep.hpp"
#include "simulator/link_utilization.hpp"
#include "topologies/invariant.hpp"

namespace clustersim {

bool is_wait(SegmentKind k) {
  return k == SegmentKind::tp_comm || k == SegmentKind::ep_comm || k == SegmentKind::imbalance ||
         k == SegmentKind::cp_comm || k == SegmentKind::dp_comm;
}

Seconds interference_s(Seconds comm_s, Seconds compute_s, double sm_share) {
  if (comm_s <= 0 || compute_s <= 0 || sm_share <= 0) return 0;
  return std::max(comm_s - compute_s, sm_share * comm_s) - std::max(0.0, comm_s - compute_s);
}

/// The compute beside a TP collective: its hidden_s, and the weight gradient when it runs in the
/// same pass.
static Seconds hiding_s(const Segment& s, bool weight_in_pass) {
  return s.hidden_s + (weight_in_pass ? s.hidden_by_weight_s : 0);
}

/// A TP collective shows what the compute running beside it does not hide.
Seconds PassTimes::tp_time(int rank, const Segment& s, bool weight_in_pass) {
  return std::max(0.0, collective_time(rank, s, plan_.tp_group[rank]) - hiding_s(s, weight_in_pass));
}

/// What a collective step running beside compute (TP under the asynchronous backward, a ring
/// attention step, ZeRO's per-layer collectives) takes from that compute: each is NCCL's.
Seconds PassTimes::interference(int rank, const Segment& s, bool weight_in_pass) {
  const double share = plan_.nccl_sm_share;
  if (share <= 0) return 0;
  switch (s.kind) {
    case SegmentKind::tp_comm:
      return interference_s(collective_time(rank, s, plan_.tp_group[rank]), hiding_s(s, weight_in_pass), share);
    case SegmentKind::cp_comm:
      return s.traffic < 0 ? 0 : s.repeat * interference_s(traffic_time(s.traffic), s.hidden_s, share);
    case SegmentKind::dp_comm:
      return interference_s(collective_time(rank, s, zero_group(rank, s)), s.hidden_s, share);
    default:
      return 0;
  }
}

/// The share of SMs a wait's kernel holds: DeepEP's for its all-to-alls, NCCL's channels for the
/// rest; waiting for another rank's experts holds none.
double PassTimes::sm_share(const Segment& s) const {
  if (s.kind == SegmentKind::imbalance) return 0;
  if (s.kind == SegmentKind::ep_comm && plan_.traffic.at(static_cast<std::size_t>(s.traffic)).deepep)
    return plan_.deepep_sm_share;
  return plan_.nccl_sm_share;
}

/// A context-parallel step: a ring-attention exchange shows what its compute does not hide, each
/// of its steps; all-gather CP is a blocking collective over the group.
Seconds PassTimes::cp_time(int rank, const Segment& s) {
  if (s.traffic < 0) return collective_time(rank, s, plan_.cp_group[rank]);
  return s.repeat * std::max(0.0, traffic_time(s.traffic) - s.hidden_s);
}

/// ZeRO-2/3's per-layer collectives run on their own stream, prefetched or overlapped with the
/// layer's compute: only what that compute does not hide shows.
Seconds PassTimes::zero_time(int rank, const Segment& s) {
  return std::max(0.0, collective_time(rank, s, zero_group(rank, s)) - s.hidden_s);
}

const std::vector<int>& PassTimes::zero_group(int rank, const Segment& s) const {
  return s.group == CommGroup::expert_dp ? plan_.expert_dp_group[rank] : plan_.dp_group[rank];
}

/// The ZeRO collectives of one layer share its compute and their NIC: what one hides is not there to
/// hide the next (ZeRO-3's backward all-gather and reduce-scatter, MoE's dense and expert ones), so
/// they show max(0, their sum - compute) between them, as FSDP's concurrent streams would.
Seconds zero_hidden_s(Seconds comm_s, Seconds planned_hidden_s, Seconds& used_s) {
  const Seconds left = std::max(0.0, planned_hidden_s - used_s);
  used_s += std::min(comm_s, left);
  return left;
}

int PassTimes::tp_choice(int rank, const Segment& s) { return collective_choice(rank, s, plan_.tp_group[rank]); }

std::vector<int> PassTimes::choices_of(int rank, CommGroup group) const {
  std::vector<int> out;
  for (const auto& [key, index] : tp_cache_)
    if (std::get<0>(key) == rank && std::get<1>(key) == group && index >= 0) out.push_back(index);
  return out;
}

Seconds PassTimes::collective_time(int rank, const Segment& s, const std::vector<int>& group) {
  const int index = collective_choice(rank, s, group);
  return index < 0 ? 0 : choices_[static_cast<std::size_t>(index)].alone_s;
}

IterationPick iteration_pick(FabricEngine& engine, const Router& router, const IterationPlan& plan,
                             const CollectiveRequest& request) {
  const Cluster& cluster = router.cluster();
  auto simulated = [&](const SweepRow& row) {
    return IterationPick{find_algorithm(row.algorithm), row_protocol(row), row.channels, row.time_s};
  };
  if (pinned_runs(plan, cluster, request))
    return simulated(best_collective(engine, router, {plan.pinned}, nccl_protocols(), request, true));
  if (plan.nccl_tuner) {
    const std::optional<NcclChoice> pick = nccl_choose(cluster, request, std::nullopt, true);
    if (!pick)
      throw InvariantViolation(std::string("NCCL's tuner found no algorithm for an iteration's ") + to_string(request.op));
    return {pick->algorithm, pick->protocol, pick->channels, std::nullopt};
  }
  SweepSpec spec;
  spec.op = request.op;
  spec.ranks = request.ranks;
  return simulated(best_collective(engine, router, candidate_algorithms(cluster, spec), nccl_protocols(), request, true));
}

int PassTimes::collective_choice(int rank, const Segment& s, const std::vector<int>& group) {
  if (plan_.free_communication || s.tp_bytes == 0 || group.size() < 2) return -1;
  auto key = std::make_tuple(rank, s.group, s.tp_op, s.tp_bytes);
  auto it = tp_cache_.find(key);
  if (it != tp_cache_.end()) return it->second;
  // Groups of one kind are congruent, but ranks differ in which nodes they sit on: cache per rank.
  CollectiveRequest req{s.tp_op, group, s.tp_bytes, plan_.channels, Protocol{}, 0};
  const IterationPick pick = iteration_pick(engine_, router_, plan_, req);
  req.protocol = pick.protocol;
  req.channels = pick.channels;
  const Seconds alone_s = pick.alone_s ? *pick.alone_s : time_collective(engine_, router_, *pick.algorithm, req);
  const int nodes = static_cast<int>(ranks_by_node(router_.cluster(), group).size());
  choices_.push_back({s.tp_op, s.tp_bytes, pick.algorithm, pick.protocol, alone_s, pick.channels, s.group,
                      static_cast<int>(group.size()), nodes});
  const int index = static_cast<int>(choices_.size()) - 1;
  tp_cache_.emplace(key, index);
  return index;
}

/// An MoE all-to-all or a ring step, alone on the fabric, cached per traffic. Plain
/// all-to-alls go through NCCL (Simple protocol); DeepEP's are its normal kernels
/// (collectives/algo_deepep.hpp: its SMs, its chunk pipeline, the links' latency, no NCCL protocol).
static DeepEpKernel deepep_kernel(const GroupTraffic& t) {
  DeepEpKernel kernel;
  kernel.token_bytes = t.token_bytes;
  return kernel;
}

FlowGraph PassTimes::lower_traffic(int traffic, const std::vector<int>& gpus) const {
  const GroupTraffic& t = plan_.traffic.at(static_cast<std::size_t>(traffic));
  return t.deepep ? lower_deepep(router_, gpus, t.ranks_per_node, t.network_bytes, t.nvlink_bytes, deepep_kernel(t))
                  : lower_all_to_all_v(router_, gpus, t.bytes, *find_protocol("Simple"), false);
}

Seconds PassTimes::traffic_time(int traffic) {
  if (plan_.free_communication) return 0;
  if (auto it = traffic_cache_.find(traffic); it != traffic_cache_.end()) return it->second;
  const FlowGraph graph = lower_traffic(traffic, plan_.traffic.at(static_cast<std::size_t>(traffic)).gpus);
  const std::vector<Seconds> finish = engine_.run(graph);
  check_link_utilization(router_.cluster(), graph, finish, "all-to-all");
  const Seconds time = makespan(finish);
  traffic_cache_.emplace(traffic, time);
  return time;
}

Seconds PassTimes::comm_time(int rank, const Segment& s) {
  switch (s.kind) {
    case SegmentKind::tp_comm: return collective_time(rank, s, plan_.tp_group[rank]);
    case SegmentKind::ep_comm: return traffic_time(s.traffic);
    case SegmentKind::cp_comm:
      return s.traffic < 0 ? collective_time(rank, s, plan_.cp_group[rank]) : s.repeat * traffic_time(s.traffic);
    case SegmentKind::dp_comm:
      return collective_time(rank, s, zero_group(rank, s));
    default: return 0;
  }
}

/// What the first GPU of an all-to-all sends (each GPU of the group sends about as much).
Bytes PassTimes::traffic_bytes(int traffic) const {
  if (traffic < 0) return 0;
  const GroupTraffic& t = plan_.traffic.at(static_cast<std::size_t>(traffic));
  double sum = 0;
  for (const auto* rows : {&t.bytes, &t.network_bytes, &t.nvlink_bytes})
    if (!rows->empty())
      for (double b : rows->front()) sum += b;
  return static_cast<Bytes>(sum);
}

const PassShape& PassTimes::pass(int rank, int stage, PassKind kind) {
  auto key = std::make_tuple(rank, stage, kind);
  if (auto it = shapes_.find(key); it != shapes_.end()) return it->second;
  const StagePlan& sp = plan_.stages[stage];
  std::vector<const std::vector<Segment>*> lists;
  if (kind == PassKind::forward) lists = {&sp.forward};
  if (kind == PassKind::backward) lists = {&sp.backward_input, &sp.backward_weight};
  if (kind == PassKind::backward_input) lists = {&sp.backward_input};
  if (kind == PassKind::backward_weight) lists = {&sp.backward_weight};
  PassShape shape;
  std::map<int, Seconds> zero_hiding;  // layer -> compute its ZeRO collectives have hidden under
  Segment zero;
  for (const auto* segments : lists)
    for (const Segment& planned : *segments) {
      const Segment* at = &planned;
      if (planned.kind == SegmentKind::dp_comm) {
        zero = planned;
        zero.hidden_s = zero_hidden_s(comm_time(rank, planned), planned.hidden_s, zero_hiding[planned.layer]);
        at = &zero;
      }
      const Segment& s = *at;
      const Seconds d = s.kind == SegmentKind::tp_comm   ? tp_time(rank, s, kind == PassKind::backward)
                        : s.kind == SegmentKind::ep_comm ? traffic_time(s.traffic)
                        : s.kind == SegmentKind::cp_comm ? cp_time(rank, s)
                        : s.kind == SegmentKind::dp_comm ? zero_time(rank, s)
                                                         : s.duration_s;
      if (!is_wait(s.kind)) {
        Part part{s.kind, s.label, d};
        part.layer = s.layer;
        shape.parts.push_back(part);
        shape.duration_s += d;
        continue;
      }
      Part part{s.kind, s.label, d, sm_share(s)};
      part.layer = s.layer;
      part.op = s.tp_op;
      part.bytes = s.tp_bytes;
      part.group = s.group;
      if (s.kind == SegmentKind::tp_comm) {
        part.collective = tp_choice(rank, s);
        part.hidden_s = hiding_s(s, kind == PassKind::backward);
      }
      if (s.kind == SegmentKind::cp_comm && s.traffic < 0) part.collective = collective_choice(rank, s, plan_.cp_group[rank]);
      if (s.kind == SegmentKind::dp_comm) {
        part.collective = collective_choice(rank, s, zero_group(rank, s));
        // On its own stream it overlaps only as much compute as it lasts: the next one starts there.
        part.hidden_s = std::min(s.hidden_s, comm_time(rank, s));
      }
      if (s.kind == SegmentKind::cp_comm && s.traffic >= 0 && !plan_.free_communication) {
        part.ring_traffic = s.traffic;
        part.steps = s.repeat;
        part.hidden_s = s.hidden_s;
      }
      part.comm_s = comm_time(rank, s);
      if (s.kind == SegmentKind::ep_comm) {
        part.op = Op::all_to_all;
        part.bytes = traffic_bytes(s.traffic);
        if (!plan_.free_communication) part.ep_traffic = s.traffic;
      }
      part.hidden_before = s.kind == SegmentKind::cp_comm && s.traffic >= 0;
      if (part.hidden_before) {  // ring attention: K/V blocks passed to the next rank, cp - 1 times
        part.op = Op::send_recv;
        part.bytes = traffic_bytes(s.traffic);
      }
      shape.parts.push_back(part);
      shape.duration_s += d;
      if (const Seconds slowed = interference(rank, s, kind == PassKind::backward); slowed > 0) {
        shape.parts.push_back({SegmentKind::compute, "interference: " + s.label, slowed});
        shape.duration_s += slowed;
      }
    }
  return shapes_.emplace(key, std::move(shape)).first->second;
}

const PassShape& PassTimes::slowed(const PassShape& shape, double speed) {
  if (speed == 1) return shape;
  auto key = std::make_pair(&shape, speed);
  if (auto it = slowed_.find(key); it != slowed_.end()) return it->second;
  PassShape out;
  for (Part part : shape.parts) {
    if (!is_wait(part.kind)) {
      part.duration_s /= speed;
    } else if (part.collective >= 0 && part.kind != SegmentKind::dp_comm) {  // ZeRO's keep their times
      part.hidden_s /= speed;
      part.duration_s = std::max(0.0, choice(part.collective).alone_s - part.hidden_s);
    } else if (part.ring_traffic >= 0) {  // each step beside slower attention compute
      part.hidden_s /= speed;
      part.duration_s = part.steps * std::max(0.0, part.comm_s / part.steps - part.hidden_s);
    }
    out.duration_s += part.duration_s;
    out.parts.push_back(std::move(part));
  }
  return slowed_.emplace(key, std::move(out)).first->second;
}

WaitSplit split_waits(const PassShape& shape) {
  WaitSplit out;
  for (const Part& part : shape.parts) {
    (is_wait(part.kind) ? out.comm : out.compute) += part.duration_s;
    if (is_wait(part.kind)) out.charge += part.duration_s * part.sm_share;
  }
  return out;
}

SegmentKind most_waited(const std::vector<std::pair<Seconds, Part>>& beside) {
  std::map<SegmentKind, Seconds> waits;
  for (const auto& [at, part] : beside) waits[part.kind] += part.duration_s;
  const auto most = std::max_element(waits.begin(), waits.end(), [](auto& a, auto& b) { return a.second < b.second; });
  return most == waits.end() ? SegmentKind::ep_comm : most->first;
}

/// An overlapped F&B unit (DualPipe): one microbatch's forward and another's backward on the
/// same GPU. Their compute shares the SMs, so it adds up; each pass's blocking communication
/// hides under the other's compute, so what shows is max(F compute, B comm) + max(B compute, F
/// comm), the overlap DualPipe is built for; but each communication kernel holds its SMs while it
/// runs (DeepEP 20), so the compute beside it is charged w x share for each wait w
/// (interference_s): max(F compute + B's charge, B comm) + max(B compute + F's charge, F comm).
const PassShape& PassTimes::overlapped(const PassShape& f, const PassShape& b) {
  auto key = std::make_pair(&f, &b);
  if (auto it = overlapped_.find(key); it != overlapped_.end()) return it->second;
  const WaitSplit fs = split_waits(f), bs = split_waits(b);
  const Seconds fc = fs.compute, bc = bs.compute;
  PassShape unit;
  for (const PassShape* s : {&f, &b})
    for (const Part& part : s->parts)
      if (!is_wait(part.kind)) unit.parts.push_back(part);
  const Seconds first = std::max(fc + bs.charge, bs.comm), second = std::max(bc + fs.charge, fs.comm);
  unit.duration_s = first + second;
  for (auto [s, at] : {std::pair(&b, Seconds(0)), std::pair(&f, first)})
    for (const Part& part : s->parts)
      if (is_wait(part.kind)) {
        unit.beside.emplace_back(at, part);
        at += part.comm_s;
      }
  const Seconds exposed = std::max(0.0, bs.comm - fc) + std::max(0.0, fs.comm - bc);
  if (const Seconds slowed = unit.duration_s - fc - bc - exposed; slowed > 0)
    unit.parts.push_back({SegmentKind::compute, "F&B interference", slowed});
  // What stays exposed is charged to the kind of wait the pair has most of.
  if (exposed > 0) unit.parts.push_back({most_waited(unit.beside), "F&B exposed communication", exposed});
  return overlapped_.emplace(key, std::move(unit)).first->second;
}

}  // namespace clustersim
