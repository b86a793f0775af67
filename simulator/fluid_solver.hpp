#pragma once
// The fluid solver: replays a flow graph with max-min bandwidth sharing, its own event loop and its
// own solver, so that a whole cluster's traffic can be replayed at the speed a user needs.
//
// It computes what SimGrid 3.32's CM02 model computes with the engine's settings (engine.hpp): a
// flow first pays its latency without touching its links, then shares them; rates are weighted
// max-min, and a link listed k times in a route carries the flow's bytes k times. A flow's weight
// is its copies (below) over its latency under the cluster's `fabric.sharing: latency` (CM02's
// sharing penalty is the latency, 1 for a flow without), its copies alone under `equal`. What
// differs is the cost: rates are re-solved only in the coupled component of links whose flows
// changed (max-min of one component does not depend on another's), a step without links is a
// timer that never touches the solver, and a flow whose rate did not change keeps its scheduled end.
#include <memory>
#include <vector>

#include "collectives/flow.hpp"

namespace clustersim {

class Router;

class FluidSolver {
 public:
  /// capacity_Bps[link direction]: the bandwidth each direction of each link carries; equal_shares:
  /// every flow one share (fabric.sharing: equal), else shares in inverse proportion to latency.
  explicit FluidSolver(std::vector<double> capacity_Bps, bool equal_shares = false);
  ~FluidSolver();
  FluidSolver(const FluidSolver&) = delete;
  FluidSolver& operator=(const FluidSolver&) = delete;

  /// Each flow's finish time, from 0, once every flow has run; a flow that never started (a
  /// dependency cycle) finishes at -1. With `spread`, each flow goes the ways that router's fabric
  /// splits it, as collectives/spray.hpp's split_flows would lower it, without the copy.
  std::vector<Seconds> run(const FlowGraph& graph, const Router* spread = nullptr);

  /// Coupled components re-solved and flows given a rate in the last run: what the run cost.
  long solves() const { return solves_; }
  long rated_flows() const { return rated_flows_; }

  struct Tables;

 private:
  std::unique_ptr<Tables> tables_;
  long solves_ = 0, rated_flows_ = 0;
};

}  // namespace clustersim
