// Direct fabrics: a 3D torus with dimension-ordered routing (torus-h100-4x4x4.yaml) and a dragonfly
// with minimal and Valiant routing (dragonfly-h100.yaml). Counts, hops, bisection and the adversarial
// group-to-group pattern as closed forms.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "simulator/engine.hpp"
#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

const std::string kTorus = "scenarios/clusters/torus-h100-4x4x4.yaml";
const std::string kDragonfly = "scenarios/clusters/dragonfly-h100.yaml";


/// The group of each router a route crosses, in order ("group3.router1" -> 3).
std::vector<int> groups_on(const Cluster& c, const Route& r) {
  std::vector<int> out;
  for (const std::string& name : test::switches_on(c, r)) out.push_back(std::stoi(name.substr(5, name.find('.') - 5)));
  return out;
}

/// Every GPU of group 0 (nodes 0-3, one a router) sends 1 GB to its peer in group 1 (nodes 4-7),
/// all at once: the adversarial pattern for minimal routing. Returns when the last one ends.
Seconds group_to_group_s(const Cluster& c) {
  const Router router(c);
  FabricEngine engine(c);
  FlowGraph g;
  for (int gpu = 0; gpu < 32; ++gpu) g.add(test::flow_on(router.route(gpu, gpu + 32, flow_hash(gpu, gpu + 32, 0)), gpu, gpu + 32, 1'000'000'000));
  const std::vector<Seconds> finish = engine.run(g);
  return *std::max_element(finish.begin(), finish.end());
}

int switch_links(const Cluster& c) {
  int n = 0;
  for (const Switch& s : c.switches) n += static_cast<int>(s.ports.size());
  return n / 2;
}

}  // namespace

TEST_CASE("a 4x4x4 torus has a router per node and 3 links per router, wrap-around included") {
  const Cluster& c = test::shipped_cluster(kTorus);
  CHECK(c.switches.size() == 64);
  CHECK(switch_links(c) == 64 * 3);  // each router links to its + neighbour in each dimension
  for (const Switch& s : c.switches) CHECK(s.ports.size() == 6);
}

TEST_CASE("torus routes are dimension-ordered and take the wrap-around when shorter") {
  const Cluster& c = test::shipped_cluster(kTorus);
  const Router router(c);
  auto route_nodes = [&](int src_node, int dst_node) {
    const int src = src_node * 8, dst = dst_node * 8;
    return test::switches_on(c, router.route(src, dst, flow_hash(src, dst, 0)));
  };
  // (0,0,0) to (3,0,0): one hop over the wrap link, not three.
  CHECK(route_nodes(0, 3) == std::vector<std::string>{"torus.0.0.0", "torus.3.0.0"});
  // (0,0,0) to (1,3,2) = node 1 + 4*3 + 16*2: x first (1 hop), then y (1 hop back over the wrap),
  // then z (2 hops): 4 hops, 5 routers, the Manhattan distance on the torus.
  CHECK(route_nodes(0, 45) == std::vector<std::string>{"torus.0.0.0", "torus.1.0.0", "torus.1.3.0", "torus.1.3.1",
                                                       "torus.1.3.2"});
}

TEST_CASE("a 4x4x4 torus's node-order bisection is 2 x 4 x 4 links") {
  // The first 32 nodes are z = 0 and 1: the cut is the 16 links between z = 1 and 2 and the 16
  // wrap links between z = 3 and 0, at 1600 Gb/s; the 32 nodes' NICs (32 x 8 x 50 GB/s) are wider.
  CHECK(bisection_bandwidth_Bps(test::shipped_cluster(kTorus)) == Approx(2 * 4 * 4 * 1600e9 / 8));
}

TEST_CASE("a dragonfly of 9 groups of 4 routers: local all-to-all, one global link per pair of groups") {
  // Local links 9 x C(4, 2) = 54; global 9 x 8 / 2 = 36; no router holds more than its 2 global links.
  const Cluster& c = test::shipped_cluster(kDragonfly);
  CHECK(c.switches.size() == 36);
  CHECK(switch_links(c) == 54 + 36);
  for (int s = 0; s < 36; ++s) {
    int global = 0;
    for (const SwitchPort& p : c.switches[static_cast<std::size_t>(s)].ports) global += p.peer_switch / 4 != s / 4;
    CHECK(global <= 2);
  }
}

TEST_CASE("dragonfly minimal routes: one router, two in a group, at most four between groups") {
  const Cluster& c = test::shipped_cluster(kDragonfly);
  const Router router(c);
  std::size_t longest = 0;
  for (int src_node = 0; src_node < 36; ++src_node)
    for (int dst_node = 0; dst_node < 36; ++dst_node) {
      if (src_node == dst_node) continue;
      const std::size_t hops = test::switches_on(c, router.route(src_node * 8, dst_node * 8, 1)).size();
      if (src_node / 4 == dst_node / 4) CHECK(hops == 2);  // one node a router: two routers of one group
      // Between groups, through the one link joining them: no third group on the way.
      for (int g : groups_on(c, router.route(src_node * 8, dst_node * 8, 1))) CHECK((g == src_node / 4 || g == dst_node / 4));
      longest = std::max(longest, hops);
    }
  CHECK(longest == 4);  // local, global, local
}

TEST_CASE("dragonfly Valiant routes detour through one other group: at most local, global, local, global, local") {
  const Cluster c = test::cluster_from_yaml(test::shipped_with(kDragonfly, "  type: dragonfly\n", "  type: dragonfly\n  routing: valiant\n"));
  const Router router(c);
  std::set<int> via;
  for (int gpu = 0; gpu < 32; ++gpu)
    for (int ch = 0; ch < 8; ++ch) {
      const std::vector<int> groups = groups_on(c, router.route(gpu, gpu + 32, flow_hash(gpu, gpu + 32, ch)));
      INFO("GPU " << gpu << " channel " << ch);
      REQUIRE(groups.size() <= 6);
      CHECK(groups.front() == 0);
      CHECK(groups.back() == 1);
      // Source group, then one intermediate group that is neither end, then the destination group.
      std::vector<int> visited{groups.front()};
      for (int g : groups)
        if (g != visited.back()) visited.push_back(g);
      REQUIRE(visited.size() == 3);
      CHECK(visited[1] != 0);
      CHECK(visited[1] != 1);
      via.insert(visited[1]);
    }
  CHECK(via.size() == 7);  // every other group carries some of it
  // Inside one group Valiant has nothing to detour through: the minimal route.
  CHECK(groups_on(c, router.route(0, 8, flow_hash(0, 8, 0))) == std::vector<int>{0, 0});
}

TEST_CASE("group-to-group traffic: minimal routing is held to the one global link, Valiant spreads it") {
  // 32 flows of 1 GB cross the single group 0 -> group 1 link under minimal routing: 32 GB at
  // 400 Gb/s x 0.94 = 47 GB/s (every other link they cross carries at most 8 of them). Valiant sends
  // each through one of the 7 other groups, two global links each: at best 32 GB over 7 links.
  constexpr double kGlobal_Bps = 50e9 * 0.94;
  const Seconds minimal = group_to_group_s(test::shipped_cluster(kDragonfly));
  CHECK(minimal == Approx(32e9 / kGlobal_Bps).epsilon(1e-4));
  const Seconds valiant = group_to_group_s(
      test::cluster_from_yaml(test::shipped_with(kDragonfly, "  type: dragonfly\n", "  type: dragonfly\n  routing: valiant\n")));
  CHECK(valiant >= 32e9 / (7 * kGlobal_Bps));
  CHECK(valiant <= minimal / 2);
}
