#pragma once
// What a serving iteration's communication costs, without the engine: the same closed forms
// `search`'s screen prices collectives with (collectives/tuner_nccl.hpp): NCCL's tuner's predicted
// time for its pick of a TP all-reduce, and NCCL's ring with Simple where it picks none. NCCL does
// not tune all-to-all or send/recv, so those are bytes over bandwidth: an all-to-all of B bytes per
// GPU over n ranks, p on each node, sends B (p - 1) / n over NVLink and B (n - p) / n over its share
// of its node's NICs at once (nccl_topology's figures), the slower of the two; a point-to-point
// transfer (a pipeline send, a KV cache moving between pools, alone) is its bytes over the
// bottleneck link of the routed path (topologies/router.hpp, usable rates after each link type's
// efficiency) plus the path's latency; kv_transfers.hpp shares the fabric among the KV caches in
// flight.
#include <map>
#include <tuple>
#include <vector>

#include "collectives/algo_deepep.hpp"
#include "topologies/cluster.hpp"
#include "topologies/router.hpp"
#include "topologies/units.hpp"

namespace clustersim {

class ServingComm {
 public:
  explicit ServingComm(const Cluster& cluster);
  /// An all-reduce of `bytes` over `group` (GPU ids); 0 for one rank or no bytes. Cached per (group, bytes).
  Seconds all_reduce_s(const std::vector<int>& group, Bytes bytes);
  /// An all-to-all where every rank of `group` sends `bytes_per_gpu` spread evenly over the ranks.
  Seconds all_to_all_s(const std::vector<int>& group, double bytes_per_gpu);
  /// DeepEP's dispatch (or combine) of `tokens` tokens a GPU of `token_bytes` each over `group`,
  /// which fills whole nodes (or lies in one): a token crosses to each other node it needs once,
  /// over its GPU's share of the node's NICs (deepep_node_hit, node-limited routing), and reaches
  /// each GPU holding one of its experts over NVLink (deepep_rank_hit); the slower leg's time. A
  /// group that fills no whole nodes falls back to all_to_all_s of every token-expert copy.
  Seconds deepep_all_to_all_s(const std::vector<int>& group, double tokens, double token_bytes, const DeepEpRouting& routing);
  /// `bytes` from GPU a to GPU b over the routed path's bottleneck.
  Seconds transfer_s(int a, int b, double bytes);
  /// The routed path's bottleneck (usable B/s) and latency, a != b.
  std::pair<BytesPerSecond, Seconds> path(int a, int b);
  /// The route a transfer from GPU a to GPU b takes (one ECMP hash per GPU pair), a != b.
  const Route& route(int a, int b);
  int channels() const { return channels_; }

 private:
  const Cluster& cluster_;
  Router router_;
  int channels_ = 2;
  std::map<std::pair<std::vector<int>, Bytes>, Seconds> all_reduce_;
  std::map<std::pair<int, int>, std::pair<BytesPerSecond, Seconds>> paths_;
  std::map<std::pair<int, int>, Route> routes_;
};

}  // namespace clustersim
