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

/// support.hpp's small fat tree (two leaves of two one-GPU nodes, two spines) with `fabric_key`
/// added to its fabric, PCIe fast enough that the uplinks (net: 50 GB/s x 0.5) are the bottleneck.
Cluster small_fat_tree_with(const std::string& fabric_key) {
  std::string yaml = test::replaced_all(test::kSmallFatTreeYaml, "bandwidth_GBps: 30", "bandwidth_GBps: 300", "tree");
  yaml = test::replaced_all(yaml, "  type: fat_tree\n", "  type: fat_tree\n  " + fabric_key + "\n", "tree");
  return test::cluster_from_yaml(yaml);
}

/// The small fat tree under `routing`.
Cluster small_fat_tree(const std::string& routing) { return small_fat_tree_with("routing: " + routing); }

/// The small fat tree with `qps` queue pairs a connection (under ecmp).
Cluster small_fat_tree_qps(int qps) { return small_fat_tree_with("qps_per_connection: " + std::to_string(qps)); }

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
  // The same two routes, sprayed: each flow goes one way per uplink of its leaf (2), each
  // with half the bytes, so each uplink carries half of each flow: S / 25 GB/s for both, as if
  // they had been hashed apart.
  const Cluster c = small_fat_tree("spray");
  const Router router(c);
  const int ch = colliding_channel(router);
  REQUIRE(ch >= 0);
  const Route a = router.route(0, 2, flow_hash(0, 2, 0)), b = router.route(1, 3, flow_hash(1, 3, ch));
  const std::vector<Seconds> t = run_pair(c, a, b);
  REQUIRE(t.size() == 2);  // the ways are the engine's business; the caller sees its flows
  CHECK(t[0] == Approx(a.latency_s + 1.0 * kSize / kUplink_Bps).epsilon(1e-9));
  CHECK(t[1] == Approx(b.latency_s + 1.0 * kSize / kUplink_Bps).epsilon(1e-9));
}

TEST_CASE("a sprayed flow keeps its id and lists every uplink it spreads over, with one way's bytes") {
  const Cluster c = small_fat_tree("spray");
  const Router router(c);
  FlowGraph g;
  const FlowId first = g.add(test::flow_on(router.route(0, 2, 1), 0, 2, 1001));
  Flow same_leaf = test::flow_on(router.route(0, 1, 1), 0, 1, 500);  // one leaf: nothing to spray
  same_leaf.after = {first};
  g.add(same_leaf);
  const FlowGraph s = split_flows(router, g);
  REQUIRE(s.flows.size() == 2);
  const std::size_t hops = g.flows[0].links.size();
  REQUIRE(s.flows[0].links.size() == 2 * hops);
  CHECK(s.flows[0].size_bytes == 501);                          // 1001 bytes over 2 ways, rounded up
  CHECK(s.flows[0].links[2] != s.flows[0].links[hops + 2]);     // the two uplinks of leaf 0
  CHECK(s.flows[0].links[0] == s.flows[0].links[hops]);         // both ways leave through the one PCIe link
  CHECK(s.flows[1].links == same_leaf.links);
  CHECK(s.flows[1].after == std::vector<FlowId>{0});
}

