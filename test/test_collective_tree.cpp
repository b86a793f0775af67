// NCCL's double binary tree across nodes (src/graph/trees.cc): on a non-blocking switch its bus
// bandwidth is a closed form in the node count with no jump between neighbouring counts, because
// the second tree is mirrored for an even count and shifted by one for an odd one, so no node is
// an inner node of both trees.
#include <catch2/catch.hpp>

#include "collectives/collective.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr double kNicBandwidth = 50e9;  // B: 400 Gb/s per direction, the NIC and its switch port

// One GPU and one NIC per node, every NIC on one switch; PCIe faster than the NIC so the network
// port is each node's bottleneck.
const char* kOneGpuNodes = R"(
name: one-gpu-nodes
gpu: H100-SXM
link_types:
  ideal: {bandwidth_efficiency: 1.0}
node:
  gpus: 1
  scale_up: {topology: nvswitch, link_type: ideal, bandwidth_GBps: 400, latency_us: 0.1}
  nics: {count: 1, link_type: ideal, bandwidth_Gbps: 400, latency_us: 0.5, gpus: [0]}
  pcie: {link_type: ideal, bandwidth_GBps: 200, latency_us: 0.1}
fabric: {type: single_switch, nodes: 24, link_type: ideal, bandwidth_Gbps: 400, latency_us: 0.5}
)";

/// Bus bandwidth (nccl-tests' 2(n-1)/n) of a tree all-reduce of `size` over the first n GPUs.
double tree_busbw(int n, Bytes size, int channels) {
  static const Cluster cluster = test::cluster_from_yaml(kOneGpuNodes);
  static const Router router(cluster);
  static FabricEngine engine(cluster);
  CollectiveRequest req;
  req.op = Op::all_reduce;
  for (int g = 0; g < n; ++g) req.ranks.push_back(g);
  req.size_bytes = size;
  req.channels = channels;
  req.protocol = ideal_protocol();
  const Seconds t = makespan(engine.run(find_algorithm("tree")->lower(router, req)));
  return double(size) / t * 2.0 * (n - 1) / n;
}

}  // namespace

TEST_CASE("tree all-reduce bus bandwidth on a non-blocking switch is 4B(n-1)/(n L) for every node count") {
  // Each channel is one flow over all its tree edges, up and down. A node with k children and a
  // parent crosses its NIC k+1 times each way (the root k). In NCCL's trees an inner node has at
  // most two children and is a leaf (one crossing) in the other tree, so each NIC carries at most
  // L = 4 crossings of a pair of channels (L = 2 for 2 nodes, 3 for 3, whose trees are chains).
  // Max-min gives every channel B / (L C / 2) over C channels of S / C bytes: t = L S / (2B).
  const Bytes size = 4ULL << 30;  // latency (a few us) is below 1e-5 of the transfer
  double previous = 0;
  for (int n = 2; n <= 17; ++n) {
    const double max_crossings = n == 2 ? 2 : n == 3 ? 3 : 4;
    const double closed_form = 4 * kNicBandwidth * (n - 1) / (n * max_crossings);
    for (int channels : {2, 4}) {
      const double busbw = tree_busbw(n, size, channels);
      INFO(n << " nodes, " << channels << " channels: busbw " << busbw / 1e9 << " GB/s, closed form " << closed_form / 1e9);
      CHECK(busbw == Approx(closed_form).epsilon(1e-4));
    }
    // Smooth in n: from 4 nodes on, neighbouring counts differ by the (n-1)/n factor alone (< 7%).
    const double busbw = tree_busbw(n, size, 2);
    if (n > 4) CHECK(std::abs(busbw / previous - 1) < 0.07);
    previous = busbw;
  }
}
