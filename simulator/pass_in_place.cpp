#include "simulator/pass_in_place.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace clustersim {

bool runs_in_place(const Part& part, const UnitGroups& groups) {
  if (part.ep_traffic >= 0) return groups.ep_in_place;
  if (part.ring_traffic >= 0) return groups.cp_in_place;
  if (part.collective < 0) return false;
  if (part.kind == SegmentKind::dp_comm) return groups.zero_in_place;
  return part.group == CommGroup::cp ? groups.cp_in_place : groups.tp_in_place;
}

bool has_part_in_place(const PassShape& shape, const UnitGroups& groups) {
  return std::any_of(shape.parts.begin(), shape.parts.end(), [&](const Part& p) { return runs_in_place(p, groups); });
}

namespace {

/// The flows of a lowering with identical ones that nothing waits on (a ring's channels that
/// take one path) as one flow with copies: a TP group's 16 channels on an NVSwitch become one.
FlowGraph merged_copies(FlowGraph sub) {
  std::vector<bool> awaited(sub.flows.size(), false);
  for (const Flow& f : sub.flows)
    for (FlowId a : f.after) awaited[static_cast<std::size_t>(a)] = true;
  FlowGraph out;
  std::vector<FlowId> moved(sub.flows.size(), -1);
  std::map<std::tuple<int, int, Bytes, Seconds, double, std::vector<LinkDir>, std::vector<FlowId>>, FlowId> seen;
  for (std::size_t i = 0; i < sub.flows.size(); ++i) {
    Flow& f = sub.flows[i];
    for (FlowId& a : f.after) a = moved[static_cast<std::size_t>(a)];
    if (!awaited[i]) {
      auto [it, fresh] = seen.try_emplace({f.src_gpu, f.dst_gpu, f.size_bytes, f.latency_s, f.max_rate_Bps, f.links, f.after},
                                          static_cast<FlowId>(out.flows.size()));
      if (!fresh) {
        out.flows[static_cast<std::size_t>(it->second)].copies += f.copies;
        continue;
      }
    }
    moved[i] = out.add(std::move(f));
  }
  return out;
}

}  // namespace

std::vector<FlowId> append_after(FlowGraph& graph, FlowGraph sub, FlowId after) {
  const FlowId base = static_cast<FlowId>(graph.flows.size());
  std::vector<FlowId> ids;
  for (Flow& f : sub.flows) {
    for (FlowId& a : f.after) a += base;
    if (f.after.empty()) f.after.push_back(after);
    ids.push_back(graph.add(std::move(f)));
  }
  return ids;
}

const FlowGraph& InPlaceFlows::collective(int choice, const std::vector<int>& group) {
  auto [it, fresh] = collectives_.try_emplace({choice, group});
  if (fresh) {
    const CollectiveChoice& c = times_.choice(choice);
    const CollectiveRequest req{c.op, group, c.bytes, c.channels, c.protocol, 0};
    it->second = merged_copies(c.algorithm->lower(router_, req));
  }
  return it->second;
}

const FlowGraph& InPlaceFlows::traffic(int traffic, const std::vector<int>& gpus) {
  auto [it, fresh] = traffics_.try_emplace({traffic, gpus});
  if (fresh) it->second = times_.lower_traffic(traffic, gpus);
  return it->second;
}

