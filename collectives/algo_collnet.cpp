// CollNet: NCCL's all-reduce through InfiniBand SHARP (Scalable Hierarchical Aggregation and
// Reduction Protocol: Quantum switches and later reduce in the network), with the SHARP plugin.
// Each node's share of the buffer goes up its NIC once and the reduced result comes down once,
// where a ring sends 2(n-1)/n of the buffer each way over every NIC; the switches of the
// aggregation tree each take in one stream per child and send one up.
//
// Lowering: the aggregation tree of a rail is the union of the routes between that rail's GPUs on
// every node and on the first node (one hash for the whole tree, so every leaf picks the same
// uplink and the routes meet in one tree, as SHARP's aggregation manager builds one). A flow that
// lists every link of the tree once, in both directions, loads each with the shard's bytes once
// each way: exactly what in-network reduction puts on it. Inside the node:
//   collnet_direct  (NCCL's CollNet Direct, NVSwitch nodes with a NIC per GPU) shard j is first
//                   reduced onto GPU j (every other GPU sends its part of shard j over NVLink), goes
//                   up GPU j's NIC, and its result is sent from GPU j to every other GPU.
//   collnet_chain   (NCCL's CollNet Chain) channel c's share goes up a chain of the node's GPUs to
//                   its head, GPU c mod per-node, up the head's NIC, and back down the chain.
// A link a flow crosses k times is listed k times (max-min then loads it k times over). A flow over
// many nodes is cut into segments of at most kMaxHopsPerFlow links, as the ring's and nvls_tree's.
//
// Latency is NCCL 2.30.7's cost model (src/graph/tuning.cc): base 0; CollNet Direct adds
// 2 x (min(1, ppn - 1) x 3.7 us + (ppn - 1) x 0.4 us) + 31 us, CollNet Chain
// 2 x (ppn - 1) x 2.8 us + 30 us (NVLink and network hop latencies of the Simple protocol, its only
// one); plus the links' own latencies. NCCL uses CollNet only with NCCL_COLLNET_ENABLE=1 and the
// SHARP plugin, so its tuner here never picks it; `collective --algo collnet_direct` (or auto) does.
#include <algorithm>
#include <set>

#include "collectives/pipeline.hpp"

namespace clustersim {
namespace {

constexpr Seconds kDirectNvlink_s = 3.7e-6, kDirectNet_s = 31e-6, kDirectArity_s = 0.4e-6;
constexpr Seconds kChainNvlink_s = 2.8e-6, kChainNet_s = 30e-6;

bool simple_or_ideal(const Protocol& p) { return p.name == "Simple" || p.name == "ideal"; }

/// Rail `j`'s aggregation tree over the nodes: every link direction once, in route order, and the
/// longest route's latency.
std::vector<LinkDir> aggregation_tree(const Router& router, const std::vector<std::vector<int>>& nodes, std::size_t j,
                                      int channel, Seconds& route_latency_s) {
  std::vector<LinkDir> links;
  std::set<LinkDir> seen;
  const int root = nodes.front()[j];
  const std::uint64_t hash = flow_hash(root, root, channel);
  for (std::size_t k = 1; k < nodes.size(); ++k)
    for (auto [from, to] : {std::pair{nodes[k][j], root}, std::pair{root, nodes[k][j]}}) {
      const Route r = router.route(from, to, hash);
      route_latency_s = std::max(route_latency_s, r.latency_s);
      for (LinkDir d : r.links)
        if (seen.insert(d).second) links.push_back(d);
    }
  return links;
}

/// Cuts `links` into flows of at most kMaxHopsPerFlow links each, all with the same bytes and latency.
void add_segments(FlowGraph& graph, const std::vector<LinkDir>& links, int src_gpu, int dst_gpu, Bytes bytes, Seconds latency_s) {
  for (std::size_t at = 0; at < links.size(); at += kMaxHopsPerFlow) {
    Flow f;
    f.src_gpu = src_gpu;
    f.dst_gpu = dst_gpu;
    f.links.assign(links.begin() + static_cast<long>(at),
                   links.begin() + static_cast<long>(std::min(links.size(), at + kMaxHopsPerFlow)));
    f.size_bytes = bytes;
    f.latency_s = latency_s;
    graph.add(std::move(f));
  }
}

Seconds scale_up_latency(const Cluster& c, int gpu) {
  return c.links[static_cast<std::size_t>(link_of(gpu_to_switch(c, gpu)))].latency_s * 2;
}

class CollNet : public Algorithm {
 public:
  std::vector<Op> ops() const override { return {Op::all_reduce}; }
  bool runs_protocol(const Protocol& p) const override { return simple_or_ideal(p); }
  bool in_iteration_auto() const override { return false; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    if (!cluster.spec.fabric.sharp)
      return name() + " needs switches that reduce in the network (fabric.sharp: true in " + cluster.spec.file +
             "; InfiniBand SHARP, Quantum and later); " + cluster.spec.name + " declares none";
    if (cluster.spec.node.scale_up != ScaleUp::nvswitch)
      return name() + " runs on NVSwitch nodes (NCCL disables CollNet Direct elsewhere); " + cluster.spec.name + "'s are " +
             "a full mesh";
    if (cluster.scale_up_domains() > 1)
      return name() + " is not modelled on a two-level NVSwitch (node.scale_up.second_level): its steps inside a node "
                      "assume one switch";
    const auto groups = ranks_by_node(cluster, req.ranks);
    if (groups.size() < 2) return name() + " reduces across nodes; these ranks sit in one";
    for (const auto& g : groups)
      if (g.size() != groups.front().size())
        return name() + " needs the same number of ranks on every node";
    return std::nullopt;
  }

