#pragma once
// KV caches moving from prefill to decode replicas, all on the fabric at once. Each GPU of the
// prefill replica holds its shard of a request's KV cache (its heads of its stage's layers) and
// sends it to the decode replica's GPU of the same rank, so a transfer is tp x pp flows. Every flow
// in flight gets its max-min fair share of each link direction it crosses (progressive filling,
// equal shares, as the engine's fluid solver shares a fabric), recomputed whenever one starts or
// ends for the flows that share a link with it, directly or through others: concurrent transfers
// that meet on a NIC, a leaf uplink or a spine slow each other, and a node with fewer NICs than
// GPUs carries its GPUs' shards through the NICs it has. A transfer lands
// when its last shard's bytes are through, plus that shard's path latency; alone, with each shard
// on links of its own, that is the shard's bytes over its path's bottleneck plus the latency
// (ServingComm::transfer_s).
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topologies/cluster.hpp"
#include "topologies/units.hpp"
#include "workloads/serving/comm_cost.hpp"

namespace clustersim {

class KvTransfers {
 public:
  KvTransfers(const Cluster& cluster, ServingComm& comm) : cluster_(cluster), comm_(comm) {}

  /// Starts request `request`'s transfer at `now`: `bytes_per_gpu` from from_gpus[i] to to_gpus[i]
  /// (the two replicas' GPUs in rank order, as many on each side). Returns the time the same
  /// transfer would take alone on the fabric (its own shards still share what they both cross).
  Seconds start(Seconds now, long request, const std::vector<int>& from_gpus, const std::vector<int>& to_gpus,
                double bytes_per_gpu);

  /// When the next flow's bytes are through at the present rates; infinity when none is moving.
  Seconds next_end_s() const { return ends_.empty() ? std::numeric_limits<double>::infinity() : ends_.begin()->first; }

  /// Moves every flow on to `now` (no earlier than the last call) and returns, for each transfer
  /// whose bytes are all through, its request and when it lands (now or later, by the latency).
  std::vector<std::pair<long, Seconds>> advance(Seconds now);

  /// Changes whenever the rates do, so that a wake-up set for an older next_end_s can be told apart.
  long version() const { return version_; }

 private:
  struct Shard {
    long transfer = -1;  // into transfers_; -1 once through (its slot is free)
    std::vector<LinkDir> links;
    double remaining_bytes = 0;
    double rate_Bps = 0;
    Seconds since = 0;  // remaining_bytes is as of this time
    Seconds end_s = 0;  // when its bytes are through at rate_Bps
    Seconds latency_s = 0;
  };
  struct Transfer {
    long request = 0;
    int shards_left = 0;
    Seconds lands_s = 0;  // the latest of its shards' bytes-through + latency so far
  };

  /// New max-min rates for the shards that share a link, directly or through others, with any of
  /// `seeds`: only they can change when a shard starts or ends.
  void rerate(Seconds now, const std::vector<int>& seeds);
  Seconds alone_s(const std::vector<int>& from_gpus, const std::vector<int>& to_gpus, double bytes_per_gpu);

  const Cluster& cluster_;
  ServingComm& comm_;
  std::vector<Shard> shards_;
  std::vector<int> free_shards_;
  std::unordered_map<LinkDir, std::vector<int>> on_link_;  // the moving shards on each link direction
  std::set<std::pair<Seconds, int>> ends_;                  // (end_s, shard) of every moving shard
  std::vector<Transfer> transfers_;
  std::vector<long> free_transfers_;
  std::vector<char> seen_;  // per shard, for rerate's walk
  long version_ = 0;
  bool timing_alone_ = false;  // this one times a transfer alone (alone_s), so it does not time its own
};

}  // namespace clustersim
