// The fabric engine's three promises (issue: engine): a lone flow takes exactly its path latency
// plus size over the bottleneck; k flows on one link get 1/k of it each; flows that ECMP hashes
// onto one uplink slow each other down, while flows on disjoint paths do not.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "simulator/engine.hpp"
#include "support.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

// Four one-GPU nodes, two on each leaf of a two-tier fat tree (support.hpp).
const char* kSmallFatTree = clustersim::test::kSmallFatTreeYaml;

Flow flow_along(const Route& r, int src, int dst, Bytes size) {
  Flow f;
  f.src_gpu = src;
  f.dst_gpu = dst;
  f.links = r.links;
  f.size_bytes = size;
  f.latency_s = r.latency_s;
  return f;
}

/// The switch-to-switch links of a route.
std::vector<LinkId> fabric_links(const Cluster& c, const Route& r) {
  std::vector<LinkId> out;
  for (LinkDir d : r.links) {
    const Link& l = c.links[link_of(d)];
    if (c.graph[l.a].kind == VertexKind::fabric_switch && c.graph[l.b].kind == VertexKind::fabric_switch)
      out.push_back(link_of(d));
  }
  return out;
}

}  // namespace

TEST_CASE("a lone flow takes the sum of its latencies plus size over the bottleneck bandwidth") {
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  const Route r = router.route(0, 2, flow_hash(0, 2, 0));
  // GPU-PCIe-NIC-leaf-spine-leaf-NIC-PCIe-GPU: 2 PCIe (0.4 us), 2 NIC ports (0.7 us), 2 switch links (0.3 us).
  REQUIRE(r.links.size() == 6);
  const Seconds latency = 2 * 0.4e-6 + 2 * 0.7e-6 + 2 * 0.3e-6;
  CHECK(r.latency_s == Approx(latency).epsilon(1e-12));
  // Bottleneck: PCIe at 30 GB/s beats the network's 50 GB/s x 0.5 efficiency = 25 GB/s.
  const BytesPerSecond bottleneck = 25e9;
  const Bytes size = 1'000'000'000;
  FabricEngine engine(c);
  FlowGraph g;
  g.add(flow_along(r, 0, 2, size));
  const Seconds t = makespan(engine.run(g));
  const Seconds expected = latency + static_cast<double>(size) / bottleneck;
  CHECK(std::abs(t - expected) / expected < 1e-9);
}

TEST_CASE("k flows sharing one link each get 1/k of it") {
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  FabricEngine engine(c);
  const Bytes size = 500'000'000;
  for (int k : {1, 2, 3, 5}) {
    // k copies of the same GPU0 -> GPU1 route: same leaf, so every link is shared by all k.
    FlowGraph g;
    const Route r = router.route(0, 1, flow_hash(0, 1, 0));
    for (int i = 0; i < k; ++i) g.add(flow_along(r, 0, 1, size));
    const std::vector<Seconds> finish = engine.run(g);
    const Seconds expected = r.latency_s + static_cast<double>(k) * size / 25e9;
    for (Seconds t : finish) CHECK(std::abs(t - expected) / expected < 1e-9);
  }
}

TEST_CASE("a flow with k copies ends when k separate flows would, beside another, on either solver") {
  // Three copies of GPU0 -> GPU1 and one GPU0 -> GPU2 flow share GPU0's links: a flow that stands
  // for the three gets their three shares, so both graphs give the same finish times (SimGrid
  // runs the copies expanded).
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  for (Solver solver : {Solver::fluid, Solver::simgrid_full}) {
    FabricEngine engine(c, solver);
    const Route r = router.route(0, 1, flow_hash(0, 1, 0)), other = router.route(0, 2, flow_hash(0, 2, 0));
    FlowGraph separate, copied;
    for (int i = 0; i < 3; ++i) separate.add(flow_along(r, 0, 1, 300'000'000));
    separate.add(flow_along(other, 0, 2, 600'000'000));
    Flow three = flow_along(r, 0, 1, 300'000'000);
    three.copies = 3;
    copied.add(three);
    copied.add(flow_along(other, 0, 2, 600'000'000));
    const std::vector<Seconds> a = engine.run(separate), b = engine.run(copied);
    CHECK(test::relative_error(b[0], a[0]) < 1e-9);
    CHECK(test::relative_error(b[1], a[3]) < 1e-9);
  }
}

TEST_CASE("a link listed twice in one route carries the flow twice") {
  // Pipelined collectives rely on this: a ring channel's flow lists every hop's links.
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  FabricEngine engine(c);
  Route r = router.route(0, 1, 7);
  Route twice = r;
  twice.links.insert(twice.links.end(), r.links.begin(), r.links.end());
  FlowGraph g;
  g.add(flow_along(twice, 0, 1, 250'000'000));
  const Seconds t = makespan(engine.run(g));
  const Seconds expected = twice.latency_s + 2.0 * 250'000'000 / 25e9;
  CHECK(std::abs(t - expected) / expected < 1e-9);
}

