#pragma once
// Routing computed on demand (hashed ECMP by default; adaptive, spraying and, on a dragonfly, Valiant per fabric.routing). Inside a node a route is the NVSwitch or mesh link; across nodes
// it is GPU -> PCIe -> NIC -> switches -> NIC -> PCIe -> GPU. Between switches every hop picks one
// of the equal-cost next hops by a hash of (flow key, switch), as a real switch hashes a packet's
// 5-tuple, so two flows can collide on one uplink while a third takes another. Shortest-path
// distances are kept per destination switch only (switches x switches, filled lazily), never per GPU
// pair: 16K GPUs would otherwise need 268M routes.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "topologies/cluster.hpp"

namespace clustersim {

/// The hash a flow presents to ECMP; NCCL opens one queue pair per channel, so the channel is part of it.
std::uint64_t flow_hash(int src_gpu, int dst_gpu, int channel);

struct Route {
  std::vector<LinkDir> links;
  Seconds latency_s = 0;
  void append(const Cluster& c, LinkDir d);
  void append(const Route& other);
};

class Router {
 public:
  explicit Router(const Cluster& cluster);

  /// GPU to GPU with the default NICs (the ones next to each GPU).
  Route route(int src_gpu, int dst_gpu, std::uint64_t hash) const;
  /// Appends route(src_gpu, dst_gpu, hash) to `into` without a temporary: what a pipeline of
  /// hundreds of hops does once per hop.
  void append_route(int src_gpu, int dst_gpu, std::uint64_t hash, Route& into) const;
  /// From now on route() keeps every route it computes and hands back the kept one when asked
  /// again: a training iteration lowers each gradient ring once per chunk and bucket, the same
  /// hops every time, and on a 100K-GPU job routing them again costs more than replaying them.
  /// Off by default: a one-shot all-to-all asks for n^2 routes once each.
  void remember_routes() { remember_ = true; }
  /// From the GPU side of `src_nic` to the GPU side of `dst_nic`: PCIe, fabric, PCIe.
  Route route_between_nics(int src_nic, int dst_nic, std::uint64_t hash) const;
  /// From `src_gpu` out of `egress`, a NIC of its node, to `dst_gpu` by dst's own NIC: over the
  /// scale-up domain to the NIC's GPU first where it is not src's own (rail_only's other rails,
  /// NCCL's PXN), then route_between_nics. Not kept by remember_routes.
  void append_route_via_nic(int src_gpu, int egress, int dst_gpu, std::uint64_t hash, Route& into) const;
  /// Scale-up path between two GPUs of one node.
  void append_scale_up(int src_gpu, int dst_gpu, Route& into) const;
  /// NIC to NIC across the fabric: with NICs of several ports the hash picks a port (a plane), the
  /// same on both ends; at each switch the fabric's routing policy picks the next hop.
  void append_network(int src_nic, int dst_nic, std::uint64_t hash, Route& into) const;
  /// The NIC a transfer from `src_gpu` towards `dst_nic` leaves by: the GPU's own, except where rails
  /// are isolated (rail_only) and dst_nic is on another rail: then the source node's NIC on that rail,
  /// reached over the scale-up domain first.
  int egress_nic(int src_gpu, int dst_nic) const;

  // Packet spraying (fabric.routing: spray), lowered by collectives/spray.hpp onto ways in lockstep.
  /// The NIC port a link direction leaves (NIC -> switch) or enters (switch -> NIC); -1 for others.
  int nic_port_of(LinkDir d) const;
  /// Equal-cost next hops at the first switch from one NIC port towards another (1 on one switch).
  int first_hop_ways(int src_port, int dst_port) const;
  /// Equal-cost path number `way` between two NIC ports, as links from the first port's NIC to the
  /// second's: each switch takes next hop (way + a hash of the switch) modulo its candidates, so
  /// ways 0 .. first_hop_ways - 1 leave by distinct uplinks and spread evenly further up.
  void append_port_path(int src_port, int dst_port, std::uint64_t hash, int way, Route& into) const;

  const Cluster& cluster() const { return cluster_; }

 private:
  const std::vector<std::uint16_t>& distances_to(int dst_switch) const;
  void append_between_nics(int src_nic, int dst_nic, std::uint64_t hash, Route& into) const;
  /// The switch walk of append_network and append_port_path; way < 0: the fabric's policy.
  void walk_ports(int src_port, int dst_port, std::uint64_t hash, int way, Route& into) const;
  /// Shortest path between two switches, one equal-cost next hop at each by the policy.
  void walk_switches(int at, int target, std::uint64_t hash, int way, Route& into) const;
  /// The routers a dragonfly route passes, in order, after `from` and ending at `target`: the two
  /// ends of the global link between their groups (and, under valiant, of an intermediate group's).
  std::vector<int> dragonfly_waypoints(int from, int target, std::uint64_t hash) const;
  int adaptive_pick(int at, const std::vector<std::uint16_t>& dist, std::uint64_t hash) const;
  Route compute_route(int src_gpu, int dst_gpu, std::uint64_t hash) const;
  const Cluster& cluster_;
  mutable std::vector<std::vector<std::uint16_t>> distance_cache_;  // [dst switch][switch]
  struct RouteKey {
    int src_gpu, dst_gpu;
    std::uint64_t hash;
    bool operator==(const RouteKey&) const = default;
  };
  struct RouteKeyHash {
    std::size_t operator()(const RouteKey& k) const;
  };
  mutable std::vector<int> routed_on_;     // adaptive: flows routed over each link direction so far
  mutable std::vector<int> port_of_link_;  // nic_port_of's table, filled on first use
  bool remember_ = false;
  mutable std::unordered_map<RouteKey, Route, RouteKeyHash> remembered_;
};

}  // namespace clustersim
