// Finish times -> what each pipeline rank spent on what, the iteration time and the checks on them.
#include <algorithm>

#include "simulator/breakdown_check.hpp"
#include "simulator/iteration_builder.hpp"
#include "simulator/link_utilization.hpp"

namespace clustersim {

Seconds& IterationBuilder::bucket(RankBreakdown& b, SegmentKind kind) {
  switch (kind) {
    case SegmentKind::tp_comm: return b.tp_s;
    case SegmentKind::ep_comm: return b.ep_s;
    case SegmentKind::imbalance: return b.imbalance_s;
    case SegmentKind::cp_comm: return b.cp_s;
    case SegmentKind::dp_comm: return b.dp_exposed_s;
    case SegmentKind::recompute: return b.recompute_s;
    case SegmentKind::compute: break;
  }
  return b.compute_s;
}

int IterationBuilder::slowest_replica(const std::vector<Seconds>& finish) const {
  int slowest = simulated_.front();
  Seconds latest = -1;
  for (int d : simulated_)
    for (int r = 0; r < ranks(); ++r)
      if (finish[rank_end_[unit(d, r)]] > latest) {
        latest = finish[rank_end_[unit(d, r)]];
        slowest = d;
      }
  return slowest;
}

IterationResult IterationBuilder::account(const std::vector<Seconds>& finish) {
  IterationResult result;
  result.iteration_s = makespan(finish);
  result.ranks.resize(plan_.shape.stages);
  result.replicas = replicas_;
  result.simulated_replicas = static_cast<int>(simulated_.size());
  result.gpus_per_rank = members();
  result.fold = plan_.fold;
  result.tp_collectives = tp_placement_;
  result.cp_exchanges = cp_placement_;
  result.ep_all_to_alls = ep_placement_;
  result.zero_collectives = zero_placement_;
  result.collectives = collectives_run();
  const int shown = slowest_replica(finish);
  result.reported_replica = shown;
  std::map<FlowId, const PassTasks*> waits;  // a pass's step -> what it waited for
  for (const auto& [key, tasks] : passes_)
    if (tasks.transfer_in >= 0 && tasks.replica == shown) waits[tasks.step] = &tasks;
  std::vector<Seconds> free_at(plan_.shape.stages, 0);
  for (const Step& s : steps_) {
    if (s.replica != shown) continue;
    RankBreakdown& b = result.ranks[s.rank];
    const Seconds end = finish[s.id], start = s.chain ? start_of(finish, s.entry) : end - s.shape->duration_s;
    const std::vector<Part> parts = s.chain ? realized_parts(*s.shape, *s.chain, finish) : s.shape->parts;
    Seconds gap = std::max(0.0, start - free_at[s.rank]);
    Seconds arrived = free_at[s.rank];  // when its activations were there (now, if none came)
    if (auto w = waits.find(s.id); w != waits.end() && gap > 0) {
      const Seconds produced = finish[w->second->producer];
      arrived = std::max(arrived, finish[w->second->arrival]);
      const Seconds pp = std::max(0.0, std::min(start, arrived) - std::max(free_at[s.rank], produced));
      b.pp_exposed_s += pp;
      gap -= pp;
    }
    // A pass that waited past its input for parameter all-gathers (overlap_param_gather).
    if (auto g = gather_wait_.find(s.id); g != gather_wait_.end() && gap > 0) {
      Seconds gathered = 0;
      for (FlowId f : g->second) gathered = std::max(gathered, finish[f]);
      const Seconds dp = std::min(gap, std::max(0.0, std::min(start, gathered) - arrived));
      b.dp_exposed_s += dp;
      gap -= dp;
    }
    b.bubble_s += gap;
    for (const Part& part : parts) bucket(b, part.kind) += part.duration_s;
    free_at[s.rank] = end;
    result.passes.push_back({s.rank, s.op.kind, s.op.microbatch, s.stage, start, end});
    if (s.partner) result.passes.push_back({s.rank, s.partner->kind, s.partner->microbatch, s.partner_stage, start, end});
  }
  result.pp_bytes = pp_bytes_;
  for (int r = 0; r < plan_.shape.stages; ++r) {
    RankBreakdown& b = result.ranks[r];
    const Seconds opt_end = finish[optimizer_[unit(shown, r)]];
    const Seconds end = finish[rank_end_[unit(shown, r)]];
    b.optimizer_s = plan_.optimizer_s / unit_speed(shown, r);
    b.dp_exposed_s += (opt_end - b.optimizer_s - free_at[r]) + (end - opt_end);
    b.other_idle_s = result.iteration_s - end;
    const auto& dp = dp_flows_[static_cast<std::size_t>(r)];
    if (!dp.empty()) {
      Seconds first = result.iteration_s, last = 0;
      for (FlowId f : dp) {
        first = std::min(first, start_of(finish, f));
        last = std::max(last, finish[f]);
      }
      result.events.push_back({gpu(shown, r, 0), "dp", "gradient reduction", first, last});
    }
  }
  for (const auto& [key, tasks] : passes_)
    if (tasks.replica == shown && tasks.transfer_in >= 0 && !graph_.flows[tasks.transfer_in].links.empty())
      result.events.push_back({graph_.flows[tasks.transfer_in].src_gpu, "pp",
                               std::get<2>(key) ? "send activations" : "send gradients",
                               start_of(finish, tasks.transfer_in), finish[tasks.transfer_in]});
  // The fluid solver checks every link's load as it sets rates; a pass over a whole cluster's
  // flows afterwards would cost a sixth of the run.
  if (engine_.solver() != Solver::fluid) check_link_utilization(router_.cluster(), graph_, finish, "iteration");
  check_breakdown(result);
  if (trace_) write_trace(finish);
  return result;
}

}  // namespace clustersim
