// Bytes sent equal bytes received (collectives/conservation.hpp) for every registered algorithm and
// every op it runs, over group sizes from 2 to 64 on rails, a fat tree, full-mesh nodes and nodes
// whose eight GPUs share one NIC; plus the total the GPUs receive, which each lowering's hops give
// in closed form, and the check itself catching a route with a hole.
#include <catch2/catch.hpp>

#include <algorithm>

#include <boost/graph/adjacency_list.hpp>

#include "collectives/algo_deepep.hpp"
#include "collectives/collective.hpp"
#include "collectives/conservation.hpp"
#include "collectives/pipeline.hpp"
#include "topologies/invariant.hpp"
#include "support.hpp"

using namespace clustersim;
using Catch::Matchers::Contains;

namespace {

// Four nodes of eight GPUs behind one NIC each: the NIC's PCIe link is shared by the whole node.
const char* kSharedNic = R"(
name: shared-nic
gpu: H100-SXM
link_types:
  ideal: {bandwidth_efficiency: 1.0}
node:
  gpus: 8
  scale_up: {topology: nvswitch, link_type: ideal, bandwidth_GBps: 100, latency_us: 1}
  nics: {count: 1, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1, gpus: [3]}
  pcie: {link_type: ideal, bandwidth_GBps: 64, latency_us: 0.5}
fabric: {type: single_switch, nodes: 4, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1}
)";

Bytes gpus_receive(const Cluster& cluster, const FlowGraph& graph) {
  const VertexBytes v = vertex_bytes(cluster, graph);
  Bytes total = 0;
  for (std::size_t i = 0; i < v.in.size(); ++i)
    if (cluster.graph[i].kind == VertexKind::gpu) total += v.in[i];
  return total;
}

/// PXN first crosses NVLink to the GPU on the destination's rail, which receives the transfer too:
/// between nodes, whenever the two GPUs' local indices (rails, one NIC a GPU) differ.
bool relayed(const Cluster& c, const std::string& algo, int src, int dst) {
  return algo == "pxn" && c.node_of_gpu(src) != c.node_of_gpu(dst) && c.local_of_gpu(src) != c.local_of_gpu(dst);
}

