#pragma once
// The fabric engine: a SimGrid 3.32 platform built from a cluster graph (one host per GPU, one
// split-duplex link per graph edge) that replays flow graphs with max-min bandwidth sharing.
// SimGrid keeps one platform per process, so a process simulates one cluster.
#include <memory>
#include <vector>

#include "collectives/flow.hpp"
#include "topologies/cluster.hpp"

namespace clustersim {

class FabricEngine {
 public:
  explicit FabricEngine(const Cluster& cluster);
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
