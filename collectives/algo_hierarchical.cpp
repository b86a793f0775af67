// Hierarchical (2D) all-reduce, as Horovod's and Megatron's hierarchical all-reduce run it: a
// reduce-scatter inside each node (NVLink), an all-reduce of each GPU's 1/G shard across nodes
// among the GPUs of the same local index (one rail each, G all-reduces side by side), then an
// all-gather inside each node. Each phase is NCCL's ring (algo_ring.cpp) and waits for the whole
// phase before it. The network carries 2(N-1)/N of S/G per GPU, as a flat ring's network hops do,
// but in 2(N-1) steps of network latency instead of 2(NG-1) steps of mixed latency.
#include "collectives/pipeline.hpp"

namespace clustersim {

const Algorithm& ring_algorithm();

namespace {

class Hierarchical final : public Algorithm {
 public:
  std::string name() const override { return "hierarchical"; }
  std::string description() const override {
    return "2D all-reduce: ring reduce-scatter in nodes, ring all-reduce per rail across nodes, ring all-gather in nodes";
  }
  std::vector<Op> ops() const override { return {Op::all_reduce}; }
  bool in_iteration_auto() const override { return false; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    const auto groups = ranks_by_node(cluster, req.ranks);
    if (groups.size() < 2) return "hierarchical crosses nodes; these ranks sit in one (use ring)";
    for (const auto& g : groups)
      if (g.size() != groups.front().size()) return "hierarchical needs the same number of ranks on every node";
    return std::nullopt;
  }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    const auto groups = ranks_by_node(router.cluster(), req.ranks);
    const std::size_t per_node = groups.front().size();
    const Algorithm& ring = ring_algorithm();
    auto phase = [&](Op op, const std::vector<int>& ranks, Bytes size, FlowId after) {
      CollectiveRequest sub = req;
      sub.op = op;
      sub.ranks = ranks;
      sub.size_bytes = size;
      append_phase(graph, ring.lower(router, sub), after);
    };
    const int anchor = req.ranks.front();
    FlowId barrier = -1;
    if (per_node > 1) {
      for (const auto& g : groups) phase(Op::reduce_scatter, g, req.size_bytes, -1);
      barrier = add_barrier(graph, anchor, 0);
    }
    // Each GPU's shard, all-reduced across nodes with the GPUs on its rail.
    const FlowId across = static_cast<FlowId>(graph.flows.size());
    for (std::size_t j = 0; j < per_node; ++j) {
      std::vector<int> rail;
      for (const auto& g : groups) rail.push_back(g[j]);
      phase(Op::all_reduce, rail, req.size_bytes / static_cast<Bytes>(per_node), barrier);
    }
    if (per_node > 1) {
      barrier = add_barrier(graph, anchor, across);
      for (const auto& g : groups) phase(Op::all_gather, g, req.size_bytes, barrier);
    }
    return graph;
  }
};

}  // namespace

const Algorithm& hierarchical_algorithm() {
  static Hierarchical instance;
  return instance;
}

}  // namespace clustersim
