// NCCL's ring: all-reduce as reduce-scatter then all-gather, 2(n-1) steps; all-gather and
// reduce-scatter in n-1 steps; broadcast as a chain from the root. Each channel is its own ring.
#include <algorithm>

#include "collectives/pipeline.hpp"

namespace clustersim {
namespace {

class Ring final : public Algorithm {
 public:
  std::string name() const override { return "ring"; }
  std::string description() const override { return "NCCL ring, one ring per channel, chunk-pipelined"; }
  std::vector<Op> ops() const override { return {Op::all_reduce, Op::all_gather, Op::reduce_scatter, Op::broadcast}; }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    const int n = static_cast<int>(req.ranks.size());
    if (n < 2) return graph;
    const double per_channel = static_cast<double>(req.size_bytes) / req.channels;
    for (int c = 0; c < req.channels; ++c) {
      std::vector<int> order = ring_order(router.cluster(), req.ranks, c);
      std::vector<Hop> hops;
      double steps = 0, bytes_per_hop = 0;
      if (req.op == Op::broadcast) {
        // A chain that starts at the root: rotate the ring so the root comes first, drop the closing hop.
        auto root = std::find(order.begin(), order.end(), req.ranks[req.root]);
        std::rotate(order.begin(), root, order.end());
        for (int i = 0; i + 1 < n; ++i) hops.push_back({order[i], order[i + 1]});
        steps = n - 1;
        bytes_per_hop = per_channel;
      } else {
        for (int i = 0; i < n; ++i) hops.push_back({order[i], order[(i + 1) % n]});
        steps = req.op == Op::all_reduce ? 2.0 * (n - 1) : n - 1.0;
        bytes_per_hop = per_channel * steps / n;
      }
      Pipeline p = route_pipeline(router, hops, c, bytes_per_hop, req.protocol);
      // The first chunk crosses `steps` hops; a hop's latency is the ring's average hop latency.
      p.add_to(graph, req.protocol.base_latency(AlgoFamily::ring) + steps * p.hop_latency_sum() / hops.size());
    }
    return graph;
  }
};

}  // namespace

const Algorithm& ring_algorithm() {
  static Ring instance;
  return instance;
}

}  // namespace clustersim
