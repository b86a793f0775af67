// A two-level NVSwitch scale-up domain (node.scale_up.second_level, NVL576-style): GPUs on
// first-level switches, those on one second-level switch per node whose link to each domain carries
// the domain's GPU bandwidth over its oversubscription.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "collectives/collective.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

const std::string kNvl576 = "scenarios/clusters/gb200-nvl576.yaml";

// 16 GPUs a node in 4 domains of 4, 100 GB/s a GPU, one NIC a node; the second level thinned 4:1.
std::string two_level(double oversubscription) {
  return R"(
name: two-level
gpu: GB200
link_types:
  ideal: {bandwidth_efficiency: 1.0}
node:
  gpus: 16
  scale_up: {topology: nvswitch, link_type: ideal, bandwidth_GBps: 100, latency_us: 0.5, nvls: true,
             second_level: {domain_gpus: 4, oversubscription: )" +
         std::to_string(oversubscription) + R"(}}
  nics: {count: 1, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1, gpus: [0]}
  pcie: {link_type: ideal, bandwidth_GBps: 64, latency_us: 0.5}
fabric: {type: single_switch, nodes: 2, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1}
)";
}

/// Every GPU of domain 0 sends `bytes` to its peer in domain 1 at once.
Seconds domain_to_domain(const Cluster& c, Bytes bytes) {
  const Router router(c);
  FabricEngine engine(c);
  FlowGraph g;
  for (int i = 0; i < 4; ++i) {
    Flow f;
    f.src_gpu = i;
    f.dst_gpu = 4 + i;
    const Route r = router.route(i, 4 + i, flow_hash(i, 4 + i, 0));
    f.links = r.links;
    f.latency_s = r.latency_s;
    f.size_bytes = bytes;
    g.add(std::move(f));
  }
  return makespan(engine.run(g));
}

}  // namespace

TEST_CASE("NVL576 counts: 2 domains of 576 GPUs, 8 first-level NVSwitches and one above them each") {
  const TopologyReport r = count_topology(test::shipped_cluster(kNvl576));
  CHECK(r.nodes == 2);
  CHECK(r.gpus == 1152);
  CHECK(r.nvswitches == 2 * (8 + 1));
  CHECK(r.links_per_type.at("nvlink5") == 1152 + 2 * 8);  // a link per GPU, one per rack to the second level
}

TEST_CASE("NVL576: a rack is one NVSwitch apart, another rack three, another domain across the fabric") {
  const Cluster& c = test::shipped_cluster(kNvl576);
  const Router router(c);
  const Route same = router.route(0, 71, flow_hash(0, 71, 0));
  CHECK(same.links.size() == 2);
  const Route rack = router.route(0, 72 * 5 + 3, flow_hash(0, 363, 0));
  REQUIRE(rack.links.size() == 4);  // GPU -> rack 0's switch -> second level -> rack 5's switch -> GPU
  for (LinkDir d : rack.links) CHECK(c.links[link_of(d)].type == "nvlink5");
  CHECK(link_of(rack.links[1]) == c.scale_up_uplink_of_gpu(0));
  CHECK(link_of(rack.links[2]) == c.scale_up_uplink_of_gpu(363));
  // Non-blocking: a rack's uplink carries its 72 GPUs at 900 GB/s each.
  CHECK(c.links[static_cast<std::size_t>(c.scale_up_uplink_of_gpu(0))].bandwidth_Bps == Approx(72 * 900e9));
  const Route out = router.route(0, 576, flow_hash(0, 576, 0));
  bool ndr = false;
  for (LinkDir d : out.links) ndr = ndr || c.links[link_of(d)].type == "ndr";
  CHECK(ndr);
}

