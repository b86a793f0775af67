// The Perfetto trace of an iteration, streamed from its finish times (trace_fanout.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "simulator/iteration_builder.hpp"
#include "simulator/trace_fanout.hpp"

namespace clustersim {

namespace {

const char* op_name(Op op) {
  switch (op) {
    case Op::all_reduce: return "all-reduce";
    case Op::all_gather: return "all-gather";
    case Op::reduce_scatter: return "reduce-scatter";
    case Op::all_to_all: return "all-to-all";
    case Op::broadcast: return "broadcast";
    case Op::send_recv: return "send/recv";
  }
  return "?";
}

const char* pass_name(PassKind k) {
  switch (k) {
    case PassKind::forward: return "F";
    case PassKind::backward: return "B";
    case PassKind::backward_input: return "B input";
    case PassKind::backward_weight: return "W";
  }
  return "?";
}

/// A wait's stream and category: where its communication runs beside compute.
std::pair<TraceTrack, const char*> comm_track(SegmentKind k) {
  switch (k) {
    case SegmentKind::tp_comm: return {TraceTrack::tp, "tp"};
    case SegmentKind::cp_comm: return {TraceTrack::cp, "cp"};
    case SegmentKind::ep_comm: return {TraceTrack::ep, "ep"};
    case SegmentKind::dp_comm: return {TraceTrack::dp, "dp"};
    default: return {TraceTrack::compute, "compute"};
  }
}

const char* part_name(const Part& p) {
  if (is_wait(p.kind)) return "wait";
  if (p.label.rfind("interference", 0) == 0 || p.label.rfind("F&B interference", 0) == 0) return "interference";
  return p.kind == SegmentKind::recompute ? "recompute" : "compute";
}

}  // namespace

/// Streams the trace: per simulated unit its passes with their parts (compute track), each wait's
/// communication with its own duration on its stream, then every GPU's pipeline transfers, the
/// gradient collectives and the optimizer step. Each GPU's slices of a track come in time order.
void IterationBuilder::write_trace(const std::vector<Seconds>& finish) {
  TraceLayout layout;
  layout.units = &units_;
  layout.ranks = ranks();
  layout.replicas = replicas_;
  layout.simulated_as = simulated_as_;
  layout.own_members = own_members();
  layout.tp = plan_.tp_group.empty() ? 1 : static_cast<int>(plan_.tp_group.front().size());
  for (const auto* groups : {&dp_groups_, &expert_groups_})
    for (const auto& of_rank : *groups)
      for (const auto& g : of_rank) layout.in_dp_groups.insert(layout.in_dp_groups.end(), g.begin(), g.end());
  TraceFanout fan(*trace_, std::move(layout));

  for (const Step& s : steps_) {
    const Seconds end = finish[s.id], start = s.chain ? start_of(finish, s.entry) : end - s.shape->duration_s;
    const std::vector<Part> parts = s.chain ? realized_parts(*s.shape, *s.chain, finish) : s.shape->parts;
    std::map<std::size_t, std::pair<Seconds, Seconds>> ran;  // an in-place collective's part -> its flows' span
    if (s.chain && !s.chain->fb_unit)  // an F&B unit's waits are drawn where they were planned
      for (const PassChain::Collective& c : s.chain->collectives) {
        const std::vector<FlowId>& joined = graph_.flows[c.join].after;
        Seconds last = finish[c.head];
        for (std::size_t k = 1; k < joined.size(); ++k) last = std::max(last, finish[joined[k]]);  // [0]: the compute beside
        ran[c.part] = {finish[c.head], last};
      }
    TraceRecord pass;
    pass.name = s.partner ? "F&B" : pass_name(s.op.kind);
    pass.cat = "pass";
    pass.start_s = start;
    pass.end_s = end;
    pass.microbatch = s.op.microbatch;
    pass.chunk = s.op.chunk;
    pass.stage = s.stage;
    pass.parent = true;
    const std::string label = s.partner ? fmt::format("{} mb {} chunk {} & {} mb {} chunk {}", pass_name(s.op.kind), s.op.microbatch,
                                                      s.op.chunk, pass_name(s.partner->kind), s.partner->microbatch, s.partner->chunk)
                                        : std::string();
    pass.label = label;
    fan.unit(s.replica, s.rank, pass);
    std::vector<TraceRecord> comm;
    auto communication = [&](const Part& p, Seconds from, Seconds to, Seconds exposed) {
      TraceRecord c;
      std::tie(c.track, c.cat) = comm_track(p.kind);
      c.name = op_name(p.op);
      c.start_s = from;
      c.end_s = to;
      c.label = p.label;
      c.bytes = p.bytes;
      c.layer = p.layer;
      c.microbatch = s.op.microbatch;
      c.exposed_s = exposed;
      comm.push_back(c);
    };
    Seconds at = start;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Part& p = parts[i];
      const Seconds part_end = std::min(end, at + p.duration_s);
      if (p.duration_s > 0) {
        TraceRecord r;
        r.name = part_name(p);
        r.cat = is_wait(p.kind) ? comm_track(p.kind).second : to_string(p.kind);
        if (p.kind == SegmentKind::imbalance) r.cat = "imbalance";
        r.start_s = at;
        r.end_s = part_end;
        r.label = p.label;
        r.layer = p.layer;
        fan.unit(s.replica, s.rank, r);
      }
      if (is_wait(p.kind) && p.comm_s > 0 && comm_track(p.kind).first != TraceTrack::compute) {
        if (auto it = ran.find(i); it != ran.end()) communication(p, it->second.first, it->second.second, p.duration_s);
        else if (p.hidden_before) communication(p, std::max(start, part_end - p.comm_s), part_end, p.duration_s);
        else communication(p, at, at + p.comm_s, p.duration_s);
      }
      at = part_end;
    }
    for (const auto& [offset, p] : s.shape->beside)
      if (p.comm_s > 0 && comm_track(p.kind).first != TraceTrack::compute)
        communication(p, start + offset, start + offset + p.comm_s, -1);
    for (const TraceRecord& c : comm) fan.unit(s.replica, s.rank, c);
  }

