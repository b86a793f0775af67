#include "simulator/engine.hpp"

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <cassert>
#include <stdexcept>
#include <unordered_map>

namespace clustersim {

namespace sg4 = simgrid::s4u;
namespace routing = simgrid::kernel::routing;

namespace {

/// A zone whose route is whatever the engine says the flow being started takes. Routes come from
/// our ECMP router (per flow, hashed), not from SimGrid's per host-pair tables: SimGrid asks for the
/// route exactly once, synchronously, inside Comm::start(), and the engine sets it just before.
class FlowRoutedZone final : public routing::NetZoneImpl {
 public:
  explicit FlowRoutedZone(const std::string& name) : NetZoneImpl(name) {}
  const std::vector<sg4::Link*>* links = nullptr;  // by LinkDir
  const Flow* current = nullptr;

  void get_local_route(const routing::NetPoint*, const routing::NetPoint*, routing::Route* into,
                       double* latency) override {
    assert(current && "a route is asked for only while the engine starts a flow");
    for (LinkDir d : current->links) into->link_list_.push_back((*links)[d]->get_impl());
    if (latency) *latency += current->latency_s;
  }
};

bool g_engine_exists = false;

/// A flow SimGrid could not time (a NaN or infinite size or latency makes it abort): a bug upstream,
/// reported with the flow rather than as a SimGrid backtrace.
void check_flow(const Flow& f, FlowId id, std::size_t hosts, std::size_t flows) {
  for (FlowId before : f.after)
    if (before < 0 || static_cast<std::size_t>(before) >= flows)
      throw std::logic_error("flow " + std::to_string(id) + " waits on flow " + std::to_string(before) + ", not in the graph");
  const bool ok = f.src_gpu >= 0 && static_cast<std::size_t>(f.src_gpu) < hosts && f.dst_gpu >= 0 &&
                  static_cast<std::size_t>(f.dst_gpu) < hosts && std::isfinite(f.latency_s) && f.latency_s >= 0 &&
                  static_cast<double>(f.size_bytes) < 0x1p60;
  if (!ok)
    throw std::logic_error("flow " + std::to_string(id) + " (GPU " + std::to_string(f.src_gpu) + " -> GPU " +
                           std::to_string(f.dst_gpu) + ", " + std::to_string(f.size_bytes) + " B, latency " +
                           std::to_string(f.latency_s) + " s) cannot be simulated");
}

/// Flows that never started wait on one another (a dependency cycle): names the first few, with
/// their ranks and what they wait for, instead of a bare "some flows never ran".
void report_blocked(const FlowGraph& graph, const std::vector<Seconds>& finish, const std::vector<int>& waiting_on) {
  std::string blocked;
  int count = 0;
  for (FlowId id = 0; id < static_cast<FlowId>(finish.size()); ++id) {
    if (finish[id] >= 0) continue;
    if (++count > 5) continue;
    const Flow& f = graph.flows[id];
    blocked += (blocked.empty() ? "" : "; ") + std::string("flow ") + std::to_string(id) + " GPU " +
               std::to_string(f.src_gpu) + " -> " + std::to_string(f.dst_gpu) + " waits on " +
               std::to_string(waiting_on[id]) + " of its " + std::to_string(f.after.size()) + " predecessors";
  }
  if (count > 0)
    throw std::logic_error("flow graph has a dependency cycle: " + std::to_string(count) + " of " +
                           std::to_string(finish.size()) + " flows never started (" + blocked + (count > 5 ? "; ..." : "") + ")");
}

}  // namespace

struct FabricEngine::Impl {
  std::unique_ptr<sg4::Engine> engine;
  FlowRoutedZone* zone = nullptr;
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Link*> links;  // [LinkDir]

  // State of the current run.
  const FlowGraph* graph = nullptr;
  std::vector<int> waiting_on;
  std::vector<std::vector<FlowId>> successors;
  std::vector<Seconds> finish;
  std::vector<sg4::CommPtr> comms;
  std::unordered_map<const sg4::Activity*, FlowId> flow_of;
  Seconds start_clock = 0;

  /// Starts the flows in `ready` and any that become ready through them. A flow with no links, no
  /// bytes and no latency (an empty step) finishes on the spot: SimGrid refuses such a comm.
  void start_all(std::vector<FlowId> ready) {
    while (!ready.empty()) {
      const FlowId id = ready.back();
      ready.pop_back();
      const Flow& f = graph->flows[id];
      if (f.links.empty() && f.size_bytes == 0 && f.latency_s == 0) {
        finish_and_release(id, ready);
        continue;
      }
      zone->current = &f;
      sg4::CommPtr comm = sg4::Comm::sendto_init(hosts[f.src_gpu], hosts[f.dst_gpu]);
      comm->set_payload_size(f.size_bytes);
      flow_of[comm.get()] = id;
      comm->start();
      zone->current = nullptr;
      comms[id] = comm;
    }
  }

