#pragma once
// SimGrid 3.32 as a solver: a platform built from a cluster graph (one host per GPU, one
// split-duplex link per graph edge) that replays flow graphs with its CM02 max-min model. SimGrid
// keeps one platform per process, so a process holds at most one of these.
#include <memory>
#include <vector>

#include "collectives/flow.hpp"
#include "topologies/cluster.hpp"

namespace clustersim {

class SimGridSolver {
 public:
  /// full_updates: SimGrid's `network/optim:Full` (every flow brought up to date at every step)
  /// instead of Lazy (only the flows whose share changed).
  SimGridSolver(const Cluster& cluster, bool full_updates);
  ~SimGridSolver();
  SimGridSolver(const SimGridSolver&) = delete;
  SimGridSolver& operator=(const SimGridSolver&) = delete;

  /// Each flow's finish time, from the call; -1 for a flow that never started.
  std::vector<Seconds> run(const FlowGraph& graph);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
