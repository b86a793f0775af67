// NVLink SHARP (NVLS): the third-generation NVSwitch (HGX H100/H200, B200) reduces in the switch
// (multimem.ld_reduce: the switch fetches one address from every GPU bound to the multicast object,
// the issuer's own included, and returns the sum) and multicasts (multimem.st: one store lands on
// every bound GPU, the issuer's own included), NCCL >= 2.17.
//
// Lowering: one flow per (shard, channel) that lists the links the shard crosses, each once per
// crossing, so max-min loads every link exactly as the switch would:
//   all-reduce      shard j's owner pulls the sum of every GPU's copy (up from all n, down to j)
//                   and multicasts it (up from j, down to all n): (n+1)/n of S each way per GPU,
//                   where a ring carries 2(n-1)/n of it. That is nccl-tests issue 212's
//                   algbw = busbw' n/(n+1) (the maintainer's correction of its NVLS factor).
//   reduce-scatter  up from all n, down to j: S up, S/n down per GPU.
//   all-gather      up from j, down to all n: S/n up, S down per GPU.
// Reduce-scatter and all-gather thus move S over the busier direction, the ring (n-1)/n S (NCCL's
// tuner likewise scales their NVLS bandwidth by (n-1)/n, src/graph/tuning.cc); they gain the single
// step's latency, not bandwidth.
//
// The switch's reduction and multicast reach NCCL's nvlsEfficiency of the NVLink copy bandwidth the
// link types are calibrated on (0.85 Hopper, 0.74 Blackwell; tuner_nccl.hpp). Each shard flow has a
// companion over its NVLink links only, carrying (1/e - 1) of its bytes: where NVLink binds, the
// links stay busy for 1/e of the shard's time; where the network binds (NVLS-tree at scale) the
// companion takes NVLink's spare capacity and nothing slows.
//
// nvls_tree (NCCL's NVLS_TREE, all-reduce across nodes): inside each node as above, and between
// nodes shard j is all-reduced by the GPUs of local index j over their own NICs on NCCL's double
// binary tree (trees.hpp; even channels on one tree, odd on the other), reduce up and broadcast
// down pipelined together. One flow per (shard, channel) spans every node, cut into segments of at
// most kNodesPerSegment nodes (each segment with the channel's bytes, as kMaxHopsPerFlow does).
// Under Simple, NCCL's per-channel ceiling (nvls_tree_channel_cap_GBps) bounds the whole
// collective's bus bandwidth at NCCL's NVLS channel count (one per local GPU) times the ceiling;
// every shard flow is bounded at its part of that. On two H100 nodes the links alone would let
// NVLS-tree run as fast as inside one node (the inter-node legs hide behind NVLink); nccl-tests
// measures 10% less there, and NCCL's ceiling (461 GB/s) is within 2% of it.
//
// Latency is NCCL's cost model (src/graph/tuning.cc, NCCL 2.2x): NVLS and NVLS_TREE run the Simple
// protocol only; base latency 0, NVLink NVLS hop 25 us, network NVLS_TREE hop 20.9 us; NVLS costs
// one NVLink hop, NVLS_TREE one plus 2 log2(nodes) network hops. Plus the links' own latencies.
#include <algorithm>

#include "collectives/pipeline.hpp"
#include "collectives/trees.hpp"
#include "collectives/tuner_nccl.hpp"

