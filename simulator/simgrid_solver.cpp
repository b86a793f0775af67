#include "simulator/simgrid_solver.hpp"

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
  // The comm being started: the links it crosses and the latency it pays first.
  const std::vector<LinkDir>* route = nullptr;
  sg4::Link* bound = nullptr;  // and, for a rate-bounded flow, its private link
  Seconds latency_s = 0;

  void get_local_route(const routing::NetPoint*, const routing::NetPoint*, routing::Route* into,
                       double* latency) override {
    assert(route && "a route is asked for only while the engine starts a flow");
    for (LinkDir d : *route) into->link_list_.push_back((*links)[d]->get_impl());
    if (bound) into->link_list_.push_back(bound->get_impl());
    if (latency) *latency += latency_s;
  }
};

/// What a comm stands for. Under `fabric.sharing: latency` a flow is one comm, its latency CM02's
/// sharing penalty. Under `equal` a flow with bytes to move is two: its latency alone, then its
/// bytes without latency, which CM02 gives penalty 1 (an equal share); a flow's latency cannot be
/// paid apart from its penalty in one comm.
struct Leg {
  FlowId flow;
  bool latency;  // pays the flow's latency
  bool bytes;    // moves its bytes
};

bool moves_bytes(const Flow& f) { return !f.links.empty() && f.size_bytes > 0; }

bool g_engine_exists = false;

}  // namespace

struct SimGridSolver::Impl {
  std::unique_ptr<sg4::Engine> engine;
  FlowRoutedZone* zone = nullptr;
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Link*> links;  // [LinkDir]
  // Private links for rate-bounded flows (Flow::max_rate_Bps): SimGrid 3.32 ignores a host-to-host
  // comm's rate and a sealed platform takes no new links, so a pool is made with the platform and
  // each bounded flow holds one, set to its bound, while its bytes move.
  std::vector<sg4::Link*> bound_pool, bound_free;
  std::unordered_map<FlowId, sg4::Link*> bound_of;

  // State of the current run.
  const FlowGraph* graph = nullptr;
  std::vector<int> waiting_on;
  std::vector<std::vector<FlowId>> successors;
  std::vector<Seconds> finish;
  std::vector<sg4::CommPtr> comms;
  std::unordered_map<const sg4::Activity*, Leg> leg_of;
  const std::vector<LinkDir> no_links{};  // a latency leg's route
  bool equal_shares = false;
  Seconds start_clock = 0;

  /// Starts the flows in `ready` and any that become ready through them. A flow with no links, no
  /// bytes and no latency (an empty step) finishes on the spot: SimGrid refuses such a comm.
  void start_all(std::vector<FlowId> ready) {
    while (!ready.empty()) {
      const FlowId id = ready.back();
      ready.pop_back();
      const Flow& f = graph->flows[id];
      if (!moves_bytes(f) && f.latency_s == 0) {
        finish_and_release(id, ready);
        continue;
      }
      if (!equal_shares || f.latency_s == 0 || !moves_bytes(f))
        start_leg({id, true, true});
      else
        start_leg({id, true, false});
    }
  }

  void start_leg(Leg leg) {
    const Flow& f = graph->flows[leg.flow];
    zone->route = leg.bytes ? &f.links : &no_links;
    zone->latency_s = leg.latency ? f.latency_s : 0;
    if (leg.bytes && f.max_rate_Bps > 0 && moves_bytes(f)) {
      if (bound_free.empty())
        throw std::logic_error("more than " + std::to_string(bound_pool.size()) +
                               " rate-bounded flows at once: the simgrid solver's pool of private links is spent");
      zone->bound = bound_free.back();
      bound_free.pop_back();
      zone->bound->set_bandwidth(f.max_rate_Bps);  // one copy: SimGrid runs copies expanded
      bound_of[leg.flow] = zone->bound;
    }
    sg4::CommPtr comm = sg4::Comm::sendto_init(hosts[f.src_gpu], hosts[f.dst_gpu]);
    comm->set_payload_size(leg.bytes ? f.size_bytes : 0);
    leg_of[comm.get()] = leg;
    comm->start();
    zone->route = nullptr;
    zone->bound = nullptr;
    comms[leg.flow] = comm;
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
    auto it = leg_of.find(&a);
    if (it == leg_of.end()) return;
    const Leg leg = it->second;
    const FlowId id = leg.flow;
    leg_of.erase(it);
    if (!leg.bytes) return start_leg({id, false, true});
    if (auto b = bound_of.find(id); b != bound_of.end()) {
      bound_free.push_back(b->second);
      bound_of.erase(b);
    }
    std::vector<FlowId> ready;
    finish_and_release(id, ready);
    start_all(std::move(ready));
  }
};

SimGridSolver::SimGridSolver(const Cluster& cluster, bool full_updates) : impl_(std::make_unique<Impl>()) {
  if (g_engine_exists) throw std::logic_error("SimGrid holds one platform per process; one exists already");
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
  impl_->equal_shares = cluster.spec.fabric.sharing == Sharing::equal;
  if (full_updates) impl_->engine->set_config("network/optim:Full");

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
  // A bounded flow is a channel of a collective: a few per GPU at a time (NVLS-tree on 2 nodes
  // runs 16 per GPU with their companions); 64 per GPU leaves room for several at once.
  const int pool = std::min(64 * cluster.gpu_count(), 1 << 17);
  for (int i = 0; i < pool; ++i) {
    sg4::Link* link = zone->create_link("bound" + std::to_string(i), std::vector<double>{1.0});
    link->set_latency(0);
    link->seal();
    impl_->bound_pool.push_back(link);
  }
  impl_->bound_free.assign(impl_->bound_pool.rbegin(), impl_->bound_pool.rend());
  zone->links = &impl_->links;
  zone->seal();
  sg4::Activity::on_completion_cb([impl = impl_.get()](const sg4::Activity& a) { impl->on_done(a); });
}

SimGridSolver::~SimGridSolver() = default;

std::vector<Seconds> SimGridSolver::run(const FlowGraph& graph) {
  Impl& s = *impl_;
  const std::size_t n = graph.flows.size();
  s.graph = &graph;
  s.waiting_on.assign(n, 0);
  s.successors.assign(n, {});
  s.finish.assign(n, -1.0);
  s.comms.assign(n, nullptr);
  s.start_clock = sg4::Engine::get_clock();
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
  // SimGrid's clock only runs forward, across runs: a run is timed from its own start, and the
  // clock's resolution at that start must stay far below the times measured, or a run after one
  // of absurd length would read 0. Input ranges keep the clock small; this says so if not.
  const Seconds span = s.finish.empty() ? 0.0 : *std::max_element(s.finish.begin(), s.finish.end());
  if (span > 0 && std::nextafter(end_clock, INFINITY) - end_clock > 1e-3 * span)
    throw std::logic_error("engine clock at " + std::to_string(end_clock) + " s cannot resolve a run of " +
                           std::to_string(span) + " s");
  return s.finish;
}

}  // namespace clustersim
