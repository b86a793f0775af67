// NCCL's double binary tree all-reduce: a chain inside each node, two complementary binary trees
// across nodes (even channels use one, odd channels the other), reduce up and broadcast down
// pipelined at the same time, so every tree edge carries the channel's data once each way.
#include <algorithm>

#include "collectives/pipeline.hpp"

namespace clustersim {
namespace {

/// Parent of each position in an in-order balanced binary tree over [lo, hi); the root gets -1.
void build_tree(int lo, int hi, int parent, std::vector<int>& parents) {
  if (lo >= hi) return;
  const int mid = lo + (hi - lo) / 2;
  parents[mid] = parent;
  build_tree(lo, mid, mid, parents);
  build_tree(mid + 1, hi, mid, parents);
}

int depth(const std::vector<int>& parents, int i) {
  int d = 0;
  for (; parents[i] >= 0; i = parents[i]) ++d;
  return d;
}

class Tree final : public Algorithm {
 public:
  std::string name() const override { return "tree"; }
  std::string description() const override { return "NCCL double binary tree across nodes, chain inside nodes"; }
  std::vector<Op> ops() const override { return {Op::all_reduce}; }

  FlowGraph lower(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    if (req.ranks.size() < 2) return graph;
    const auto groups = ranks_by_node(router.cluster(), req.ranks);
    const int nodes = static_cast<int>(groups.size());
    std::vector<int> parents(nodes, -1);
    build_tree(0, nodes, -1, parents);
    int tree_depth = 0;
    for (int i = 0; i < nodes; ++i) tree_depth = std::max(tree_depth, depth(parents, i));
    const double per_channel = static_cast<double>(req.size_bytes) / req.channels;

    for (int c = 0; c < req.channels; ++c) {
      // The second tree mirrors the first, so most of one tree's leaves are the other's inner nodes.
      auto node_at = [&](int pos) { return c % 2 == 0 ? pos : nodes - 1 - pos; };
      std::vector<int> head(nodes);
      std::vector<Hop> up;
      std::size_t longest_chain = 0;
      for (int k = 0; k < nodes; ++k) {
        const auto& g = groups[k];
        const std::size_t start = static_cast<std::size_t>(c / 2) % g.size();
        head[k] = g[start];
        for (std::size_t i = 1; i < g.size(); ++i)  // chain: reduce flows toward the head
          up.push_back({g[(start + i) % g.size()], g[(start + i - 1) % g.size()]});
        longest_chain = std::max(longest_chain, g.size() - 1);
      }
      for (int pos = 0; pos < nodes; ++pos)
        if (parents[pos] >= 0) up.push_back({head[node_at(pos)], head[node_at(parents[pos])]});
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
                          2.0 * (static_cast<double>(longest_chain) * intra + tree_depth * inter));
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
