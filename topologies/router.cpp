#include "topologies/router.hpp"

#include <cassert>
#include <stdexcept>
#include <limits>

namespace clustersim {

namespace {
std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser: cheap, well spread, deterministic
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
constexpr std::uint16_t kUnreachable = std::numeric_limits<std::uint16_t>::max();
}  // namespace

std::uint64_t flow_hash(int src_gpu, int dst_gpu, int channel) {
  return mix(mix(mix(static_cast<std::uint64_t>(src_gpu)) ^ static_cast<std::uint64_t>(dst_gpu)) ^
             static_cast<std::uint64_t>(channel));
}

void Route::append(const Cluster& c, LinkDir d) {
  links.push_back(d);
  latency_s += c.links[link_of(d)].latency_s;
}

void Route::append(const Route& other) {
  links.insert(links.end(), other.links.begin(), other.links.end());
  latency_s += other.latency_s;
}

Router::Router(const Cluster& cluster) : cluster_(cluster), distance_cache_(cluster.switches.size()) {}

const std::vector<std::uint16_t>& Router::distances_to(int dst_switch) const {
  auto& dist = distance_cache_[dst_switch];
  if (!dist.empty()) return dist;
  dist.assign(cluster_.switches.size(), kUnreachable);
  // A flat queue: every switch enters it at most once. The BFS is most of what routing a 100K-GPU
  // fabric costs (one per destination leaf), so it stays a tight loop.
  std::vector<int> queue;
  queue.reserve(cluster_.switches.size());
  queue.push_back(dst_switch);
  dist[dst_switch] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const int s = queue[head];
    const std::uint16_t next = static_cast<std::uint16_t>(dist[s] + 1);
    for (const SwitchPort& p : cluster_.switches[s].ports)
      if (dist[p.peer_switch] == kUnreachable) {
        dist[p.peer_switch] = next;
        queue.push_back(p.peer_switch);
      }
  }
  return dist;
}

void Router::append_scale_up(int src_gpu, int dst_gpu, Route& into) const {
  assert(cluster_.node_of_gpu(src_gpu) == cluster_.node_of_gpu(dst_gpu) && "scale-up routes stay in a node");
  if (src_gpu == dst_gpu) return;
  if (cluster_.spec.node.scale_up == ScaleUp::nvswitch) {
    into.append(cluster_, forward(cluster_.gpu_switch_link[src_gpu]));   // GPU -> NVSwitch
    if (cluster_.scale_up_domain_of_gpu(src_gpu) != cluster_.scale_up_domain_of_gpu(dst_gpu)) {
      into.append(cluster_, forward(cluster_.scale_up_uplink_of_gpu(src_gpu)));   // -> second-level NVSwitch
      into.append(cluster_, backward(cluster_.scale_up_uplink_of_gpu(dst_gpu)));  // -> the other domain's
    }
    into.append(cluster_, backward(cluster_.gpu_switch_link[dst_gpu]));  // NVSwitch -> GPU
    return;
  }
  const int g = cluster_.gpus_per_node();
  const int node = cluster_.node_of_gpu(src_gpu);
  const int i = cluster_.local_of_gpu(src_gpu), j = cluster_.local_of_gpu(dst_gpu);
  LinkId l = cluster_.mesh_link[static_cast<std::size_t>(node) * g * g + i * g + j];
  into.append(cluster_, cluster_.links[l].a == cluster_.gpu_vertex[src_gpu] ? forward(l) : backward(l));
}

void Router::append_network(int src_nic, int dst_nic, std::uint64_t hash, Route& into) const {
  // A multi-plane NIC's ports sit on disjoint planes: both ends take the same port, hence plane.
  const int ports = cluster_.ports_per_nic();
  const int port = ports == 1 ? 0 : static_cast<int>(mix(hash ^ 0x5A17ULL) % static_cast<std::uint64_t>(ports));
  walk_ports(cluster_.nic_port(src_nic, port), cluster_.nic_port(dst_nic, port), hash, -1, into);
}

void Router::append_port_path(int src_port, int dst_port, std::uint64_t hash, int way, Route& into) const {
  walk_ports(src_port, dst_port, hash, way, into);
}