 protected:
  /// The in-node links of one flow, node by node, and the network's tree after them.
  virtual void add_in_node(const Cluster& c, const std::vector<int>& node, std::size_t j, std::vector<LinkDir>& links) const = 0;
  /// Which GPU of each node carries flow (j, channel) to the network.
  virtual std::size_t head(std::size_t j, int channel, std::size_t per_node) const = 0;
  virtual Seconds nccl_latency_s(std::size_t per_node) const = 0;
  /// Flows per channel: one per shard (direct) or one (chain).
  virtual std::size_t flows_per_channel(std::size_t per_node) const = 0;

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    const Cluster& c = router.cluster();
    const auto nodes = ranks_by_node(c, req.ranks);
    const std::size_t per_node = nodes.front().size(), flows = flows_per_channel(per_node);
    const double bytes = static_cast<double>(req.size_bytes) / static_cast<double>(flows * static_cast<std::size_t>(req.channels));
    for (int ch = 0; ch < req.channels; ++ch)
      for (std::size_t j = 0; j < flows; ++j) {
        const std::size_t h = head(j, ch, per_node);
        Seconds route_latency_s = 0;
        std::vector<LinkDir> links;
        for (const std::vector<int>& node : nodes) add_in_node(c, node, h, links);
        const std::vector<LinkDir> tree = aggregation_tree(router, nodes, h, ch, route_latency_s);
        links.insert(links.end(), tree.begin(), tree.end());
        const Seconds latency = (req.protocol.name == "Simple" ? nccl_latency_s(per_node) : 0) +
                                2 * scale_up_latency(c, nodes[0][h]) + 2 * route_latency_s;
        add_segments(graph, links, nodes[0][h], nodes[1][h], wire_bytes(bytes, req.protocol), latency);
      }
    return graph;
  }
};

class CollNetDirect final : public CollNet {
 public:
  std::string name() const override { return "collnet_direct"; }
  std::string description() const override {
    return "InfiniBand SHARP all-reduce (fabric.sharp): each node's shards reduced onto their GPUs over NVLink, "
           "up each GPU's NIC, reduced in the switches";
  }

 protected:
  std::size_t head(std::size_t j, int, std::size_t) const override { return j; }
  std::size_t flows_per_channel(std::size_t per_node) const override { return per_node; }
  Seconds nccl_latency_s(std::size_t per_node) const override {
    const double others = static_cast<double>(per_node - 1);
    return 2 * (std::min(1.0, others) * kDirectNvlink_s + others * kDirectArity_s) + kDirectNet_s;
  }
  void add_in_node(const Cluster& c, const std::vector<int>& node, std::size_t j, std::vector<LinkDir>& links) const override {
    // Reduce: every other GPU sends its part of shard j to GPU j; broadcast: GPU j sends the result back.
    for (std::size_t i = 0; i < node.size(); ++i)
      if (i != j) {
        links.push_back(gpu_to_switch(c, node[i]));
        links.push_back(switch_to_gpu(c, node[j]));
        links.push_back(gpu_to_switch(c, node[j]));
        links.push_back(switch_to_gpu(c, node[i]));
      }
  }
};

class CollNetChain final : public CollNet {
 public:
  std::string name() const override { return "collnet_chain"; }
  std::string description() const override {
    return "InfiniBand SHARP all-reduce (fabric.sharp): each channel up a chain of the node's GPUs to one head NIC, "
           "reduced in the switches, back down the chain";
  }

 protected:
  std::size_t head(std::size_t, int channel, std::size_t per_node) const override {
    return static_cast<std::size_t>(channel) % per_node;
  }
  std::size_t flows_per_channel(std::size_t) const override { return 1; }
  Seconds nccl_latency_s(std::size_t per_node) const override {
    return 2 * static_cast<double>(per_node - 1) * kChainNvlink_s + kChainNet_s;
  }
  void add_in_node(const Cluster& c, const std::vector<int>& node, std::size_t h, std::vector<LinkDir>& links) const override {
    // The chain ends at the head: h+1, h+2, ..., h-1, h (up), then the reverse (down).
    const std::size_t n = node.size();
    for (std::size_t step = 1; step < n; ++step) {
      const int from = node[(h + step) % n], to = node[(h + step + 1) % n];
      for (auto [a, b] : {std::pair{from, to}, std::pair{to, from}}) {
        links.push_back(gpu_to_switch(c, a));
        links.push_back(switch_to_gpu(c, b));
      }
    }
  }
};

}  // namespace

const Algorithm& collnet_direct_algorithm() {
  static CollNetDirect instance;
  return instance;
}

const Algorithm& collnet_chain_algorithm() {
  static CollNetChain instance;
  return instance;
}

}  // namespace clustersim
