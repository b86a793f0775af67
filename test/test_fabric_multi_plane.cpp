// Multi-plane fabrics: each NIC port on its own plane of switches (hpn-dual-plane.yaml, after
// Alibaba HPN's dual-plane design). Counts, what joins what, the plane a flow picks, bisection.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "simulator/engine.hpp"
#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

const std::string kDualPlane = "scenarios/clusters/hpn-dual-plane.yaml";
constexpr double kPort_Bps = 200e9 / 8;  // one 200 Gb/s port, per direction

std::string plane_of(const std::string& switch_name) { return switch_name.substr(0, switch_name.find('.')); }

/// The planes of the switches a route enters.
std::set<std::string> planes_on(const Cluster& c, const Route& r) {
  std::set<std::string> out;
  for (LinkDir d : r.links) {
    const Link& l = c.links[link_of(d)];
    const int v = d == forward(link_of(d)) ? l.b : l.a;
    if (c.graph[v].kind == VertexKind::fabric_switch) out.insert(plane_of(c.graph[v].name));
  }
  return out;
}

}  // namespace

TEST_CASE("dual-plane counts: two planes of 16 leaves and 8 spines, two links per NIC") {
  // A plane takes port k of each of 1024 NICs: 1024 / 64 down = 16 leaves; 16 x 64 uplinks / 128
  // ports = 8 spines. 2048 NIC port links plus 2 x 16 x 64 leaf uplinks.
  const TopologyReport r = count_topology(test::shipped_cluster(kDualPlane));
  CHECK(r.gpus == 1024);
  CHECK(r.nics == 1024);
  CHECK(r.switches(1) == 2 * 16);
  CHECK(r.switches(2) == 2 * 8);
  CHECK(r.links_per_type.at("eth200") == 2 * 1024 + 2 * 16 * 64);
}

TEST_CASE("port k of every NIC sits on plane k, and no switch links two planes") {
  const Cluster& c = test::shipped_cluster(kDualPlane);
  REQUIRE(c.ports_per_nic() == 2);
  for (int nic = 0; nic < c.nic_count(); ++nic)
    for (int port = 0; port < 2; ++port) {
      const int sw = c.nic_switch[static_cast<std::size_t>(c.nic_port(nic, port))];
      CHECK(plane_of(c.graph[c.switches[sw].vertex].name) == "plane" + std::to_string(port));
    }
  for (const Switch& s : c.switches)
    for (const SwitchPort& p : s.ports)
      CHECK(plane_of(c.graph[s.vertex].name) == plane_of(c.graph[c.switches[p.peer_switch].vertex].name));
}

TEST_CASE("a flow stays in the plane its hash picks, and hashes use both planes") {
  const Cluster& c = test::shipped_cluster(kDualPlane);
  const Router router(c);
  std::set<std::string> seen;
  for (int channel = 0; channel < 16; ++channel) {
    const Route r = router.route(0, 8 * 100, flow_hash(0, 8 * 100, channel));  // nodes 0 and 100: other leaves
    const std::set<std::string> planes = planes_on(c, r);
    REQUIRE(planes.size() == 1);
    seen.insert(*planes.begin());
  }
  // 16 fair coin flips all alike: 2 x 2^-16.
  CHECK(seen == std::set<std::string>{"plane0", "plane1"});
}

TEST_CASE("dual-plane bisection counts both ports of every NIC, and one flow gets one port") {
  // (128 / 2) nodes x 8 NICs x 2 ports x 25 GB/s; PCIe (64 GB/s) is above a NIC's 50.
  const Cluster& c = test::shipped_cluster(kDualPlane);
  CHECK(bisection_bandwidth_Bps(c) == Approx(64 * 8 * 2 * kPort_Bps));
  // A single flow is hashed onto one plane, so it moves at one port's calibrated rate.
  const Router router(c);
  FabricEngine engine(c);
  const Route r = router.route(0, 8, flow_hash(0, 8, 0));
  FlowGraph g;
  g.add(test::flow_on(r, 0, 8, 1'000'000'000));
  CHECK(makespan(engine.run(g)) == Approx(r.latency_s + 1e9 / (0.94 * kPort_Bps)).epsilon(1e-9));
}

TEST_CASE("bench --fabric-only routes two transfers per GPU and names a cluster it cannot read") {
  // 1024 GPUs, each to the next node and to the node half the cluster away: 2048 routes, none to itself.
  const test::CliResult r = test::run_cli("bench --fabric-only --cluster " + test::source_path(kDualPlane));
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stdout_text.find("1024 GPUs, 48 switches, 6144 links") != std::string::npos);
  CHECK(r.stdout_text.find(" 2048 ") != std::string::npos);
  CHECK(test::run_cli("bench --fabric-only --cluster /nonexistent.yaml").exit_code == 2);
}
