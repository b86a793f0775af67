#pragma once
// Link utilization never above 1: an invariant of every engine run. A flow's bytes cross each link
// of its route between its start (when its last predecessor finished) and its finish, so for any
// window [a, b], the flows that start at or after a and finish by b put their bytes through the
// link within it: at most bandwidth x (b - a). Checked over the windows that begin at a flow's
// start and those that end at a flow's finish (O(k log k) for k flows on a link), which catches a
// solver that lets a link carry more than its bandwidth (SimGrid's lazy updates did, by 6%, on
// per-pair all-to-alls: engine.hpp).
#include <string>
#include <vector>

#include "collectives/flow.hpp"

namespace clustersim {

/// The solver's own slack: SimGrid shares bandwidth to a relative precision of 1e-5
/// (`maxmin/precision`), so a link may read that much over its bandwidth without being wrong.
inline constexpr double kUtilizationSlack = 1e-5;

/// The highest utilization (bytes / (bandwidth x window)) over the windows above, on any link.
double peak_link_utilization(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish_s);

/// Throws InvariantViolation naming `run`, the link and its utilization when it is above 1 + kUtilizationSlack.
void check_link_utilization(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish_s,
                            const std::string& run);

}  // namespace clustersim
