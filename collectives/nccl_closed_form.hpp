#pragma once
// A collective's time in closed form, without the engine, as NCCL's own cost model gives it: the
// tuner's predicted time for its pick (nccl_choose), or NCCL's ring with the Simple protocol where
// the pick is not wanted or the tuner predicts nothing. `search`'s screen (simulator/search_screen)
// and `serve`'s iterations (workloads/serving/comm_cost) both price collectives with it.
#include <vector>

#include "collectives/collective.hpp"
#include "topologies/cluster.hpp"

namespace clustersim {

/// `op` of `bytes` over `group` with `channels` channels: the tuner's prediction for its pick when
/// `tuned`, else (or when it has none) NCCL's ring with Simple; 0 for one rank or no bytes.
Seconds nccl_closed_form_s(const Cluster& cluster, Op op, const std::vector<int>& group, Bytes bytes, int channels, bool tuned);

}  // namespace clustersim
