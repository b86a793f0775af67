// Behaviours of the built topologies: switch counts against NVIDIA's published tables, bisection
// bandwidth against closed forms, ECMP routes, the DOT/GraphML writers and `clustersim topology`.
#include <catch2/catch.hpp>

#include <cstdio>
#include <set>
#include <string>

#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"
#include "topologies/topology_picture.hpp"

using namespace clustersim;
using clustersim::test::cluster_from_yaml;
using clustersim::test::shipped_with;

namespace {

const std::string kSuperPod = "scenarios/clusters/dgx-h100-superpod.yaml";
const std::string kSuperPod16k = "scenarios/clusters/dgx-h100-superpod-16k.yaml";
constexpr double kNdr_Bps = 400e9 / 8;  // one 400 Gb/s port, per direction

Cluster superpod_with_nodes(int nodes) {
  return cluster_from_yaml(shipped_with(kSuperPod, "nodes: 127", "nodes: " + std::to_string(nodes)));
}

/// The SuperPOD's node, link types and PCIe, on a fabric given here.
Cluster superpod_node_on(const std::string& fabric_yaml, const std::string& pcie_GBps = "64") {
  const std::string text = shipped_with(kSuperPod, "bandwidth_GBps: 64", "bandwidth_GBps: " + pcie_GBps);
  return cluster_from_yaml(text.substr(0, text.find("fabric:")) + fabric_yaml);
}

/// The vertices a route visits from `start`, checking that each link leaves where the last one ended.
std::vector<int> walk(const Cluster& c, const Route& r, int start) {
  std::vector<int> path{start};
  for (LinkDir d : r.links) {
    const Link& l = c.links[link_of(d)];
    const bool fwd = d == forward(link_of(d));
    REQUIRE((fwd ? l.a : l.b) == path.back());
    path.push_back(fwd ? l.b : l.a);
  }
  return path;
}

int switches_on(const Cluster& c, const std::vector<int>& path) {
  int n = 0;
  for (int v : path) n += c.graph[v].kind == VertexKind::fabric_switch;
  return n;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("SuperPOD switch counts follow NVIDIA's 1-4 SU reference table") {
  // /work/shared/reference/hardware.md, "Reference fabrics": DGX H100 SuperPOD table.
  struct Row { int nodes, gpus, leaves, spines; };
  for (Row row : {Row{31, 248, 8, 4}, Row{63, 504, 16, 8}, Row{95, 760, 24, 16}, Row{127, 1016, 32, 16}}) {
    const TopologyReport r = count_topology(superpod_with_nodes(row.nodes));
    CAPTURE(row.nodes);
    CHECK(r.nodes == row.nodes);
    CHECK(r.gpus == row.gpus);
    CHECK(r.switches(1) == row.leaves);
    CHECK(r.switches(2) == row.spines);
    CHECK(r.switches(3) == 0);
  }
}

TEST_CASE("SuperPOD link counts: one NVLink, PCIe and NIC link per GPU plus 32 uplinks per leaf") {
  // 8 GPUs, 8 NICs per node; a 64-port leaf at 1:1 has 32 uplinks (hardware.md).
  const TopologyReport r = count_topology(superpod_with_nodes(127));
  CHECK(r.nvswitches == 127);
  CHECK(r.nics == 1016);
  CHECK(r.links_per_type.at("nvlink4") == 1016);
  CHECK(r.links_per_type.at("pcie5") == 1016);
  CHECK(r.links_per_type.at("ndr") == 1016 + 32 * 32);
  CHECK(r.links == 1016 + 1016 + 1016 + 32 * 32);
}

TEST_CASE("SuperPOD with a core tier matches NVIDIA's 16 and 64 SU counts") {
  // hardware.md: 16 SUs use 128 leaf, 128 spine, 64 core; 64 SUs (16,384 GPUs) use 512/512/256.
  const TopologyReport su16 = count_topology(
      cluster_from_yaml(shipped_with(kSuperPod16k, "nodes: 2048", "nodes: 512")));
  CHECK(su16.gpus == 4096);
  CHECK(su16.switches(1) == 128);
  CHECK(su16.switches(2) == 128);
  CHECK(su16.switches(3) == 64);
  const TopologyReport su64 = count_topology(load_cluster(test::source_path(kSuperPod16k)));
  CHECK(su64.gpus == 16384);
  CHECK(su64.switches(1) == 512);
  CHECK(su64.switches(2) == 512);
  CHECK(su64.switches(3) == 256);
}

TEST_CASE("A non-blocking fabric's bisection is half the nodes times their NICs' line rate") {
  // Closed form for 1:1 fabrics: (n/2) x NICs per node x NIC line rate per direction.
  // SuperPOD, 4 full SUs of 32 nodes: 64 x 8 x 50 GB/s = 25.6 TB/s.
  CHECK(bisection_bandwidth_Bps(superpod_with_nodes(128)) == Approx(64 * 8 * kNdr_Bps));
  // 127 nodes split 63 | 64: the smaller half bounds it.
  const TopologyReport r = report_topology(superpod_with_nodes(127));
  CHECK(r.bisection_half_nodes == 63);
  CHECK(r.bisection_Bps == Approx(63 * 8 * kNdr_Bps));
  CHECK(r.bisection_per_gpu_Bps == Approx(kNdr_Bps));
  // DGX A100 fat-tree, 3 tiers at 1:1 with HDR 200 Gb/s: 192 x 8 x 25 GB/s.
  CHECK(bisection_bandwidth_Bps(load_cluster(test::source_path("scenarios/clusters/dgx-a100-fat-tree.yaml"))) ==
        Approx(192 * 8 * 200e9 / 8));
}

TEST_CASE("The RoCE Clos's 3:1 spines halve its node-order bisection") {
  // roce-3tier-clos.yaml: 512 nodes x 8 NICs = 4096 ports; leaves 32 down / 32 up -> 128 leaves,
  // NICs fill them in order. Spines 48 down / 16 up, so a pod is 48 leaves: pods of 48, 48, 32
  // leaves, 32 spines each (one link per leaf), each spine 16 links to its plane's single core.
  // Halves: nodes [0, 256) = leaves [0, 64) = all of pod 0 and leaves 48..63 of pod 1.
  // Min cut: pod 0's core uplinks (32 spines x 16 = 512 links) plus the uplinks of pod 1's 16
  // source leaves (16 x 32 = 512 links) = 1024 links. A flow meets it: pod 0 sends 512 links'
  // worth through the cores into pod 2, pod 1's source leaves 512 through their spines to pod 1's
  // sink leaves. So 1024 x 50 GB/s = 51.2 TB/s, half the 2048 x 50 GB/s a 1:1 fabric would give.
  const Cluster c = load_cluster(test::source_path("scenarios/clusters/roce-3tier-clos.yaml"));
  const TopologyReport r = count_topology(c);
  REQUIRE(r.switches(1) == 128);
  REQUIRE(r.switches(2) == 3 * 32);
  REQUIRE(r.switches(3) == 32);
  CHECK(bisection_bandwidth_Bps(c) == Approx(1024 * kNdr_Bps));
}

TEST_CASE("A single switch's bisection is the smaller half's NIC or PCIe line rate") {
  const std::string fabric =
      "fabric: {type: single_switch, nodes: 5, link_type: ndr, bandwidth_Gbps: 400, latency_us: 0.3}\n";
  // 5 nodes split 2 | 3; the switch itself is not a bottleneck: 2 x 8 x 50 GB/s.
  CHECK(bisection_bandwidth_Bps(superpod_node_on(fabric)) == Approx(2 * 8 * kNdr_Bps));
  // With PCIe at 32 GB/s below the NIC's 50, each GPU's PCIe link is the cut: 2 x 8 x 32 GB/s.
  CHECK(bisection_bandwidth_Bps(superpod_node_on(fabric, "32")) == Approx(2 * 8 * 32e9));
  // One node has no network cut.
  const std::string one = "fabric: {type: single_switch, nodes: 1, link_type: ndr, bandwidth_Gbps: 400, latency_us: 0.3}\n";
  CHECK(report_topology(superpod_node_on(one)).bisection_Bps == 0);
}

TEST_CASE("Cross-node routes run GPU, PCIe, NIC, switches, NIC, PCIe, GPU") {
  const Cluster c = superpod_with_nodes(127);
  const Router router(c);
  for (auto [src, dst] : {std::pair{0, 8}, {0, 9}, {3, 1000}, {1015, 17}}) {
    const Route r = router.route(src, dst, flow_hash(src, dst, 0));
    const std::vector<int> path = walk(c, r, c.gpu_vertex[src]);
    CAPTURE(src, dst);
    CHECK(path.back() == c.gpu_vertex[dst]);
    CHECK(r.links.front() == forward(c.nic_pcie_link[c.nic_of_gpu(src)]));
    CHECK(r.links.back() == backward(c.nic_pcie_link[c.nic_of_gpu(dst)]));
    CHECK(c.graph[path[1]].kind == VertexKind::nic);
    CHECK(c.graph[path[path.size() - 2]].kind == VertexKind::nic);
  }
}

TEST_CASE("SuperPOD route lengths: same rail 1 switch, cross rail 3, cross SU over the core 5") {
  // A route climbs to the lowest tier joining both leaves and back down: 2 x tier - 1 switches.
  const Cluster c = superpod_with_nodes(127);
  const Router router(c);
  auto switches = [&](const Cluster& cl, const Router& rt, int src, int dst) {
    return switches_on(cl, walk(cl, rt.route(src, dst, flow_hash(src, dst, 0)), cl.gpu_vertex[src]));
  };
  CHECK(switches(c, router, 0, 8) == 1);    // GPU 0 of nodes 0 and 1: rail 0 of SU 0, one leaf
  CHECK(switches(c, router, 0, 9) == 3);    // rails 0 and 1: leaf, spine, leaf
  CHECK(switches(c, router, 0, 256) == 3);  // rail 0 of SUs 0 and 1: leaf, spine, leaf
  CHECK(router.route(0, 1, 0).links.size() == 2);  // same node: GPU -> NVSwitch -> GPU
  // 16 SUs with a core tier: rail 0 of SUs 0 and 1 meet at the core.
  const Cluster core = cluster_from_yaml(shipped_with(kSuperPod16k, "nodes: 2048", "nodes: 512"));
  const Router core_router(core);
  CHECK(switches(core, core_router, 0, 8) == 1);
  CHECK(switches(core, core_router, 0, 9) == 3);
  CHECK(switches(core, core_router, 0, 256) == 5);
}

TEST_CASE("ECMP routes are deterministic per hash and spread hashes over the spines") {
  const Cluster c = superpod_with_nodes(127);
  const Router router(c);
  std::set<int> spines;
  std::set<LinkId> uplinks;
  for (int channel = 0; channel < 64; ++channel) {
    const std::uint64_t hash = flow_hash(0, 9, channel);
    const Route r = router.route(0, 9, hash);
    CHECK(r.links == router.route(0, 9, hash).links);
    const std::vector<int> path = walk(c, r, c.gpu_vertex[0]);
    REQUIRE(path.size() == 7);  // gpu nic leaf spine leaf nic gpu
    spines.insert(path[3]);
    uplinks.insert(link_of(r.links[2]));
  }
  // Leaf 0 of SU 0 has 32 uplinks, 2 to each of 16 spines. 64 uniform draws from 16 miss about
  // 16 x (15/16)^64 = 0.3 spines, so at least 12 is a loose floor that still catches "always one".
  CHECK(spines.size() >= 12);
  CHECK(uplinks.size() >= 16);
}

TEST_CASE("DOT and GraphML of every vertex hold one box per graph vertex and one edge per link") {
  const Cluster c = superpod_node_on(
      "fabric: {type: single_switch, nodes: 2, link_type: ndr, bandwidth_Gbps: 400, latency_us: 0.3}\n");
  // 2 nodes x (8 GPUs + NVSwitch + 8 NICs) + 1 switch; 2 x 24 links.
  REQUIRE(boost::num_vertices(c.graph) == 35);
  REQUIRE(c.links.size() == 48);
  // No two links join the same two vertices here, so none collapse: an edge per link.
  const std::string dot = cluster_dot(c, PictureLevel::full);
  CHECK(dot.find("\ngraph G {") != std::string::npos);
  CHECK(count(dot, " -- ") == 48);
  CHECK(count(dot, "shape=box, style=filled, fillcolor=\"#a1d99b\"") == 16);  // a GPU's box
  CHECK(count(dot, "label=\"pcie5 ") == 16);
  const std::string graphml = cluster_graphml(c);
  CHECK(count(graphml, "<node ") == 35);
  CHECK(count(graphml, "<edge ") == 48);
  CHECK(count(graphml, "attr.name=\"bandwidth_Bps\"") == 1);
  CHECK(count(graphml, "</graphml>") == 1);
}

TEST_CASE("clustersim topology prints the SuperPOD's counts and writes its files") {
  const std::string dot = test::temp_file("", ".dot"), json = test::temp_file("", ".json");
  const test::CliResult r =
      test::run_cli("topology " + test::source_path(kSuperPod) + " --dot " + dot + " --json " + json);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stdout_text.find("GPUs                         1016") != std::string::npos);
  CHECK(r.stdout_text.find("tier 1 (leaf)                32") != std::string::npos);
  CHECK(r.stdout_text.find("tier 2 (spine)               16") != std::string::npos);
  CHECK(r.stdout_text.find("25200.0") != std::string::npos);  // 63 nodes x 8 x 50 GB/s
  // The link count checked above, each leaf's two links to each spine drawn as one edge.
  CHECK(count(test::read_file(dot), " -- ") == 4072 - 32 * 16);
  CHECK(test::read_file(json).find("\"gpus\": 1016") != std::string::npos);
  std::remove(dot.c_str());
  std::remove(json.c_str());
  CHECK(test::run_cli("topology " + test::source_path(kSuperPod) + " --json /nonexistent/dir/x.json").exit_code == 2);
  CHECK(test::run_cli("topology /nonexistent.yaml").exit_code == 2);
}