int Router::adaptive_pick(int at, const std::vector<std::uint16_t>& dist, std::uint64_t hash) const {
  // Least flows routed so far over the candidate uplink; ties go round from the hashed candidate,
  // so equal loads still spread and the choice stays deterministic.
  if (routed_on_.empty()) routed_on_.assign(2 * cluster_.links.size(), 0);
  const auto& ports = cluster_.switches[at].ports;
  const std::size_t n = ports.size();
  const std::size_t first = static_cast<std::size_t>(mix(hash ^ (static_cast<std::uint64_t>(at) << 32)) % n);
  int best = -1, best_load = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (first + k) % n;
    const SwitchPort& p = ports[i];
    if (dist[p.peer_switch] + 1 != dist[at]) continue;
    const LinkDir d = cluster_.links[p.link].a == cluster_.switches[at].vertex ? forward(p.link) : backward(p.link);
    const int load = routed_on_[static_cast<std::size_t>(d)];
    if (best < 0 || load < best_load) best = static_cast<int>(i), best_load = load;
  }
  return best;
}

void Router::walk_ports(int src_port, int dst_port, std::uint64_t hash, int way, Route& into) const {
  into.append(cluster_, forward(cluster_.nic_port_link[src_port]));  // NIC -> its switch
  int at = cluster_.nic_switch[src_port];
  const int target = cluster_.nic_switch[dst_port];
  if (cluster_.spec.fabric.type == "dragonfly") {
    for (int next : dragonfly_waypoints(at, target, hash)) {
      walk_switches(at, next, hash, way, into);
      at = next;
    }
  } else {
    walk_switches(at, target, hash, way, into);
  }
  into.append(cluster_, backward(cluster_.nic_port_link[dst_port]));  // switch -> NIC
}

std::vector<int> Router::dragonfly_waypoints(int from, int target, std::uint64_t hash) const {
  // Routers are numbered group by group (fabric_dragonfly.cpp), and group g's link to group t
  // (g < t) leaves router (t - 1) / h of g and lands on router g / h of t. A route between groups
  // takes that link (Kim et al., ISCA 2008, section 4.1: local, global, local), never a shorter
  // chain of two global links through a third group, which a shortest path in hops would.
  const FabricSpec& f = cluster_.spec.fabric;
  const int a = f.routers_per_group, h = f.global_links;
  const int src_group = from / a, dst_group = target / a;
  if (src_group == dst_group) return {target};
  auto link = [&](int g, int t) {  // (the router of g holding the g-t link, the router of t it lands on)
    return g < t ? std::make_pair(g * a + (t - 1) / h, t * a + g / h) : std::make_pair(g * a + t / h, t * a + (g - 1) / h);
  };
  if (f.routing != Routing::valiant || f.groups < 3) {
    const auto [out, in] = link(src_group, dst_group);
    return {out, in, target};
  }
  // Valiant: minimally to an intermediate group the flow's hash picks among the others, then
  // minimally to the destination: local, global, local, global, local at most.
  int mid = static_cast<int>(mix(hash ^ 0x76616c69616e74ULL) % static_cast<std::uint64_t>(f.groups - 2));
  for (int g : {std::min(src_group, dst_group), std::max(src_group, dst_group)}) mid += mid >= g;
  const auto [out, in] = link(src_group, mid);
  const auto [out2, in2] = link(mid, dst_group);
  return {out, in, out2, in2, target};
}

void Router::walk_switches(int at, int target, std::uint64_t hash, int way, Route& into) const {
  const auto& dist = distances_to(target);
  // Builders only make connected fabrics and the router never asks across planes or isolated rails;
  // a hole here is a bug, not bad input.
  if (dist[at] == kUnreachable) throw std::logic_error("fabric is disconnected: no route between two NICs");
  const bool adaptive = way < 0 && cluster_.spec.fabric.routing == Routing::adaptive;
  // A torus's routers list their ports dimension by dimension (fabric_torus.cpp): the first
  // equal-cost port is dimension-ordered routing.
  const bool dimension_ordered = way < 0 && !adaptive && cluster_.spec.fabric.type == "torus";
  while (at != target) {
    const auto& ports = cluster_.switches[at].ports;
    const SwitchPort* next = nullptr;
    if (adaptive) {
      next = &ports[static_cast<std::size_t>(adaptive_pick(at, dist, hash))];
    } else {
      int candidates = 0;
      for (const SwitchPort& p : ports) candidates += dist[p.peer_switch] + 1 == dist[at];
      const std::uint64_t spread = mix(hash ^ (static_cast<std::uint64_t>(at) << 32));
      int pick = dimension_ordered ? 0
                                   : static_cast<int>((way < 0 ? spread : spread + static_cast<std::uint64_t>(way)) %
                                                      static_cast<std::uint64_t>(candidates));
      for (const SwitchPort& p : ports)
        if (dist[p.peer_switch] + 1 == dist[at] && pick-- == 0) {
          next = &p;
          break;
        }
    }
    const Switch& from = cluster_.switches[at];
    const LinkDir d = cluster_.links[next->link].a == from.vertex ? forward(next->link) : backward(next->link);
    if (adaptive) routed_on_[static_cast<std::size_t>(d)] += 1;
    into.append(cluster_, d);
    at = next->peer_switch;
  }
}