TEST_CASE("queue pairs: one flow lists each hashed pair's path, with one pair's share of the bytes, alone still NIC-bound") {
  const Cluster c = small_fat_tree_qps(8);
  const Router router(c);
  FlowGraph g;
  const Route r = router.route(0, 2, flow_hash(0, 2, 0));
  g.add(test::flow_on(r, 0, 2, kSize + 3));
  // One leaf, one path: split all the same, so that each connection is as many shares of its NIC
  // as any other (a NIC arbitrates between queue pairs).
  g.add(test::flow_on(router.route(0, 1, 1), 0, 1, 800));
  const FlowGraph s = split_flows(router, g);
  REQUIRE(s.flows.size() == 2);
  CHECK(s.flows[0].size_bytes == kSize / 8 + 1);
  REQUIRE(s.flows[0].links.size() == 8 * r.links.size());
  std::set<LinkDir> uplinks;
  for (std::size_t q = 0; q < 8; ++q) {
    CHECK(s.flows[0].links[q * r.links.size() + 1] == r.links[1]);  // every pair leaves by the one NIC port
    uplinks.insert(s.flows[0].links[q * r.links.size() + 2]);
  }
  CHECK(uplinks.size() == 2);  // 8 hashes over the leaf's 2 uplinks: both taken (deterministic)
  CHECK(s.flows[1].size_bytes == 100);
  REQUIRE(s.flows[1].links.size() == 8 * g.flows[1].links.size());
  CHECK(std::equal(g.flows[1].links.begin(), g.flows[1].links.end(), s.flows[1].links.end() - static_cast<std::ptrdiff_t>(g.flows[1].links.size())));
  // Alone, the pairs share the NIC, which bounds them as it bounds the whole flow: S / 25 GB/s.
  FabricEngine engine(c);
  FlowGraph one;
  one.add(test::flow_on(r, 0, 2, kSize));
  CHECK(engine.run(one)[0] == Approx(r.latency_s + 1.0 * kSize / kUplink_Bps).epsilon(1e-9));
}

TEST_CASE("queue pairs move in lockstep: a connection runs at its slowest pair's pace, and its other pairs do not race ahead") {
  // Two pairs a connection; every rate in units of the uplinks' and NICs' 25 GB/s, time in
  // S / 25 GB/s. A = 0 -> 2 (S bytes) puts one pair on each uplink of leaf 0; B = 1 -> 3 (S/4,
  // some channel) hashes both of its pairs onto one of them, u. Each connection's pairs share one
  // rate: u carries x + 2x = 1, so every pair runs at 1/3 until B has moved its S/8 a pair, at
  // 3/8. Then A's pairs share its NIC, 1/2 each, for the 3/8 S they have left: A ends at
  // 3/8 + 3/4 = 9/8. Pairs run apart, A's free pair would take the NIC's 2/3 and A would end at 1.
  const Cluster c = small_fat_tree_qps(2);
  const Router router(c);
  auto ways = [&](const Route& r) {  // every way's links, way after way
    std::vector<LinkDir> all;
    REQUIRE(spread_links(router, r.links, all) == 2);
    return all;
  };
  const std::size_t hops = router.route(0, 2, 0).links.size();
  Route a, b;
  bool found = false;
  for (int cha = 0; cha < 64 && !found; ++cha) {
    a = router.route(0, 2, flow_hash(0, 2, cha));
    const std::vector<LinkDir> sa = ways(a);
    if (sa[2] == sa[hops + 2]) continue;
    for (int chb = 0; chb < 64 && !found; ++chb) {
      b = router.route(1, 3, flow_hash(1, 3, chb));
      const std::vector<LinkDir> sb = ways(b);
      found = sb[2] == sb[hops + 2];  // A crosses both uplinks, so B's one is one of A's
    }
  }
  REQUIRE(found);
  REQUIRE(a.latency_s == Approx(b.latency_s).epsilon(1e-12));  // both start moving bytes together
  FabricEngine engine(c);
  FlowGraph g;
  g.add(test::flow_on(a, 0, 2, kSize));
  g.add(test::flow_on(b, 1, 3, kSize / 4));
  const std::vector<Seconds> t = engine.run(g);
  CHECK(t[1] == Approx(b.latency_s + 0.375 * kSize / kUplink_Bps).epsilon(1e-9));
  CHECK(t[0] == Approx(a.latency_s + 1.125 * kSize / kUplink_Bps).epsilon(1e-9));
  // Counting link bytes, the engine lowers a copy of the graph (split_flows) instead of spreading
  // routes inside the fluid solver: the same times, to the bit.
  FabricEngine counting(c);
  counting.record_link_bytes(true);
  CHECK(counting.run(g) == t);
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
