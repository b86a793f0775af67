#include "topologies/router.hpp"

#include <cassert>
#include <stdexcept>
#include <deque>
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
  std::deque<int> queue{dst_switch};
  dist[dst_switch] = 0;
  while (!queue.empty()) {
    int s = queue.front();
    queue.pop_front();
    for (const SwitchPort& p : cluster_.switches[s].ports)
      if (dist[p.peer_switch] == kUnreachable) {
        dist[p.peer_switch] = static_cast<std::uint16_t>(dist[s] + 1);
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
  into.append(cluster_, forward(cluster_.nic_port_link[src_nic]));  // NIC -> its switch
  const int target = cluster_.nic_switch[dst_nic];
  const auto& dist = distances_to(target);
  int at = cluster_.nic_switch[src_nic];
  // Builders only make connected fabrics; a hole here is a builder bug, not bad input.
  if (dist[at] == kUnreachable) throw std::logic_error("fabric is disconnected: no route between two NICs");
  while (at != target) {
    const auto& ports = cluster_.switches[at].ports;
    int candidates = 0;
    for (const SwitchPort& p : ports) candidates += dist[p.peer_switch] + 1 == dist[at];
    int pick = static_cast<int>(mix(hash ^ (static_cast<std::uint64_t>(at) << 32)) % static_cast<std::uint64_t>(candidates));
    for (const SwitchPort& p : ports) {
      if (dist[p.peer_switch] + 1 != dist[at]) continue;
      if (pick-- == 0) {
        const Switch& from = cluster_.switches[at];
        into.append(cluster_, cluster_.links[p.link].a == from.vertex ? forward(p.link) : backward(p.link));
        at = p.peer_switch;
        break;
      }
    }
  }
  into.append(cluster_, backward(cluster_.nic_port_link[dst_nic]));  // switch -> NIC
}

Route Router::route_between_nics(int src_nic, int dst_nic, std::uint64_t hash) const {
  Route r;
  // The PCIe link of a NIC is its attachment to the node: every GPU that uses the NIC shares it.
  r.append(cluster_, forward(cluster_.nic_pcie_link[src_nic]));
  append_network(src_nic, dst_nic, hash, r);
  r.append(cluster_, backward(cluster_.nic_pcie_link[dst_nic]));
  return r;
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
  return route_between_nics(cluster_.nic_of_gpu(src_gpu), cluster_.nic_of_gpu(dst_gpu), hash);
}

}  // namespace clustersim