namespace clustersim {
namespace {

constexpr Seconds kNvlsNvlinkLatency_s = 25e-6;    // hwLatencies[NVLINK][NVLS][Simple]
constexpr Seconds kNvlsTreeNetLatency_s = 20.9e-6; // hwLatencies[NET][NVLS_TREE][Simple]
constexpr std::size_t kNodesPerSegment = 64;

bool simple_or_ideal(const Protocol& p) { return p.name == "Simple" || p.name == "ideal"; }

/// One GPU of each first-level NVSwitch domain the group spans, the owner's first (two-level
/// scale-up, NVL576-style; on one level just the owner).
std::vector<int> domain_representatives(const Cluster& c, const std::vector<int>& gpus, int owner) {
  std::vector<int> reps{owner};
  for (int gpu : gpus)
    if (std::none_of(reps.begin(), reps.end(), [&](int r) { return c.scale_up_domain_of_gpu(r) == c.scale_up_domain_of_gpu(gpu); }))
      reps.push_back(gpu);
  return reps;
}

/// The node's scale-up links a shard crosses, in the order the data moves. On a two-level NVSwitch
/// each first-level switch reduces its domain's copies and sends one partial up, the second level
/// sends one sum down to the owner's domain, and a multicast fans out the same way, once a domain.
void add_in_node_links(const Cluster& c, Op op, const std::vector<int>& gpus, std::size_t j, std::vector<LinkDir>& links) {
  const bool reduce = op == Op::all_reduce || op == Op::reduce_scatter;
  const bool multicast = op == Op::all_reduce || op == Op::all_gather;
  const std::vector<int> reps = domain_representatives(c, gpus, gpus[j]);
  if (reduce) {
    for (int gpu : gpus) links.push_back(gpu_to_switch(c, gpu));
    for (std::size_t d = 1; d < reps.size(); ++d) links.push_back(forward(c.scale_up_uplink_of_gpu(reps[d])));
    if (reps.size() > 1) links.push_back(backward(c.scale_up_uplink_of_gpu(reps[0])));
    links.push_back(switch_to_gpu(c, gpus[j]));
  }
  if (multicast) {
    links.push_back(gpu_to_switch(c, gpus[j]));
    if (reps.size() > 1) links.push_back(forward(c.scale_up_uplink_of_gpu(reps[0])));
    for (std::size_t d = 1; d < reps.size(); ++d) links.push_back(backward(c.scale_up_uplink_of_gpu(reps[d])));
    for (int gpu : gpus) links.push_back(switch_to_gpu(c, gpu));
  }
}

/// The companion of a shard flow (see the top): its NVLink links, (1/e - 1) of its bytes, the same
/// start, latency and (scaled) rate bound, so the switch's efficiency costs NVLink time and nothing else.
Flow efficiency_companion(const Cluster& c, const Flow& shard_flow, const std::vector<LinkDir>& nvlink_links) {
  Flow f;
  f.src_gpu = shard_flow.src_gpu;
  f.dst_gpu = shard_flow.dst_gpu;
  f.links = nvlink_links;
  const double e = nvls_efficiency(gpu_generation(c.spec.gpu));
  f.size_bytes = static_cast<Bytes>(static_cast<double>(shard_flow.size_bytes) * (1 / e - 1));
  f.latency_s = shard_flow.latency_s;
  // A bounded shard moves at most its bound, and the switch's extra NVLink work keeps pace with it.
  f.max_rate_Bps = shard_flow.max_rate_Bps * (1 / e - 1);
  return f;
}

/// Adds a shard flow and, where the switch's efficiency is below 1, its companion.
void add_shard(const Cluster& c, FlowGraph& graph, Flow f, const std::vector<LinkDir>& nvlink_links) {
  Flow companion = efficiency_companion(c, f, nvlink_links);
  graph.add(std::move(f));
  if (companion.size_bytes > 0) graph.add(std::move(companion));
}

/// A GPU's way up to the switch and back down: the latency of one NVLS step on its links (through
/// the second level too where the group spans several first-level domains).
Seconds in_node_link_latency(const Cluster& c, const std::vector<int>& gpus, int gpu) {
  Seconds s = c.links[static_cast<std::size_t>(link_of(gpu_to_switch(c, gpu)))].latency_s * 2;
  if (domain_representatives(c, gpus, gpu).size() > 1) s += c.links[static_cast<std::size_t>(c.scale_up_uplink_of_gpu(gpu))].latency_s * 2;
  return s;
}

std::optional<std::string> no_nvls(const Cluster& cluster, const std::string& name) {
  if (cluster.spec.node.scale_up != ScaleUp::nvswitch || !cluster.spec.node.nvls)
    return name + " needs an NVLS-capable NVSwitch (node.scale_up.nvls: true in " + cluster.spec.file +
           "; third-generation NVSwitch: H100, H200, B200); " + cluster.spec.name + " declares none";
  return std::nullopt;
}

class Nvls final : public Algorithm {
 public:
  std::string name() const override { return "nvls"; }
  std::string description() const override {
    return "NVLink SHARP: reduce and multicast in the NVSwitch, inside one node (node.scale_up.nvls)";
  }
  std::vector<Op> ops() const override { return {Op::all_reduce, Op::reduce_scatter, Op::all_gather}; }
  bool runs_protocol(const Protocol& p) const override { return simple_or_ideal(p); }
  bool combines_in_switch(Op op) const override { return op != Op::all_reduce; }
  bool in_iteration_auto() const override { return false; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    if (auto why = no_nvls(cluster, name())) return why;
    const std::size_t nodes = ranks_by_node(cluster, req.ranks).size();
    if (nodes > 1)
      return "nvls runs inside one NVSwitch domain; these " + std::to_string(req.ranks.size()) + " ranks span " +
             std::to_string(nodes) + " nodes (nvls_tree crosses nodes)";
    return std::nullopt;
  }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    const Cluster& c = router.cluster();
    const std::size_t n = req.ranks.size();
    if (n < 2) return graph;
    const double shard = static_cast<double>(req.size_bytes) / static_cast<double>(n * static_cast<std::size_t>(req.channels));
    const Seconds protocol = req.protocol.name == "Simple" ? kNvlsNvlinkLatency_s : 0;
    for (int ch = 0; ch < req.channels; ++ch)
      for (std::size_t j = 0; j < n; ++j) {
        Flow f;
        f.src_gpu = req.ranks[j];
        f.dst_gpu = req.ranks[(j + 1) % n];
        add_in_node_links(c, req.op, req.ranks, j, f.links);
        f.size_bytes = wire_bytes(shard, req.protocol);
        f.latency_s = protocol + in_node_link_latency(c, req.ranks, req.ranks[j]);
        const std::vector<LinkDir> nvlink = f.links;
        add_shard(c, graph, std::move(f), nvlink);
      }
    return graph;
  }
};

class NvlsTree final : public Algorithm {
 public:
  std::string name() const override { return "nvls_tree"; }
  std::string description() const override {
    return "NVLS inside each node, NCCL's double binary tree across nodes per NIC rail";
  }
  std::vector<Op> ops() const override { return {Op::all_reduce}; }
  bool runs_protocol(const Protocol& p) const override { return simple_or_ideal(p); }
  bool in_iteration_auto() const override { return false; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    if (auto why = no_nvls(cluster, name())) return why;
    const auto groups = ranks_by_node(cluster, req.ranks);
    if (groups.size() < 2) return "nvls_tree crosses nodes; these ranks sit in one (use nvls)";
    for (const auto& g : groups)
      if (g.size() != groups.front().size() || g.size() < 2)
        return "nvls_tree needs the same number (2 or more) of ranks on every node";
    return std::nullopt;
  }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    const Cluster& c = router.cluster();
    const auto groups = ranks_by_node(c, req.ranks);
    const std::size_t nodes = groups.size(), per_node = groups.front().size();
    const std::vector<int> first = nccl_btree(static_cast<int>(nodes)), second = nccl_second_tree(first);
    const int depth = tree_depth(first);
    const double shard = static_cast<double>(req.size_bytes) / static_cast<double>(per_node * static_cast<std::size_t>(req.channels));
    const bool simple = req.protocol.name == "Simple";
    // busbw <= NCCL's channels x ceiling; all-reduce's algbw is busbw x n / 2(n-1), split over
    // per_node x channels shard flows that move alike.
    const double ranks = static_cast<double>(nodes * per_node);
    const double cap_busbw_Bps =
        static_cast<double>(per_node) * nvls_tree_channel_cap_GBps(gpu_generation(c.spec.gpu), static_cast<int>(nodes)) * 1e9;
    const double shard_cap_Bps = simple ? cap_busbw_Bps * ranks / (2 * (ranks - 1)) / static_cast<double>(per_node * static_cast<std::size_t>(req.channels)) : 0;
    for (int ch = 0; ch < req.channels; ++ch) {
      const std::vector<int>& parents = ch % 2 == 0 ? first : second;
      for (std::size_t j = 0; j < per_node; ++j) {
        std::vector<Flow> segments;
        std::vector<std::vector<LinkDir>> segment_nvlink;  // each segment's in-node links
        Seconds edge_latency = 0;
        for (std::size_t k = 0; k < nodes; ++k) {
          if (k % kNodesPerSegment == 0) {
            segments.emplace_back();
            segments.back().src_gpu = groups[k][j];
            segments.back().dst_gpu = groups[k][(j + 1) % per_node];
            segment_nvlink.emplace_back();
          }
          std::vector<LinkDir>& links = segments.back().links;
          const std::size_t in_node_from = links.size();
          add_in_node_links(c, Op::all_reduce, groups[k], j, links);
          segment_nvlink.back().insert(segment_nvlink.back().end(), links.begin() + static_cast<std::ptrdiff_t>(in_node_from),
                                       links.end());
          const int parent = parents[k];
          if (parent < 0) continue;
          // The edge to the parent, up (reduce) and down (broadcast), on rail j's NICs.
          const int child_gpu = groups[k][j], parent_gpu = groups[static_cast<std::size_t>(parent)][j];
          for (auto [from, to] : {std::pair{child_gpu, parent_gpu}, std::pair{parent_gpu, child_gpu}}) {
            const Route r = router.route(from, to, flow_hash(from, to, ch));
            links.insert(links.end(), r.links.begin(), r.links.end());
            edge_latency = std::max(edge_latency, r.latency_s);
          }
        }
        const Seconds latency = (simple ? kNvlsNvlinkLatency_s + 2.0 * depth * kNvlsTreeNetLatency_s : 0) +
                                2 * in_node_link_latency(c, groups[0], groups[0][j]) + 2.0 * depth * edge_latency;
        for (std::size_t k = 0; k < segments.size(); ++k) {
          segments[k].size_bytes = wire_bytes(shard, req.protocol);
          segments[k].latency_s = latency;
          segments[k].max_rate_Bps = shard_cap_Bps;
          add_shard(c, graph, std::move(segments[k]), segment_nvlink[k]);
        }
      }
    }
    return graph;
  }
};

}  // namespace

const Algorithm& nvls_algorithm() {
  static Nvls instance;
  return instance;
}

const Algorithm& nvls_tree_algorithm() {
  static NvlsTree instance;
  return instance;
}

}  // namespace clustersim
