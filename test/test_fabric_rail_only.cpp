// Rail-only fabrics (Wang et al., "How to Build Low-cost Networks for Large Language Models", 2023):
// switch counts against the rail-optimized SuperPOD, hop counts, bisection, and the NIC a transfer
// between rails borrows on its way.
#include <catch2/catch.hpp>

#include <string>

#include "simulator/engine.hpp"
#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

const std::string kRailOnly16k = "scenarios/clusters/rail-only-h100-16k.yaml";
constexpr double kNdr_Bps = 400e9 / 8;  // one 400 Gb/s port, per direction

/// The 16K file's node (DGX H100) on a fabric given here.
Cluster node_on(const std::string& fabric_yaml) {
  const std::string text = test::shipped_with(kRailOnly16k, "", "");
  return test::cluster_from_yaml(text.substr(0, text.find("fabric:")) + fabric_yaml);
}

std::string fabric(const std::string& type, int nodes, const std::string& tiers) {
  return "fabric:\n  type: " + type + "\n  nodes: " + std::to_string(nodes) +
         (type == "rail_optimized" ? "\n  nodes_per_unit: 32" : "") +
         "\n  link_type: ndr\n  bandwidth_Gbps: 400\n  latency_us: 0.3\n  tiers: " + tiers + "\n";
}

/// The name of the vertex a link direction enters.
const std::string& entered(const Cluster& c, LinkDir d) {
  const Link& l = c.links[link_of(d)];
  return c.graph[d == forward(link_of(d)) ? l.b : l.a].name;
}


}  // namespace

TEST_CASE("rail-only keeps 16K GPUs on 2 tiers: 8 rails of 64 leaves and 32 spines, 768 switches") {
  // Each rail is a 2-tier tree over 2048 ports: 2048 / 32 down = 64 leaves, 64 x 32 uplinks / 64
  // ports = 32 spines. NVIDIA's 16K SuperPOD needs 512 leaves, 512 spines and 256 cores (1280, on
  // 3 tiers; test_topology checks it): the spine joining rails is what rail-only saves.
  const TopologyReport r = count_topology(test::shipped_cluster(kRailOnly16k));
  CHECK(r.gpus == 16384);
  CHECK(r.switches(1) == 8 * 64);
  CHECK(r.switches(2) == 8 * 32);
  CHECK(r.switches(3) == 0);
  CHECK(r.switch_count() == 768);
  CHECK(r.links_per_type.at("ndr") == 16384 + 8 * 64 * 32);  // NIC ports + leaf uplinks
}

TEST_CASE("no rail-only switch links two rails") {
  const Cluster& c = test::shipped_cluster(kRailOnly16k);
  int switch_links = 0;
  for (const Link& l : c.links)
    if (c.graph[l.a].kind == VertexKind::fabric_switch && c.graph[l.b].kind == VertexKind::fabric_switch) {
      ++switch_links;
      const std::string& a = c.graph[l.a].name;
      CHECK(a.substr(0, a.find('.')) == c.graph[l.b].name.substr(0, c.graph[l.b].name.find('.')));
    }
  CHECK(switch_links == 8 * 64 * 32);
}

TEST_CASE("rail-only routes: a rail's own switches, and NVLink to the destination's rail first") {
  const Cluster& c = test::shipped_cluster(kRailOnly16k);
  const Router router(c);
  auto route = [&](int src, int dst) { return router.route(src, dst, flow_hash(src, dst, 0)); };
  // Same rail, nodes 0 and 1 on one rail leaf (32 nodes a leaf): PCIe, NIC, leaf, NIC, PCIe.
  CHECK(test::switches_on(c, route(0, 8)) == std::vector<std::string>{"rail0.leaf0"});
  CHECK(route(0, 8).links.size() == 4);
  // Same rail, nodes 0 and 40 on leaves 0 and 1: leaf, spine, leaf.
  const std::vector<std::string> up_down = test::switches_on(c, route(0, 40 * 8));
  REQUIRE(up_down.size() == 3);
  CHECK(up_down.front() == "rail0.leaf0");
  CHECK(up_down.back() == "rail0.leaf1");
  // GPU 0 to GPU 1 of node 1 (rail 1): over the NVSwitch to GPU 1 of node 0, then rail 1.
  const Route cross = route(0, 9);
  REQUIRE(cross.links.size() == 6);
  CHECK(cross.links[0] == forward(c.gpu_switch_link[0]));
  CHECK(cross.links[1] == backward(c.gpu_switch_link[1]));
  CHECK(cross.links[2] == forward(c.nic_pcie_link[1]));
  CHECK(test::switches_on(c, cross) == std::vector<std::string>{"rail1.leaf0"});
  CHECK(entered(c, cross.links.back()) == "n1.gpu1");
}

TEST_CASE("rail-only bisection is a non-blocking fabric's, and a 3:1 rail leaf cuts it to a third") {
  // 8 nodes on one 64-port switch per rail: (8/2) x 8 NICs x 50 GB/s, as any 1:1 fabric.
  CHECK(bisection_bandwidth_Bps(node_on(fabric("rail_only", 8, "[{radix: 64}]"))) == Approx(4 * 8 * kNdr_Bps));
  // 96 nodes, rail leaves 48 down / 16 up: the first 48 nodes are exactly leaf 0 of every rail, so
  // the cut is its 16 uplinks per rail: 16 x 8 x 50 GB/s, a third of the 48 x 8 x 50 GB/s at 1:1.
  const Cluster over = node_on(fabric("rail_only", 96, "[{radix: 64, oversubscription: 3}, {radix: 64}]"));
  REQUIRE(count_topology(over).switches(1) == 8 * 2);
  CHECK(bisection_bandwidth_Bps(over) == Approx(16 * 8 * kNdr_Bps));
}

TEST_CASE("a transfer between rails borrows the destination rail's NIC, which rail-optimized does not") {
  // Node 0's GPU 0 sends to GPU 1 of node 1 while its GPU 1 sends to GPU 1 of node 2. Rail-only
  // relays the first through GPU 1 of node 0, so both leave by NIC 1: it carries 2S at its
  // calibrated 0.94 x 50 GB/s, and stays the bottleneck until the last byte (PCIe 64 GB/s shared by
  // two is 32 each; NVLink 370). Rail-optimized sends the first by NIC 0 over a spine: S each.
  const Bytes size = 2'000'000'000;
  const double nic_Bps = 0.94 * kNdr_Bps;
  auto makespan_on = [&](const Cluster& c) {
    const Router router(c);
    FabricEngine engine(c);
    FlowGraph g;
    for (auto [src, dst] : {std::pair{0, 9}, {1, 17}}) {
      g.add(test::flow_on(router.route(src, dst, flow_hash(src, dst, 0)), src, dst, size));
    }
    return makespan(engine.run(g));
  };
  CHECK(makespan_on(node_on(fabric("rail_only", 3, "[{radix: 64}]"))) == Approx(2.0 * size / nic_Bps).epsilon(1e-4));
  CHECK(makespan_on(node_on(fabric("rail_optimized", 3, "[{radix: 64}, {radix: 64}]"))) ==
        Approx(1.0 * size / nic_Bps).epsilon(1e-4));
}