TEST_CASE("flows hashed onto one uplink slow each other down but flows on disjoint uplinks do not") {
  // Make the PCIe links fast so the shared uplink is the bottleneck.
  std::string yaml = kSmallFatTree;
  yaml.replace(yaml.find("bandwidth_GBps: 30"), 18, "bandwidth_GBps: 300");
  const Cluster c = test::cluster_from_yaml(yaml);
  const Router router(c);
  // Flows 0->2 and 1->3 both climb from leaf 0 to a spine and come down to leaf 1. Find channels
  // whose hashes pick the same spine (shared uplink and downlink) and ones that pick the other.
  const Route a = router.route(0, 2, flow_hash(0, 2, 0));
  REQUIRE(fabric_links(c, a).size() == 2);
  int same = -1, other = -1;
  for (int ch = 0; ch < 64 && (same < 0 || other < 0); ++ch) {
    const std::vector<LinkId> b = fabric_links(c, router.route(1, 3, flow_hash(1, 3, ch)));
    const std::vector<LinkId> mine = fabric_links(c, a);
    if (b == mine) same = ch;
    if (b[0] != mine[0] && b[1] != mine[1]) other = ch;
  }
  REQUIRE(same >= 0);
  REQUIRE(other >= 0);
  // Routing is deterministic: the same hash gives the same links.
  CHECK(router.route(1, 3, flow_hash(1, 3, same)).links == router.route(1, 3, flow_hash(1, 3, same)).links);

  FabricEngine engine(c);
  const Bytes size = 1'000'000'000;
  const BytesPerSecond uplink = 25e9;  // 50 GB/s x 0.5
  auto run_pair = [&](int ch) {
    FlowGraph g;
    g.add(flow_along(a, 0, 2, size));
    g.add(flow_along(router.route(1, 3, flow_hash(1, 3, ch)), 1, 3, size));
    return engine.run(g);
  };
  const auto collided = run_pair(same);
  CHECK(collided[0] == Approx(a.latency_s + 2.0 * size / uplink).epsilon(1e-9));
  const auto apart = run_pair(other);
  CHECK(apart[0] == Approx(a.latency_s + 1.0 * size / uplink).epsilon(1e-9));
}

TEST_CASE("a flow starts only after the flows it depends on finish") {
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  FabricEngine engine(c);
  const Route r = router.route(0, 1, 1);
  FlowGraph g;
  const FlowId first = g.add(flow_along(r, 0, 1, 100'000'000));
  Flow second = flow_along(r, 0, 1, 100'000'000);
  second.after = {first};
  g.add(second);
  const auto finish = engine.run(g);
  const Seconds one = r.latency_s + 100'000'000 / 25e9;
  CHECK(finish[0] == Approx(one).epsilon(1e-9));
  CHECK(finish[1] == Approx(2 * one).epsilon(1e-9));
}

TEST_CASE("a flow graph that cannot complete names its blocked flows instead of aborting") {
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  FabricEngine engine(c);
  FlowGraph g;
  const Route r = router.route(0, 2, flow_hash(0, 2, 0));
  g.add(flow_along(r, 0, 2, 1000));               // 0: free
  g.add(flow_along(r, 0, 2, 1000));               // 1: waits on 2
  g.add(flow_along(r, 0, 2, 1000));               // 2: waits on 1: a cycle
  g.flows[1].after = {2};
  g.flows[2].after = {1};
  try {
    engine.run(g);
    FAIL("a cycle must not run");
  } catch (const std::logic_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("2 of 3 flows never started (flow 1 GPU 0 -> 2 waits on 1 of its 1 predecessors; "
                                         "flow 2 GPU 0 -> 2 waits on 1 of its 1 predecessors)"));
  }
  // The engine stays usable: the next run is timed from its own start (latency + bytes / rate).
  FlowGraph one;
  one.add(flow_along(r, 0, 2, 0));
  CHECK(makespan(engine.run(one)) == Approx(r.latency_s));
}

TEST_CASE("a flow with a non-finite latency or a missing predecessor is refused before SimGrid sees it") {
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  FabricEngine engine(c);
  const Route r = router.route(0, 2, flow_hash(0, 2, 0));
  FlowGraph nan_latency;
  nan_latency.add(flow_along(r, 0, 2, 1000));
  nan_latency.flows[0].latency_s = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(engine.run(nan_latency), Catch::Contains("flow 0 (GPU 0 -> GPU 2") && Catch::Contains("cannot be simulated"));
  FlowGraph dangling;
  dangling.add(flow_along(r, 0, 2, 1000));
  dangling.flows[0].after = {7};
  CHECK_THROWS_WITH(engine.run(dangling), Catch::Contains("flow 0 waits on flow 7, not in the graph"));
}

TEST_CASE("each run is timed from its own start: a run of months leaves the next one its microseconds") {
  const Cluster c = test::cluster_from_yaml(kSmallFatTree);
  const Router router(c);
  FabricEngine engine(c);
  const Route r = router.route(0, 2, flow_hash(0, 2, 0));
  // The route's bottleneck is the 0.5-efficient 400 Gb/s network: 25 GB/s. 2^56 B take 2.9e6 s.
  FlowGraph long_run;
  long_run.add(flow_along(r, 0, 2, Bytes{1} << 56));
  const double long_s = makespan(engine.run(long_run));
  CHECK(long_s == Approx(r.latency_s + std::ldexp(1.0, 56) / 25e9));
  FlowGraph short_run;
  short_run.add(flow_along(r, 0, 2, 1000));
  // At a clock of 2.9e6 s a double resolves 0.5 ns: the 1.7 us run reads within 0.1%, never 0.
  CHECK(makespan(engine.run(short_run)) == Approx(r.latency_s + 1000 / 25e9).epsilon(1e-3));
}
