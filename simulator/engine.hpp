#pragma once
// The fabric engine: replays flow graphs over a cluster's links with max-min bandwidth sharing.
// Two solvers compute the same model (plain max-min over RDMA and NVLink, see README.md):
//  - fluid (the default): ours (fluid_solver.hpp), built to replay a whole cluster's traffic;
//  - simgrid: SimGrid 3.32's CM02 model, the reference the fluid solver is tested against; one
//    platform per process, so one process holds one such engine at a time.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/flow.hpp"
#include "topologies/cluster.hpp"

namespace clustersim {

/// simgrid_full is SimGrid with full updates (`network/optim:Full`): lazy updates (simgrid) have
/// let a link carry 6% more than its bandwidth on 64-GPU per-pair all-to-alls; full ones keep every
/// link within it.
enum class Solver { fluid, simgrid, simgrid_full };

std::string_view to_string(Solver s);
std::optional<Solver> find_solver(std::string_view name);
/// Every solver's name, for `clustersim list` and option errors.
std::vector<std::string> solver_names();
std::string_view solver_description(Solver s);

class FabricEngine {
 public:
  explicit FabricEngine(const Cluster& cluster, Solver solver = Solver::fluid);
  ~FabricEngine();
  FabricEngine(const FabricEngine&) = delete;
  FabricEngine& operator=(const FabricEngine&) = delete;

  /// Runs every flow once its predecessors finished; returns each flow's finish time, from the call.
  std::vector<Seconds> run(const FlowGraph& graph);

  Solver solver() const;

  /// When on, each run afterwards also sums the bytes every link direction carried (LinkDir order):
  /// what `run --report` draws per link tier. Off by default: it is one more pass over every flow's
  /// route, which a whole-cluster replay does not pay unless asked.
  void record_link_bytes(bool on);
  /// The bytes of the latest run, if recorded (else empty). An iteration's last run is its whole
  /// flow graph (TP collectives timed alone run before it).
  const std::vector<double>& last_link_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The bandwidth each link direction carries (LinkDir order): what the fluid solver is built on.
std::vector<double> link_capacities_Bps(const Cluster& cluster);

/// The latest finish time.
/// Every flow's copies as flows of their own; first_copy[id] is where flow id's first copy went.
FlowGraph expand_copies(const FlowGraph& graph, std::vector<FlowId>& first_copy);

Seconds makespan(const std::vector<Seconds>& finish_times);

}  // namespace clustersim
