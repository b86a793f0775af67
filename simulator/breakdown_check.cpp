#include "simulator/breakdown_check.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "topologies/invariant.hpp"

namespace clustersim {

Seconds breakdown_total(const RankBreakdown& b) {
  return b.compute_s + b.recompute_s + b.tp_s + b.ep_s + b.imbalance_s + b.cp_s + b.pp_exposed_s + b.dp_exposed_s +
         b.optimizer_s + b.bubble_s + b.other_idle_s;
}

namespace {

/// A span [start, end] inside the iteration: timestamps not below zero nor past the end.
void check_span(Seconds& start_s, Seconds& end_s, Seconds iteration_s, const char* what) {
  start_s = non_negative_time(start_s, iteration_s, what);
  end_s = non_negative_time(end_s, iteration_s, what);
  const Seconds slack = kRoundingRelative * iteration_s;
  if (end_s < start_s - slack || end_s > iteration_s + slack) {
    char detail[192];
    std::snprintf(detail, sizeof detail, "%s runs from %.17g s to %.17g s in an iteration of %.17g s", what, start_s,
                  end_s, iteration_s);
    invariant_broken("no negative durations or timestamps", detail);
  }
}

}  // namespace

void check_breakdown(IterationResult& result) {
  const Seconds iteration = non_negative_time(result.iteration_s, result.iteration_s, "the iteration time");
  for (std::size_t r = 0; r < result.ranks.size(); ++r) {
    RankBreakdown& b = result.ranks[r];
    const std::string rank = "pipeline rank " + std::to_string(r) + "'s ";
    for (auto [column, name] : {std::pair{&b.compute_s, "compute"}, {&b.recompute_s, "recompute"}, {&b.tp_s, "tp"},
                                {&b.ep_s, "ep"}, {&b.imbalance_s, "imbalance"}, {&b.cp_s, "cp"},
                                {&b.pp_exposed_s, "pp"}, {&b.dp_exposed_s, "dp"}, {&b.optimizer_s, "optimizer"},
                                {&b.bubble_s, "bubble"}, {&b.other_idle_s, "idle"}})
      *column = non_negative_time(*column, iteration, (rank + name + " time").c_str());
    const Seconds total = breakdown_total(b);
    if (!(std::fabs(total - iteration) <= kBreakdownRelative * iteration)) {
      char detail[192];
      std::snprintf(detail, sizeof detail, "%sbreakdown adds up to %.17g s, the iteration takes %.17g s", rank.c_str(),
                    total, iteration);
      invariant_broken("the breakdown adds up to the iteration", detail);
    }
  }
  for (TraceEvent& e : result.events) check_span(e.start_s, e.end_s, iteration, "a trace event");
  for (PassSpan& p : result.passes) check_span(p.start_s, p.end_s, iteration, "a pass");
}

}  // namespace clustersim
