// Routing policies per fabric (fabric.routing, fabric.qps_per_connection): hashed ECMP, queue pairs
// hashed one by one, adaptive (least routed flows at the
// flow's start) and packet spraying (a flow spread evenly over every equal-cost path). On the plain
// fat tree, two flows that ECMP hashes onto one uplink run at half rate; the other two do not.
#include <catch2/catch.hpp>

#include <cstdio>
#include <set>
#include <string>

#include "collectives/spray.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

/// support.hpp's small fat tree (two leaves of two one-GPU nodes, two spines) under `routing`,
/// PCIe fast enough that the uplinks (net: 50 GB/s x 0.5) are the bottleneck.
Cluster small_fat_tree(const std::string& routing) {
  std::string yaml = test::replaced_all(test::kSmallFatTreeYaml, "bandwidth_GBps: 30", "bandwidth_GBps: 300", "tree");
  yaml = test::replaced_all(yaml, "  type: fat_tree\n", "  type: fat_tree\n  routing: " + routing + "\n", "tree");
  return test::cluster_from_yaml(yaml);
}

constexpr Bytes kSize = 1'000'000'000;
constexpr BytesPerSecond kUplink_Bps = 25e9;

/// The channel whose hash sends flow 1 -> 3 over the uplink flow 0 -> 2 (channel 0) takes.
int colliding_channel(const Router& router) {
  const LinkDir up = router.route(0, 2, flow_hash(0, 2, 0)).links[2];  // PCIe, NIC port, uplink
  for (int ch = 0; ch < 64; ++ch)
    if (router.route(1, 3, flow_hash(1, 3, ch)).links[2] == up) return ch;
  return -1;
}

/// Both flows' finish times when they start together.
std::vector<Seconds> run_pair(const Cluster& c, const Route& a, const Route& b) {
  FabricEngine engine(c);
  FlowGraph g;
  g.add(test::flow_on(a, 0, 2, kSize));
  g.add(test::flow_on(b, 1, 3, kSize));
  return engine.run(g);
}

}  // namespace

TEST_CASE("hashed ECMP: two flows on one uplink take twice as long") {
  const Cluster c = small_fat_tree("ecmp");
  const Router router(c);
  const int ch = colliding_channel(router);
  REQUIRE(ch >= 0);
  const Route a = router.route(0, 2, flow_hash(0, 2, 0)), b = router.route(1, 3, flow_hash(1, 3, ch));
  CHECK(run_pair(c, a, b)[0] == Approx(a.latency_s + 2.0 * kSize / kUplink_Bps).epsilon(1e-9));
}

TEST_CASE("spraying removes the hashed-collision halving on the plain fat tree") {
  // The same two routes, sprayed: each flow becomes one sub-flow per uplink of its leaf (2), each
  // with half the bytes, so each uplink carries half of each flow: S / 25 GB/s for both, as if
  // they had been hashed apart.
  const Cluster c = small_fat_tree("spray");
  const Router router(c);
  const int ch = colliding_channel(router);
  REQUIRE(ch >= 0);
  const Route a = router.route(0, 2, flow_hash(0, 2, 0)), b = router.route(1, 3, flow_hash(1, 3, ch));
  const std::vector<Seconds> t = run_pair(c, a, b);
  REQUIRE(t.size() == 2);  // the sub-flows are the engine's business; the caller sees its flows
  CHECK(t[0] == Approx(a.latency_s + 1.0 * kSize / kUplink_Bps).epsilon(1e-9));
  CHECK(t[1] == Approx(b.latency_s + 1.0 * kSize / kUplink_Bps).epsilon(1e-9));
}

TEST_CASE("a sprayed flow is one sub-flow per uplink with its bytes shared out, behind a join in its place") {
  const Cluster c = small_fat_tree("spray");
  const Router router(c);
  FlowGraph g;
  const FlowId first = g.add(test::flow_on(router.route(0, 2, 1), 0, 2, 1001));
  Flow same_leaf = test::flow_on(router.route(0, 1, 1), 0, 1, 500);  // one leaf: nothing to spray
  same_leaf.after = {first};
  g.add(same_leaf);
  const FlowGraph s = split_flows(router, g);
  REQUIRE(s.flows.size() == 4);
  CHECK(s.flows[0].links.empty());
  CHECK(s.flows[0].size_bytes == 0);
  CHECK(s.flows[0].after == std::vector<FlowId>{2, 3});
  CHECK(s.flows[1].links == same_leaf.links);
  CHECK(s.flows[1].after == std::vector<FlowId>{0});
  CHECK(s.flows[2].size_bytes + s.flows[3].size_bytes == 1001);
  CHECK(s.flows[2].links.size() == g.flows[0].links.size());
  CHECK(s.flows[2].links[2] != s.flows[3].links[2]);  // the two uplinks of leaf 0
}