TEST_CASE("two-level NVSwitch: a domain sends to another at full GPU rate, and at 1/4 of it over a 4:1 second level") {
  // Four GPUs of domain 0 to four of domain 1: each crosses its own GPU link (100 GB/s) and the two
  // domains' uplinks, 400 GB/s non-blocking, 100 GB/s at 4:1. Latency: four 0.5 us links.
  const Bytes s = 1'000'000'000;
  const Seconds latency = 4 * 0.5e-6;
  CHECK(domain_to_domain(test::cluster_from_yaml(two_level(1)), s) == Approx(latency + s / 100e9).epsilon(1e-9));
  CHECK(domain_to_domain(test::cluster_from_yaml(two_level(4)), s) == Approx(latency + 4 * s / 100e9).epsilon(1e-9));
}

TEST_CASE("two-level NVSwitch: oversubscription left out is its documented default, 1 (non-blocking)") {
  // workloads/key_reference.cpp documents the default; test_key_reference counts on this test for it.
  std::string text = two_level(1);
  const std::string written = ", oversubscription: 1.000000";
  REQUIRE(text.find(written) != std::string::npos);
  text.erase(text.find(written), written.size());
  const Bytes s = Bytes{1} << 30;
  CHECK(domain_to_domain(test::cluster_from_yaml(text), s) == Approx(domain_to_domain(test::cluster_from_yaml(two_level(1)), s)).epsilon(1e-12));
  CHECK(domain_to_domain(test::cluster_from_yaml(text), s) < domain_to_domain(test::cluster_from_yaml(two_level(4)), s));
}

TEST_CASE("NVLS over two NVSwitch levels reduces in each first-level switch: a domain's uplink carries one partial") {
  // All-reduce over 8 GPUs in two domains of 4, non-blocking: every GPU link carries (n+1)/n S / e
  // as on one level; each uplink direction one partial or one sum a shard, S / e over its 400 GB/s:
  // the GPU links bind, so the time is one level's plus the uplinks' latency.
  const Cluster c = test::cluster_from_yaml(two_level(1));
  const Router router(c);
  FabricEngine engine(c);
  CollectiveRequest req;
  req.op = Op::all_reduce;
  for (int g = 0; g < 8; ++g) req.ranks.push_back(g);
  req.size_bytes = 1 << 30;
  req.channels = 1;
  req.protocol = *find_protocol("ideal");
  const FlowGraph graph = find_algorithm("nvls")->lower(router, req);  // checks bytes in = bytes out per switch
  const double n = 8, e = 0.74, shard = req.size_bytes / n;  // NCCL's nvlsEfficiency on Blackwell
  const double with_companion = shard + std::floor(shard * (1 / e - 1));
  const Seconds latency = 2 * 0.5e-6 + 2 * 0.5e-6;  // a GPU's link up and down, its domain's uplink up and down
  CHECK(makespan(engine.run(graph)) == Approx(latency + (n + 1) * with_companion / 100e9).epsilon(1e-9));
}

TEST_CASE("a second_level needs an NVSwitch and a domain size that divides the node into two or more") {
  const std::string good = two_level(1);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string y = good;
    y.replace(y.find(from), from.size(), to);
    return y;
  };
  CHECK_THROWS_WITH(test::cluster_from_yaml(with("domain_gpus: 4", "domain_gpus: 5")),
                    Catch::Contains("node.scale_up.second_level.domain_gpus: expected a number of GPUs that divides node.gpus (16)"));
  CHECK_THROWS_WITH(test::cluster_from_yaml(with("domain_gpus: 4", "domain_gpus: 16")),
                    Catch::Contains("into two or more first-level domains, got 16"));
  CHECK_THROWS_WITH(test::cluster_from_yaml(with("oversubscription: 1.000000", "oversubscription: 0.5")),
                    Catch::Contains("node.scale_up.second_level.oversubscription: expected"));
  std::string mesh = with("topology: nvswitch", "topology: full_mesh");
  mesh.replace(mesh.find("nvls: true"), 10, "nvls: false");
  CHECK_THROWS_WITH(test::cluster_from_yaml(mesh),
                    Catch::Contains("node.scale_up.second_level: expected no second_level on a full_mesh scale-up"));
}
