#pragma once
// ECMP routing computed on demand. Inside a node a route is the NVSwitch or mesh link; across nodes
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
  /// Scale-up path between two GPUs of one node.
  void append_scale_up(int src_gpu, int dst_gpu, Route& into) const;
  /// NIC to NIC across the fabric, ECMP-hashed.
  void append_network(int src_nic, int dst_nic, std::uint64_t hash, Route& into) const;

  const Cluster& cluster() const { return cluster_; }

 private:
  const std::vector<std::uint16_t>& distances_to(int dst_switch) const;
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
  bool remember_ = false;
  mutable std::unordered_map<RouteKey, Route, RouteKeyHash> remembered_;
};

}  // namespace clustersim