/// What the GPUs together receive, from the algorithm's hops: every hop of every channel lands
/// its bytes once on the GPU it ends at (an all-to-all: every pair once), a PXN relay twice.
Bytes closed_form_receive(const Cluster& cluster, const std::string& algo, Op op, Bytes size, int n, int channels,
                          const Protocol& p) {
  const double per_channel = static_cast<double>(size) / channels;
  const auto c = static_cast<Bytes>(channels), hops_ring = static_cast<Bytes>(n);
  if (algo == "deepep") {
    // Once to each other node (the peer on the sender's rail receives it), then from every GPU over
    // NVLink to each other GPU of its node, for the tokens of its node's sources (nodes of them):
    // DeepEP's own kernel, no NCCL protocol, whatever the request's.
    // Its NVLink sends carry 1 / share of their bytes on the wire where its SMs (two a channel)
    // cannot drive NVLink at line rate.
    const int per = std::min(cluster.gpus_per_node(), n), nodes = n / per;
    const DeepEpRouting r;
    const Protocol none = ideal_protocol();
    DeepEpKernel kernel;
    kernel.sms = 2 * channels;
    const double factor = 1 / deepep_nvlink_share(cluster, 0, kernel);
    const Bytes nvlink = wire_bytes(double(nodes) * size * deepep_rank_hit(n, per, r), none);
    return static_cast<Bytes>(n) * (nodes - 1) * wire_bytes(double(size) * deepep_node_hit(n, per, r), none) +
           static_cast<Bytes>(n) * (per - 1) * static_cast<Bytes>(static_cast<double>(nvlink) * factor);
  }
  const auto ranks = static_cast<Bytes>(n);
  if (algo == "tree") return c * 2 * static_cast<Bytes>(n - 1) * wire_bytes(per_channel, p);
  // NVLS: a flow per (shard, channel) lands on the GPUs it comes down to: all n and the shard's owner
  // once more (all-reduce: the owner's pull of the sum, then the multicast to all), the owner
  // (reduce-scatter), all n (all-gather). Its companion (the switch's efficiency, NCCL's 0.85 on
  // these H100s) lands on the same GPUs with (1/0.85 - 1) of its bytes.
  const auto with_companion = [](Bytes w) { return w + static_cast<Bytes>(static_cast<double>(w) * (1 / 0.85 - 1)); };
  if (algo == "nvls") {
    const Bytes downs = op == Op::all_reduce ? ranks + 1 : op == Op::reduce_scatter ? 1 : ranks;
    return c * ranks * downs * with_companion(wire_bytes(static_cast<double>(size) / (n * channels), p));
  }
  const int per_node = std::min(n, cluster.gpus_per_node()), nodes = n / per_node;
  // NVLS-tree: every node's GPUs as NVLS lands them (per_node + 1, with its companion), and each tree
  // edge's two ends once each.
  if (algo == "nvls_tree") {
    const Bytes w = wire_bytes(static_cast<double>(size) / (per_node * channels), p);
    const auto g = static_cast<Bytes>(per_node), m = static_cast<Bytes>(nodes);
    return c * g * (m * (g + 1) * with_companion(w) + 2 * (m - 1) * w);
  }
  // Steps: every rank receives one message a step.
  auto steps = [&](const std::vector<double>& bytes) {
    Bytes total = 0;
    for (double b : bytes) total += c * ranks * wire_bytes(b / channels, p);
    return total;
  };
  int levels = 0;
  while ((1 << levels) < n) ++levels;
  const double s = static_cast<double>(size);
  if (algo == "recursive_doubling" || algo == "halving_doubling" || algo == "pat") {
    std::vector<double> bytes;
    for (int k = 0; k < levels; ++k) {
      if (algo == "recursive_doubling") bytes.push_back(op == Op::all_reduce ? s : s * (1 << k) / n);
      if (algo == "halving_doubling") bytes.push_back(s / (2 << k));
      if (algo == "pat") bytes.push_back(std::min(1 << k, n - (1 << k)) * (s / n));
    }
    if (algo == "halving_doubling" && op == Op::all_reduce) bytes.insert(bytes.end(), bytes.begin(), bytes.end());
    return steps(bytes);
  }
  // Hierarchical: ring reduce-scatter and all-gather in each node, ring all-reduce of S/G per rail.
  if (algo == "hierarchical") {
    const auto g = static_cast<Bytes>(per_node), m = static_cast<Bytes>(nodes);
    const double rail_per_channel = static_cast<double>(size / g) / channels;
    const Bytes in_nodes = per_node > 1 ? 2 * m * c * g * wire_bytes(per_channel * (per_node - 1.0) / per_node, p) : 0;
    return in_nodes + g * c * m * wire_bytes(rail_per_channel * 2.0 * (nodes - 1) / nodes, p);
  }
  if (op == Op::all_reduce) return c * hops_ring * wire_bytes(per_channel * 2.0 * (n - 1) / n, p);
  if (op == Op::all_gather || op == Op::reduce_scatter) return c * hops_ring * wire_bytes(per_channel * (n - 1.0) / n, p);
  if (op == Op::broadcast) return c * static_cast<Bytes>(n - 1) * wire_bytes(per_channel, p);
  Bytes total = 0;
  if (op == Op::send_recv)  // rank i sends to i + 1 on every channel
    for (int i = 0; i < n; ++i) total += c * (relayed(cluster, algo, i, (i + 1) % n) ? 2 : 1) * wire_bytes(per_channel, p);
  if (op == Op::all_to_all)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j) total += (relayed(cluster, algo, i, j) ? 2 : 1) * wire_bytes(static_cast<double>(size) / n, p);
  return total;
}

