#include "simulator/engine.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "collectives/spray.hpp"
#include "simulator/fluid_solver.hpp"
#include "simulator/simgrid_solver.hpp"

namespace clustersim {

namespace {

constexpr std::string_view kNames[] = {"fluid", "simgrid", "simgrid-full"};

/// A flow no solver could time (a NaN or infinite size or latency, a GPU or predecessor that does
/// not exist): a bug upstream, reported with the flow rather than as an abort.
void check_flow(const Flow& f, FlowId id, int gpus, std::size_t flows) {
  for (FlowId before : f.after)
    if (before < 0 || static_cast<std::size_t>(before) >= flows)
      throw std::logic_error("flow " + std::to_string(id) + " waits on flow " + std::to_string(before) + ", not in the graph");
  const bool ok = f.src_gpu >= 0 && f.src_gpu < gpus && f.dst_gpu >= 0 && f.dst_gpu < gpus &&
                  std::isfinite(f.latency_s) && f.latency_s >= 0 && f.copies >= 1 &&
                  std::isfinite(f.max_rate_Bps) && f.max_rate_Bps >= 0 &&
                  static_cast<double>(f.size_bytes) * f.copies < 0x1p60;
  if (!ok)
    throw std::logic_error("flow " + std::to_string(id) + " (GPU " + std::to_string(f.src_gpu) + " -> GPU " +
                           std::to_string(f.dst_gpu) + ", " + std::to_string(f.size_bytes) + " B, latency " +
                           std::to_string(f.latency_s) + " s) cannot be simulated");
}

/// Flows that never started wait on one another (a dependency cycle): names the first few, with
/// their ranks and what they wait for, instead of a bare "some flows never ran".
void report_blocked(const FlowGraph& graph, const std::vector<Seconds>& finish) {
  std::string blocked;
  int count = 0;
  for (FlowId id = 0; id < static_cast<FlowId>(finish.size()); ++id) {
    if (finish[id] >= 0) continue;
    if (++count > 5) continue;
    const Flow& f = graph.flows[id];
    const auto waiting = std::count_if(f.after.begin(), f.after.end(), [&](FlowId a) { return finish[a] < 0; });
    blocked += (blocked.empty() ? "" : "; ") + std::string("flow ") + std::to_string(id) + " GPU " +
               std::to_string(f.src_gpu) + " -> " + std::to_string(f.dst_gpu) + " waits on " +
               std::to_string(waiting) + " of its " + std::to_string(f.after.size()) + " predecessors";
  }
  if (count > 0)
    throw std::logic_error("flow graph has a dependency cycle: " + std::to_string(count) + " of " +
                           std::to_string(finish.size()) + " flows never started (" + blocked + (count > 5 ? "; ..." : "") + ")");
}

}  // namespace

std::string_view to_string(Solver s) { return kNames[static_cast<int>(s)]; }

std::string_view solver_description(Solver s) {
  switch (s) {
    case Solver::fluid: return "ours: max-min re-solved only around what changed (the default)";
    case Solver::simgrid: return "SimGrid 3.32's CM02 max-min, lazy updates (the reference)";
    case Solver::simgrid_full: return "SimGrid 3.32's CM02 max-min, every flow updated at every step";
  }
  return "";
}

std::optional<Solver> find_solver(std::string_view name) {
  for (int i = 0; i < 3; ++i)
    if (kNames[i] == name) return static_cast<Solver>(i);
  return std::nullopt;
}

std::vector<std::string> solver_names() { return {std::begin(kNames), std::end(kNames)}; }

struct FabricEngine::Impl {
  Solver solver;
  int gpus = 0;
  std::size_t link_directions = 0;
  bool record_link_bytes = false;
  std::vector<double> link_bytes;
  std::unique_ptr<FluidSolver> fluid;
  std::unique_ptr<SimGridSolver> simgrid;
  std::unique_ptr<Router> split_router;  // fabric.routing: spray, or queue pairs under ecmp
};

FabricEngine::FabricEngine(const Cluster& cluster, Solver solver) : impl_(std::make_unique<Impl>()) {
  impl_->solver = solver;
  impl_->gpus = cluster.gpu_count();
  impl_->link_directions = 2 * cluster.links.size();
  if (splits_flows(cluster.spec.fabric)) impl_->split_router = std::make_unique<Router>(cluster);
  if (solver == Solver::fluid)
    impl_->fluid = std::make_unique<FluidSolver>(link_capacities_Bps(cluster), cluster.spec.fabric.sharing == Sharing::equal);
  else
    impl_->simgrid = std::make_unique<SimGridSolver>(cluster, solver == Solver::simgrid_full);
}

FabricEngine::~FabricEngine() = default;

Solver FabricEngine::solver() const { return impl_->solver; }

void FabricEngine::record_link_bytes(bool on) {
  impl_->record_link_bytes = on;
  impl_->link_bytes.clear();
}

const std::vector<double>& FabricEngine::last_link_bytes() const { return impl_->link_bytes; }

std::vector<Seconds> FabricEngine::run(const FlowGraph& input) {
  // Spraying and queue pairs spread each fabric-crossing flow over its ways, flow for flow: in the
  // fluid solver as it interns routes, else (and to count link bytes) in a copy of the graph.
  const bool spread_in_solver = impl_->fluid && !impl_->record_link_bytes;
  const bool copy_split = impl_->split_router && !spread_in_solver;
  FlowGraph split;
  if (copy_split) split = split_flows(*impl_->split_router, input);
  const FlowGraph& graph = copy_split ? split : input;
  bool copied = false;
  for (FlowId id = 0; id < static_cast<FlowId>(graph.flows.size()); ++id) {
    check_flow(graph.flows[id], id, impl_->gpus, graph.flows.size());
    copied = copied || graph.flows[id].copies > 1;
  }
  std::vector<Seconds> finish;
  if (impl_->fluid) {
    finish = impl_->fluid->run(graph, spread_in_solver ? impl_->split_router.get() : nullptr);
  } else if (!copied) {
    finish = impl_->simgrid->run(graph);
  } else {  // SimGrid runs every copy as its own flow; a flow ends with its last copy
    std::vector<FlowId> first_copy;
    const FlowGraph expanded = expand_copies(graph, first_copy);
    const std::vector<Seconds> each = impl_->simgrid->run(expanded);
    finish.assign(graph.flows.size(), 0);
    for (FlowId id = 0; id < static_cast<FlowId>(graph.flows.size()); ++id)
      for (int k = 0; k < graph.flows[id].copies; ++k) finish[id] = std::max(finish[id], each[first_copy[id] + k]);
  }
  report_blocked(graph, finish);
  if (impl_->record_link_bytes) {
    impl_->link_bytes.assign(impl_->link_directions, 0.0);
    for (const Flow& f : graph.flows)
      for (LinkDir d : f.links) impl_->link_bytes[static_cast<std::size_t>(d)] += static_cast<double>(f.size_bytes) * f.copies;
  }
  finish.resize(input.flows.size());
  return finish;
}

FlowGraph expand_copies(const FlowGraph& graph, std::vector<FlowId>& first_copy) {
  first_copy.assign(graph.flows.size(), 0);
  FlowId next = 0;
  for (std::size_t id = 0; id < graph.flows.size(); ++id) {
    first_copy[id] = next;
    next += graph.flows[id].copies;
  }
  FlowGraph out;
  out.flows.reserve(static_cast<std::size_t>(next));
  for (const Flow& f : graph.flows)
    for (int k = 0; k < f.copies; ++k) {
      Flow one = f;
      one.copies = 1;
      one.after.clear();
      for (FlowId a : f.after)
        for (int j = 0; j < graph.flows[a].copies; ++j) one.after.push_back(first_copy[a] + j);
      out.add(std::move(one));
    }
  return out;
}

std::vector<double> link_capacities_Bps(const Cluster& cluster) {
  std::vector<double> out(2 * cluster.links.size());
  for (LinkId l = 0; l < static_cast<LinkId>(cluster.links.size()); ++l)
    out[static_cast<std::size_t>(forward(l))] = out[static_cast<std::size_t>(backward(l))] = cluster.effective_bandwidth_Bps(l);
  return out;
}

Seconds makespan(const std::vector<Seconds>& finish_times) {
  return finish_times.empty() ? 0.0 : *std::max_element(finish_times.begin(), finish_times.end());
}

}  // namespace clustersim