  void finish_and_release(FlowId id, std::vector<FlowId>& ready) {
    // The clock never runs backwards; a difference below zero could only be rounding.
    const Seconds t = sg4::Engine::get_clock() - start_clock;
    assert(t > -1e-12 && "a flow finishes after its run started");
    finish[id] = std::max(t, 0.0);
    for (FlowId next : successors[id])
      if (--waiting_on[next] == 0) ready.push_back(next);
  }

  void on_done(const sg4::Activity& a) {
    auto it = flow_of.find(&a);
    if (it == flow_of.end()) return;
    const FlowId id = it->second;
    flow_of.erase(it);
    std::vector<FlowId> ready;
    finish_and_release(id, ready);
    start_all(std::move(ready));
  }
};

FabricEngine::FabricEngine(const Cluster& cluster, SolverUpdates updates) : impl_(std::make_unique<Impl>()) {
  if (g_engine_exists) throw std::logic_error("SimGrid holds one platform per process; a FabricEngine exists already");
  g_engine_exists = true;
  static int argc = 1;
  static char name[] = "clustersim";
  static char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thres:critical");
  impl_->engine = std::make_unique<sg4::Engine>(&argc, argv);
  // Plain max-min over RDMA and NVLink: none of SimGrid's TCP calibration (LV08's latency x13.01,
  // bandwidth x0.97, a window bound of gamma / 2 latency, 5% ACK cross-traffic on the back path).
  impl_->engine->set_config("network/model:CM02");
  impl_->engine->set_config("network/latency-factor:1");
  impl_->engine->set_config("network/bandwidth-factor:1");
  impl_->engine->set_config("network/weight-S:0");
  impl_->engine->set_config("network/TCP-gamma:0");
  impl_->engine->set_config("network/crosstraffic:0");
  if (updates == SolverUpdates::full) impl_->engine->set_config("network/optim:Full");

  auto* zone = new FlowRoutedZone(cluster.spec.name.empty() ? "cluster" : cluster.spec.name);
  impl_->zone = zone;
  for (int g = 0; g < cluster.gpu_count(); ++g)
    impl_->hosts.push_back(zone->create_host(cluster.graph[cluster.gpu_vertex[g]].name, std::vector<double>{1.0}));
  impl_->links.resize(2 * cluster.links.size());
  for (LinkId l = 0; l < static_cast<LinkId>(cluster.links.size()); ++l) {
    // Latency lives on the flow (the router sums it per hop); links only carry bandwidth.
    auto* link = zone->create_split_duplex_link("l" + std::to_string(l), std::vector<double>{cluster.effective_bandwidth_Bps(l)});
    link->set_latency(0);
    link->seal();
    impl_->links[forward(l)] = link->get_link_up();
    impl_->links[backward(l)] = link->get_link_down();
  }
  zone->links = &impl_->links;
  zone->seal();
  sg4::Activity::on_completion_cb([impl = impl_.get()](const sg4::Activity& a) { impl->on_done(a); });
}

FabricEngine::~FabricEngine() = default;

std::vector<Seconds> FabricEngine::run(const FlowGraph& graph) {
  Impl& s = *impl_;
  const std::size_t n = graph.flows.size();
  s.graph = &graph;
  s.waiting_on.assign(n, 0);
  s.successors.assign(n, {});
  s.finish.assign(n, -1.0);
  s.comms.assign(n, nullptr);
  s.start_clock = sg4::Engine::get_clock();
  for (FlowId id = 0; id < static_cast<FlowId>(n); ++id) check_flow(graph.flows[id], id, s.hosts.size(), n);
  for (FlowId id = 0; id < static_cast<FlowId>(n); ++id)
    for (FlowId before : graph.flows[id].after) {
      s.successors[before].push_back(id);
      ++s.waiting_on[id];
    }
  std::vector<FlowId> ready;
  for (FlowId id = static_cast<FlowId>(n) - 1; id >= 0; --id)
    if (s.waiting_on[id] == 0) ready.push_back(id);
  s.start_all(std::move(ready));
  s.engine->run();
  const Seconds end_clock = sg4::Engine::get_clock();
  s.comms.clear();
  s.graph = nullptr;
  report_blocked(graph, s.finish, s.waiting_on);
  // SimGrid's clock only runs forward, across runs: a run is timed from its own start, and the
  // clock's resolution at that start must stay far below the times measured, or a run after one
  // of absurd length would read 0. Input ranges keep the clock small; this says so if not.
  const Seconds span = makespan(s.finish);
  if (span > 0 && std::nextafter(end_clock, INFINITY) - end_clock > 1e-3 * span)
    throw std::logic_error("engine clock at " + std::to_string(end_clock) + " s cannot resolve a run of " +
                           std::to_string(span) + " s");
  return s.finish;
}

Seconds makespan(const std::vector<Seconds>& finish_times) {
  return finish_times.empty() ? 0.0 : *std::max_element(finish_times.begin(), finish_times.end());
}

}  // namespace clustersim