void check_every_algorithm(const Cluster& cluster, const std::vector<int>& group_sizes) {
  const Router router(cluster);
  int lowered = 0;
  for (const Algorithm* a : all_algorithms())
    for (Op op : a->ops())
      for (int n : group_sizes)
        for (int channels : {1, 3}) {
          CollectiveRequest req;
          req.op = op;
          for (int g = 0; g < n; ++g) req.ranks.push_back(g);
          req.size_bytes = 96ULL * 1024 * 1024 + 8;  // not a multiple of channels or ranks: rounding shows
          req.channels = channels;
          req.protocol = *find_protocol("LL128");
          req.root = n / 2;
          if (a->not_applicable(cluster, req)) continue;
          INFO(a->name() << " " << to_string(op) << " on " << n << " GPUs of " << cluster.spec.name << ", "
                         << channels << " channels");
          FlowGraph graph;
          REQUIRE_NOTHROW(graph = a->lower(router, req));  // lower() checks conservation itself
          CHECK_NOTHROW(check_bytes_conserved(cluster, graph, "test", op != Op::broadcast, a->combines_in_switch(op)));
          CHECK(gpus_receive(cluster, graph) ==
                closed_form_receive(cluster, a->name(), op, req.size_bytes, n, channels, req.protocol));
          ++lowered;
        }
  CHECK(lowered >= 8 * static_cast<int>(group_sizes.size()));
}

}  // namespace

TEST_CASE("every algorithm's lowering sends the bytes it receives on rails") {
  check_every_algorithm(test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"), {2, 8, 16, 24, 64});
}

TEST_CASE("every algorithm's lowering sends the bytes it receives on a fat tree") {
  check_every_algorithm(test::shipped_cluster("scenarios/clusters/dgx-a100-fat-tree.yaml"), {2, 8, 16, 24, 64});
}

TEST_CASE("every algorithm's lowering sends the bytes it receives on full-mesh nodes") {
  check_every_algorithm(test::shipped_cluster("scenarios/clusters/mi300x-cluster.yaml"), {2, 3, 8, 16, 24});
}

TEST_CASE("every algorithm's lowering sends the bytes it receives where a node's GPUs share one NIC") {
  check_every_algorithm(test::cluster_from_yaml(kSharedNic), {2, 8, 12, 32});
}

TEST_CASE("a route with a hole breaks bytes sent equal bytes received at the switch it skips") {
  const Cluster& cluster = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const Router router(cluster);
  FlowGraph graph;
  Flow f;
  f.src_gpu = 0;
  f.dst_gpu = 320;  // node 40, in another scalable unit: PCIe, NIC port, leaf, spine, leaf, ...
  f.links = router.route(0, 320, flow_hash(0, 320, 0)).links;
  f.size_bytes = 1000;
  graph.add(f);
  CHECK_NOTHROW(check_bytes_conserved(cluster, graph, "one transfer"));
  REQUIRE(f.links.size() == 6);
  graph.flows[0].links.erase(graph.flows[0].links.begin() + 2);  // leaf -> spine gone
  try {
    check_bytes_conserved(cluster, graph, "one transfer");
    FAIL("a hole in the route passed");
  } catch (const InvariantViolation& e) {
    // The leaf keeps what it received, or the spine sends what it never got: whichever comes first.
    CHECK_THAT(e.what(), Contains("invariant `bytes sent equal bytes received` broken: one transfer: switch su"));
    const std::string what = e.what();
    CHECK((what.find(": 1000 B in, 0 B out") != std::string::npos || what.find(": 0 B in, 1000 B out") != std::string::npos));
  }
}

TEST_CASE("a transfer from one node to another is conserved but leaves the two nodes unbalanced") {
  const Cluster& cluster = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const Router router(cluster);
  FlowGraph graph;
  Flow f;
  f.src_gpu = 0;
  f.dst_gpu = 8;
  f.links = router.route(0, 8, flow_hash(0, 8, 0)).links;
  f.size_bytes = 4096;
  graph.add(f);
  CHECK_NOTHROW(check_bytes_conserved(cluster, graph, "a send"));  // a broadcast may do this
  try {
    check_bytes_conserved(cluster, graph, "a send", true);
    FAIL("an unbalanced node passed");
  } catch (const InvariantViolation& e) {
    CHECK_THAT(e.what(), Contains("a send: the GPUs of node 0: 0 B in, 4096 B out"));
  }
}
