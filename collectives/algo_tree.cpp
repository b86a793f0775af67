// NCCL's double binary tree all-reduce: a chain inside each node, two complementary binary trees
// across nodes (even channels use one, odd channels the other), reduce up and broadcast down
// pipelined at the same time, so every tree edge carries the channel's data once each way.
//
// The trees are NCCL's (src/graph/trees.cc, ncclGetBtree and ncclGetDtree, NCCL 2.x): node 0 is
// the root and has one child, the largest power of two below the node count; below it every odd
// node is a leaf and an even node's children sit half its lowest set bit away on either side. The
// second tree is the first mirrored (node i plays node n-1-i) when the node count is even, and
// shifted by one (node i plays node i-1) when it is odd. Either way the first tree's leaves (odd
// nodes) are the second's inner nodes, so no node is inner in both and every NIC carries at most
// four of a channel pair's crossings; mirroring an odd count would keep odd nodes leaves twice and
// even nodes inner twice, six crossings, two thirds of the bandwidth.
#include <algorithm>

#include "collectives/pipeline.hpp"
#include "collectives/trees.hpp"

namespace clustersim {
namespace {

class Tree final : public Algorithm {
 public:
  std::string name() const override { return "tree"; }
  std::string description() const override { return "NCCL double binary tree across nodes, chain inside nodes"; }
  std::vector<Op> ops() const override { return {Op::all_reduce}; }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    if (req.ranks.size() < 2) return graph;
    const auto groups = ranks_by_node(router.cluster(), req.ranks);
    const int nodes = static_cast<int>(groups.size());
    const std::vector<int> first = nccl_btree(nodes), second = nccl_second_tree(first);
    const int depth = tree_depth(first);  // the same for both trees: one is the other relabelled
    const double per_channel = static_cast<double>(req.size_bytes) / req.channels;

    for (int c = 0; c < req.channels; ++c) {
      const std::vector<int>& parents = c % 2 == 0 ? first : second;
      std::vector<int> head(static_cast<std::size_t>(nodes));
      std::vector<Hop> up;
      std::size_t longest_chain = 0;
      for (int k = 0; k < nodes; ++k) {
        const auto& g = groups[static_cast<std::size_t>(k)];
        const std::size_t start = static_cast<std::size_t>(c / 2) % g.size();
        head[static_cast<std::size_t>(k)] = g[start];
        for (std::size_t i = 1; i < g.size(); ++i)  // chain: reduce flows toward the head
          up.push_back({g[(start + i) % g.size()], g[(start + i - 1) % g.size()]});
        longest_chain = std::max(longest_chain, g.size() - 1);
      }
      for (int k = 0; k < nodes; ++k)
        if (parents[static_cast<std::size_t>(k)] >= 0)
          up.push_back({head[static_cast<std::size_t>(k)], head[static_cast<std::size_t>(parents[static_cast<std::size_t>(k)])]});
      std::vector<Hop> hops = up;
      for (const Hop& h : up) hops.push_back({h.dst_gpu, h.src_gpu});  // broadcast back down
      Pipeline p = route_pipeline(router, hops, c, per_channel, req.protocol);
      // A chunk climbs the deepest chain and tree path, then comes back down the same way.
      Seconds intra = 0, inter = 0;
      for (std::size_t i = 0; i < up.size(); ++i) {
        const bool network = router.cluster().node_of_gpu(up[i].src_gpu) != router.cluster().node_of_gpu(up[i].dst_gpu);
        (network ? inter : intra) = std::max(network ? inter : intra, p.hop_latency_s[i]);
      }
      p.add_to(graph, req.protocol.base_latency(AlgoFamily::tree) +
                          2.0 * (static_cast<double>(longest_chain) * intra + depth * inter));
    }
    return graph;
  }
};

}  // namespace

const Algorithm& tree_algorithm() {
  static Tree instance;
  return instance;
}

}  // namespace clustersim
