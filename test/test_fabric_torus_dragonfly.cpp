// Direct fabrics: a 3D torus with dimension-ordered routing (torus-h100-4x4x4.yaml) and a dragonfly
// with minimal routing (dragonfly-h100.yaml). Counts, hops and bisection as closed forms.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

const std::string kTorus = "scenarios/clusters/torus-h100-4x4x4.yaml";
const std::string kDragonfly = "scenarios/clusters/dragonfly-h100.yaml";


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
      longest = std::max(longest, hops);
    }
  CHECK(longest == 4);  // local, global, local
}