PassChain add_pass_in_place(FlowGraph& graph, InPlaceFlows& flows, const PassShape& shape, const UnitGroups& groups,
                            int gpu, std::vector<FlowId> after) {
  // The compute between collectives, as timers; a part that keeps its alone time is one of them.
  // The compute that hides a collective runs beside it (a timer next to its flows), so it comes
  // off the timers, the latest first: in a backward the weight gradient that hides the input
  // gradient's all-reduce follows it. A chain hides no more than its compute, the earlier
  // collectives first: timed alone, a TP collective and a ZeRO one may each count the same compute
  // as hiding them.
  std::vector<Seconds> compute{0};
  for (const Part& p : shape.parts) {
    if (!runs_in_place(p, groups)) compute.back() += p.duration_s;
    else compute.push_back(0);
  }
  Seconds hidden = 0, budget = 0;
  for (Seconds c : compute) budget += c;
  std::vector<Seconds> hidden_per_step;  // by in-place part
  for (const Part& p : shape.parts) {
    if (!runs_in_place(p, groups)) continue;
    const Seconds whole = p.steps * p.hidden_s, used = std::min(whole, budget);
    hidden_per_step.push_back(used == whole ? p.hidden_s : used / p.steps);
    hidden += used;
    budget -= used;
  }
  for (auto it = compute.rbegin(); it != compute.rend() && hidden > 0; ++it) {
    const Seconds cut = std::min(*it, hidden);
    *it -= cut;
    hidden -= cut;
  }
  PassChain chain;
  Flow entry = timer_flow(gpu, compute.front());
  entry.after = std::move(after);
  FlowId head = chain.entry = graph.add(std::move(entry));
  std::size_t next = 1;
  for (std::size_t i = 0; i < shape.parts.size(); ++i) {
    const Part& p = shape.parts[i];
    if (!runs_in_place(p, groups)) continue;
    const FlowId first = head;
    // A ring-attention exchange: each step's flows of every CP group beside its share of the
    // attention compute, the next step after both.
    for (int step = 0; step < p.steps; ++step) {
      Flow join = timer_flow(gpu, 0);
      Flow beside = timer_flow(gpu, hidden_per_step[next - 1]);
      beside.after = {head};
      join.after.push_back(graph.add(std::move(beside)));
      const bool cp = p.ring_traffic >= 0 || p.group == CommGroup::cp;
      static const std::vector<std::vector<int>> across_units;  // an all-to-all's or ZeRO's: joined later
      for (const auto& group : p.ep_traffic >= 0 || p.kind == SegmentKind::dp_comm ? across_units
                               : cp                                               ? groups.cp
                                                                                  : groups.tp) {
        const auto ids = append_after(
            graph, p.ring_traffic >= 0 ? flows.traffic(p.ring_traffic, group) : flows.collective(p.collective, group), head);
        join.after.insert(join.after.end(), ids.begin(), ids.end());
      }
      head = graph.add(std::move(join));
    }
    chain.collectives.push_back({i, first, head, p.ep_traffic, hidden_per_step[next - 1]});
    Flow rest = timer_flow(gpu, compute[next++]);
    rest.after = {head};
    head = graph.add(std::move(rest));
  }
  chain.exit = head;
  return chain;
}

std::vector<Part> realized_parts(const PassShape& shape, const PassChain& chain, const std::vector<Seconds>& finish) {
  std::vector<Part> parts = shape.parts;
  if (chain.fb_unit) {
    // What the unit took beyond its compute is first the SMs its waits held (as planned, or what is
    // left of it where the waits ran faster than alone), then its exposed communication. The unit
    // never takes less than its compute: that runs beside the waits in full.
    auto labelled = [&](const char* label, SegmentKind kind) {  // its index, added if missing
      auto it = std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.label == label; });
      if (it == parts.end()) it = parts.insert(parts.end(), Part{kind, label, 0});
      return static_cast<std::size_t>(it - parts.begin());
    };
    const std::size_t slowed = labelled("F&B interference", SegmentKind::compute);
    const std::size_t exposed = labelled("F&B exposed communication", most_waited(shape.beside));
    Seconds compute = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) compute += i == slowed || i == exposed ? 0 : parts[i].duration_s;
    const Seconds beyond = std::max(0.0, finish[chain.exit] - finish[chain.entry] - compute);
    parts[slowed].duration_s = std::min(parts[slowed].duration_s, beyond);
    parts[exposed].duration_s = beyond - parts[slowed].duration_s;
    return parts;
  }
  for (const PassChain::Collective& c : chain.collectives) {
    Part& p = parts[c.part];
    p.duration_s = std::max(0.0, finish[c.join] - finish[c.head] - p.steps * c.hidden_s);
  }
  return parts;
}

}  // namespace clustersim