int Router::first_hop_ways(int src_port, int dst_port) const {
  const int target = cluster_.nic_switch[dst_port], at = cluster_.nic_switch[src_port];
  const auto& dist = distances_to(target);
  int candidates = 0;
  for (const SwitchPort& p : cluster_.switches[at].ports) candidates += dist[p.peer_switch] + 1 == dist[at];
  return at == target ? 1 : candidates;
}

int Router::nic_port_of(LinkDir d) const {
  if (port_of_link_.empty()) {
    port_of_link_.assign(cluster_.links.size(), -1);
    for (std::size_t port = 0; port < cluster_.nic_port_link.size(); ++port)
      port_of_link_[static_cast<std::size_t>(cluster_.nic_port_link[port])] = static_cast<int>(port);
  }
  return port_of_link_[static_cast<std::size_t>(link_of(d))];
}

int Router::egress_nic(int src_gpu, int dst_nic) const {
  const int own = cluster_.nic_of_gpu(src_gpu);
  if (!cluster_.rails_isolated || cluster_.rail_of_nic(own) == cluster_.rail_of_nic(dst_nic)) return own;
  return cluster_.node_of_gpu(src_gpu) * cluster_.nics_per_node() + cluster_.rail_of_nic(dst_nic);
}

Route Router::route_between_nics(int src_nic, int dst_nic, std::uint64_t hash) const {
  Route r;
  append_between_nics(src_nic, dst_nic, hash, r);
  return r;
}

void Router::append_between_nics(int src_nic, int dst_nic, std::uint64_t hash, Route& into) const {
  // The PCIe link of a NIC is its attachment to the node: every GPU that uses the NIC shares it.
  into.append(cluster_, forward(cluster_.nic_pcie_link[src_nic]));
  append_network(src_nic, dst_nic, hash, into);
  into.append(cluster_, backward(cluster_.nic_pcie_link[dst_nic]));
}

void Router::append_route_via_nic(int src_gpu, int egress, int dst_gpu, std::uint64_t hash, Route& into) const {
  if (egress != cluster_.nic_of_gpu(src_gpu)) append_scale_up(src_gpu, cluster_.gpu_of_nic(egress), into);
  append_between_nics(egress, cluster_.nic_of_gpu(dst_gpu), hash, into);
}

std::size_t Router::RouteKeyHash::operator()(const RouteKey& k) const {
  return static_cast<std::size_t>(flow_hash(k.src_gpu, k.dst_gpu, 0) ^ mix(k.hash));
}

Route Router::route(int src_gpu, int dst_gpu, std::uint64_t hash) const {
  if (!remember_) return compute_route(src_gpu, dst_gpu, hash);
  Route r;
  append_route(src_gpu, dst_gpu, hash, r);
  return r;
}

void Router::append_route(int src_gpu, int dst_gpu, std::uint64_t hash, Route& into) const {
  if (!remember_) return into.append(compute_route(src_gpu, dst_gpu, hash));
  auto [it, fresh] = remembered_.try_emplace(RouteKey{src_gpu, dst_gpu, hash});
  if (fresh) it->second = compute_route(src_gpu, dst_gpu, hash);
  into.append(it->second);
}

Route Router::compute_route(int src_gpu, int dst_gpu, std::uint64_t hash) const {
  if (cluster_.node_of_gpu(src_gpu) == cluster_.node_of_gpu(dst_gpu)) {
    Route r;
    append_scale_up(src_gpu, dst_gpu, r);
    return r;
  }
  Route r;
  append_route_via_nic(src_gpu, egress_nic(src_gpu, cluster_.nic_of_gpu(dst_gpu)), dst_gpu, hash, r);
  return r;
}

}  // namespace clustersim