  // Pipeline transfers, each GPU's in time order.
  struct Sent {
    Seconds start_s, end_s;
    int replica, from, to, member, microbatch, stage;
    bool forward;
    Bytes bytes;
  };
  std::vector<Sent> sent;
  for (const auto& [key, tasks] : passes_) {
    const auto [replica, stage, forward, mb] = key;
    for (int m = 0; m < tasks.sent && tasks.transfer_in >= 0; ++m) {
      const FlowId f = tasks.transfer_in + m;
      if (graph_.flows[f].links.empty()) continue;  // nothing crossed the fabric
      sent.push_back({start_of(finish, f), finish[f], replica, tasks.from_rank, tasks.rank, m, mb, forward ? stage - 1 : stage + 1,
                      forward, tasks.bytes});
    }
  }
  std::stable_sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) { return a.start_s < b.start_s; });
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const Sent& t = sent[i];
    TraceRecord r;
    r.cat = "pp";
    r.start_s = t.start_s;
    r.end_s = t.end_s;
    r.label = t.forward ? "activations" : "input gradients";
    r.bytes = t.bytes;
    r.microbatch = t.microbatch;
    r.stage = t.stage;
    fan.transfer(t.replica, t.from, t.to, t.member, i, r);
  }

  // Gradient collectives, each GPU's in time order, and the optimizer steps.
  std::vector<std::pair<Seconds, std::size_t>> order;
  for (std::size_t k = 0; k < comm_records_.size(); ++k) order.emplace_back(finish[comm_records_[k].after], k);
  std::stable_sort(order.begin(), order.end());
  for (const auto& [from, k] : order) {
    const CommRecord& c = comm_records_[k];
    TraceRecord r;
    r.track = TraceTrack::dp;
    r.name = op_name(c.op);
    r.cat = "dp";
    r.start_s = from;
    r.end_s = from;
    for (FlowId e : c.ends) r.end_s = std::max(r.end_s, finish[e]);
    // Which algorithm and protocol ran it: NCCL's tuner changes them with the bucket's size.
    const GradientChoice ran = gradient_choice(c.op, c.group, c.bytes);
    const std::string label = fmt::format("{} ({}, {})", c.label, ran.algorithm->name(), ran.protocol.name);
    r.label = label;
    r.bytes = c.bytes;
    fan.collective(c.replica, c.group, r);
  }
  for (int d : simulated_)
    for (int r = 0; r < ranks(); ++r) {
      TraceRecord o;
      o.name = "optimizer";
      o.cat = "compute";
      o.end_s = finish[optimizer_[unit(d, r)]];
      o.start_s = o.end_s - plan_.optimizer_s / unit_speed(d, r);
      o.label = "optimizer step";
      fan.unit(d, r, o);
    }
}

}  // namespace clustersim