TEST_CASE("queue pairs: a connection's bytes split over that many hashed sub-flows behind a join, alone still NIC-bound") {
  std::string yaml = test::replaced_all(test::kSmallFatTreeYaml, "bandwidth_GBps: 30", "bandwidth_GBps: 300", "tree");
  yaml = test::replaced_all(yaml, "  type: fat_tree\n", "  type: fat_tree\n  qps_per_connection: 8\n", "tree");
  const Cluster c = test::cluster_from_yaml(yaml);
  const Router router(c);
  FlowGraph g;
  const Route r = router.route(0, 2, flow_hash(0, 2, 0));
  g.add(test::flow_on(r, 0, 2, kSize + 3));
  // One leaf, one path: split all the same, so that each connection is as many shares of its NIC
  // as any other (a NIC arbitrates between queue pairs), each sub-flow on the flow's own links.
  g.add(test::flow_on(router.route(0, 1, 1), 0, 1, 800));
  const FlowGraph s = split_flows(router, g);
  REQUIRE(s.flows.size() == 2 + 8 + 8);
  CHECK(s.flows[0].links.empty());
  CHECK(s.flows[0].after == std::vector<FlowId>{2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(s.flows[1].links.empty());
  CHECK(s.flows[1].after.size() == 8);
  for (std::size_t q = 10; q < s.flows.size(); ++q) {
    CHECK(s.flows[q].links == g.flows[1].links);
    CHECK(s.flows[q].size_bytes == 100);
  }
  Bytes total = 0;
  std::set<LinkDir> uplinks;
  for (std::size_t q = 2; q < 10; ++q) {
    total += s.flows[q].size_bytes;
    CHECK(s.flows[q].size_bytes >= kSize / 8);
    REQUIRE(s.flows[q].links.size() == r.links.size());
    uplinks.insert(s.flows[q].links[2]);
  }
  CHECK(total == kSize + 3);
  CHECK(uplinks.size() == 2);  // 8 hashes over the leaf's 2 uplinks: both taken (deterministic)
  // Alone, the sub-flows share the NIC, which bounds them as it bounds the whole flow: S / 25 GB/s.
  FabricEngine engine(c);
  FlowGraph one;
  one.add(test::flow_on(r, 0, 2, kSize));
  CHECK(engine.run(one)[0] == Approx(r.latency_s + 1.0 * kSize / kUplink_Bps).epsilon(1e-9));
}

TEST_CASE("adaptive routing sends the second flow up the uplink the first left free") {
  const Cluster c = small_fat_tree("adaptive");
  for (int ch = 0; ch < 8; ++ch) {
    const Router router(c);  // fresh counts: every flow is the first and second again
    const Route a = router.route(0, 2, flow_hash(0, 2, 0)), b = router.route(1, 3, flow_hash(1, 3, ch));
    CAPTURE(ch);
    CHECK(a.links[2] != b.links[2]);
    CHECK(run_pair(c, a, b)[1] == Approx(b.latency_s + 1.0 * kSize / kUplink_Bps).epsilon(1e-9));
  }
}

namespace {
/// `collective`'s "Avg bus bandwidth" line, in GB/s, for a 1 GiB ring all-reduce on 64 GPUs.
double ring_busbw_GBps(const std::string& cluster_file) {
  const test::CliResult r = test::run_cli("collective --cluster " + cluster_file + " --gpus 64 -b 1G -e 1G --algo ring");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const std::string key = "Avg bus bandwidth    : ";
  const auto at = r.stdout_text.find(key);
  REQUIRE(at != std::string::npos);
  return std::stod(r.stdout_text.substr(at + key.size()));
}
}  // namespace

TEST_CASE("a 64-GPU ring on the A100 fat tree: hashing halves it, spraying and adaptive routing do not") {
  // Without rails ring hops change leaves, and ECMP puts two hops of a channel on one uplink. The
  // same nodes with rails (dgx-a100-superpod.yaml) never share an uplink: the reference.
  const std::string tree = test::source_path("scenarios/clusters/dgx-a100-fat-tree.yaml");
  const double rails = ring_busbw_GBps(test::source_path("scenarios/clusters/dgx-a100-superpod.yaml"));
  CHECK(ring_busbw_GBps(tree) < 0.6 * rails);
  for (const char* routing : {"spray", "adaptive"}) {
    const std::string file = test::temp_file(
        test::shipped_with("scenarios/clusters/dgx-a100-fat-tree.yaml", "  type: fat_tree\n",
                           std::string("  type: fat_tree\n  routing: ") + routing + "\n"));
    CAPTURE(routing);
    CHECK(ring_busbw_GBps(file) == Approx(rails).epsilon(0.01));
    std::remove(file.c_str());
  }
  // Queue pairs hashed one by one (Meta's Enhanced-ECMP): one is hashed ECMP exactly, two collide
  // less, and from four on every channel's hops spread so that the ring runs as on rails.
  auto with_qps = [&](int qps) {
    const std::string file = test::temp_file(test::shipped_with("scenarios/clusters/dgx-a100-fat-tree.yaml", "  type: fat_tree\n",
                                                                "  type: fat_tree\n  qps_per_connection: " + std::to_string(qps) + "\n"));
    const double busbw = ring_busbw_GBps(file);
    std::remove(file.c_str());
    return busbw;
  };
  const double hashed = ring_busbw_GBps(tree);
  CHECK(with_qps(1) == hashed);
  const double two = with_qps(2);
  CHECK(two > hashed);
  CHECK(two < 0.9 * rails);
  CHECK(with_qps(16) == Approx(rails).epsilon(0.01));
}
