// An F&B unit (DualPipe's overlapped forward and backward) whose MoE all-to-alls run in place: the
// chain that stands for PassTimes::overlapped's max(F compute + B's charge, B comm) + max(B compute
// + F's charge, F comm) with each wait as it runs among the job's traffic.
#include "simulator/pass_in_place.hpp"

namespace clustersim {

namespace {

/// `waits` one after another beside `compute_s` of compute, after `head`; the step after both.
FlowId overlap_phase(FlowGraph& graph, PassChain& chain, const PassShape& waits, std::size_t first_part,
                     Seconds compute_s, const UnitGroups& groups, int gpu, FlowId head) {
  Flow beside = timer_flow(gpu, compute_s);
  beside.after = {head};
  Flow end = timer_flow(gpu, 0);
  end.after = {graph.add(std::move(beside))};
  FlowId at = head;
  std::size_t index = first_part;
  for (const Part& p : waits.parts) {
    if (!is_wait(p.kind)) continue;
    const bool joined = p.ep_traffic >= 0 && groups.ep_in_place;  // the builder adds its flows
    Flow step = timer_flow(gpu, joined ? 0 : p.duration_s);
    step.after = {at};
    const FlowId id = graph.add(std::move(step));
    if (joined) chain.collectives.push_back({index, at, id, p.ep_traffic, 0});
    at = id;
    ++index;
  }
  end.after.push_back(at);
  return graph.add(std::move(end));
}

}  // namespace

PassChain add_fb_unit_in_place(FlowGraph& graph, const PassShape& first, const PassShape& second, const UnitGroups& groups,
                               int gpu, std::vector<FlowId> after) {
  PassChain chain;
  chain.fb_unit = true;
  Flow entry = timer_flow(gpu, 0);
  entry.after = std::move(after);
  chain.entry = graph.add(std::move(entry));
  const WaitSplit f = split_waits(first), b = split_waits(second);
  std::size_t b_waits = 0;
  for (const Part& p : second.parts) b_waits += is_wait(p.kind);
  // In the order the unit's `beside` lists them: the second pass's waits, then the first's.
  const FlowId middle = overlap_phase(graph, chain, second, 0, f.compute + b.charge, groups, gpu, chain.entry);
  chain.exit = overlap_phase(graph, chain, first, b_waits, b.compute + f.charge, groups, gpu, middle);
  return chain;
}

}  // namespace clustersim
