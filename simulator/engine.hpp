#pragma once
// The fabric engine: a SimGrid 3.32 platform built from a cluster graph (one host per GPU, one
// split-duplex link per graph edge) that replays flow graphs with max-min bandwidth sharing.
// SimGrid keeps one platform per process, so a process simulates one cluster.
#include <memory>
#include <vector>

#include "collectives/flow.hpp"
#include "topologies/cluster.hpp"

namespace clustersim {

/// How SimGrid brings flows' progress up to date. Lazy (the default, fastest) updates only the flows
/// whose share changed; on 64-GPU per-pair all-to-alls it has let a link carry 6% more than its
/// bandwidth, where full updates (every flow, every step) keep every link within it. Full serves as
/// the reference that per-link all-to-alls are checked against.
enum class SolverUpdates { lazy, full };

class FabricEngine {
 public:
  explicit FabricEngine(const Cluster& cluster, SolverUpdates updates = SolverUpdates::lazy);
  ~FabricEngine();
  FabricEngine(const FabricEngine&) = delete;
  FabricEngine& operator=(const FabricEngine&) = delete;

  /// Runs every flow once its predecessors finished; returns each flow's finish time, from the call.
  std::vector<Seconds> run(const FlowGraph& graph);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The latest finish time.
Seconds makespan(const std::vector<Seconds>& finish_times);

}  // namespace clustersim
