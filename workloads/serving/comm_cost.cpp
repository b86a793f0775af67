#include "workloads/serving/comm_cost.hpp"

#include <algorithm>
#include <limits>

#include "collectives/nccl_closed_form.hpp"
#include "collectives/tuner_nccl.hpp"

namespace clustersim {

ServingComm::ServingComm(const Cluster& cluster) : cluster_(cluster), router_(cluster) {
  channels_ = std::max(2, 2 * cluster.spec.node.nics);  // as search's screen: two channels per NIC
}

Seconds ServingComm::all_reduce_s(const std::vector<int>& group, Bytes bytes) {
  if (bytes == 0 || group.size() < 2) return 0;
  auto key = std::make_pair(group, bytes);
  if (auto it = all_reduce_.find(key); it != all_reduce_.end()) return it->second;
  const Seconds t = nccl_closed_form_s(cluster_, Op::all_reduce, group, bytes, channels_, true);
  all_reduce_.emplace(std::move(key), t);
  return t;
}

Seconds ServingComm::all_to_all_s(const std::vector<int>& group, double bytes_per_gpu) {
  const double n = double(group.size());
  if (bytes_per_gpu <= 0 || n < 2) return 0;
  const NcclTopology topo = nccl_topology(cluster_, group, channels_);
  // The share for this GPU's node peers crosses NVLink, the rest its share of the node's NICs, at once.
  const double per_node = n / topo.nodes;
  const Seconds nvlink_s = bytes_per_gpu * (per_node - 1) / n / (topo.intra_GBps * kGiga);
  if (topo.nodes == 1) return nvlink_s;
  return std::max(nvlink_s, bytes_per_gpu * (n - per_node) / n / (topo.inter_GBps / per_node * kGiga));
}

Seconds ServingComm::deepep_all_to_all_s(const std::vector<int>& group, double tokens, double token_bytes, const DeepEpRouting& routing) {
  const int n = int(group.size());
  if (tokens <= 0 || n < 2) return 0;
  const NcclTopology topo = nccl_topology(cluster_, group, channels_);
  const int per_node = n / topo.nodes;
  if (topo.nodes > 1 && (n % topo.nodes != 0 || per_node != cluster_.gpus_per_node()))
    return all_to_all_s(group, tokens * token_bytes * routing.top_k);
  const double rdma = tokens * token_bytes * (topo.nodes - 1) * deepep_node_hit(n, per_node, routing);
  const double nvlink = tokens * token_bytes * n * deepep_rank_hit(n, per_node, routing);
  const Seconds nic_s = topo.nodes > 1 ? rdma / (topo.inter_GBps / per_node * kGiga) : 0;
  return std::max(nic_s, nvlink / (topo.intra_GBps * kGiga));
}

std::pair<BytesPerSecond, Seconds> ServingComm::path(int a, int b) {
  const auto key = std::make_pair(a, b);
  if (auto it = paths_.find(key); it != paths_.end()) return it->second;
  const Route& r = route(a, b);
  BytesPerSecond bottleneck = std::numeric_limits<double>::infinity();
  for (LinkDir d : r.links) bottleneck = std::min(bottleneck, cluster_.effective_bandwidth_Bps(link_of(d)));
  const auto out = std::make_pair(bottleneck, r.latency_s);
  paths_.emplace(key, out);
  return out;
}

const Route& ServingComm::route(int a, int b) {
  const auto key = std::make_pair(a, b);
  if (auto it = routes_.find(key); it != routes_.end()) return it->second;
  return routes_.emplace(key, router_.route(a, b, flow_hash(a, b, 0))).first->second;
}

Seconds ServingComm::transfer_s(int a, int b, double bytes) {
  if (a == b || bytes <= 0) return 0;
  const auto [bw, latency] = path(a, b);
  return bytes / bw + latency;
}

}  // namespace clustersim
