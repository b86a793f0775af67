// CollNet (InfiniBand SHARP) all-reduce in closed form. Four nodes of G = 4 GPUs, each GPU with its
// own 50 GB/s NIC on one SHARP switch; NVLink 900 GB/s and PCIe 640 GB/s, so the NICs bind. The
// switch reduces, so each NIC carries its GPU's shard once up and once down: S/G each way, where a
// ring sends 2(n-1)/n S/G over every NIC. The latency before the bytes flow is the NVLink step in
// and out of the node (2 x 0.5 us) and the route across the switch and back (2 x 3 us).
#include <catch2/catch.hpp>

#include <cmath>

#include "collectives/collective.hpp"
#include "one_line_error.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr double kNicBandwidth = 50e9;
constexpr int kGpusPerNode = 4, kNodes = 4;
constexpr double kLatency = 2 * (2 * 0.25e-6) + 2 * (0.5e-6 + 1e-6 + 1e-6 + 0.5e-6);

std::string sharp_nodes(bool sharp, const char* scale_up = "nvswitch") {
  return std::string(R"(
name: sharp-nodes
gpu: H100-SXM
link_types:
  ideal: {bandwidth_efficiency: 1.0}
node:
  gpus: 4
  scale_up: {topology: )") + scale_up + R"(, link_type: ideal, bandwidth_GBps: 900, latency_us: 0.25}
  nics: {count: 4, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1, gpus: [0, 1, 2, 3]}
  pcie: {link_type: ideal, bandwidth_GBps: 640, latency_us: 0.5}
fabric: {type: single_switch, nodes: 4, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1, sharp: )" +
         (sharp ? "true" : "false") + "}\n";
}

Seconds all_reduce(const char* algorithm, Bytes size, int channels, const char* protocol = "ideal") {
  static const Cluster cluster = test::cluster_from_yaml(sharp_nodes(true));
  static const Router router(cluster);
  static FabricEngine engine(cluster);
  const CollectiveRequest req = test::request(Op::all_reduce, kNodes * kGpusPerNode, size, channels, protocol);
  REQUIRE_FALSE(find_algorithm(algorithm)->not_applicable(cluster, req).has_value());
  return makespan(engine.run(find_algorithm(algorithm)->lower(router, req)));
}

void check_exact(Seconds simulated, Seconds closed_form) {
  INFO("simulated " << simulated << " s, closed form " << closed_form << " s");
  CHECK(std::abs(simulated - closed_form) / closed_form < 1e-9);
}

const Bytes kSizes[] = {8 * 1024 * 1024, 1024ULL * 1024 * 1024};

}  // namespace

TEST_CASE("collnet_direct all-reduce: every NIC carries S/G each way, so S/(G B_nic) after the latency") {
  for (Bytes s : kSizes) {
    check_exact(all_reduce("collnet_direct", s, 1), kLatency + s / (kGpusPerNode * kNicBandwidth));
    check_exact(all_reduce("collnet_direct", s, 2), kLatency + s / (kGpusPerNode * kNicBandwidth));
  }
  // The ring over the same 16 GPUs sends 2(n-1)/n of that over every NIC: SHARP's gain at the NIC.
  const Bytes s = 1024ULL * 1024 * 1024;
  const Seconds ring = all_reduce("ring", s, 4);
  CHECK(ring > 1.8 * (all_reduce("collnet_direct", s, 1) - kLatency));
}

TEST_CASE("collnet_chain all-reduce: one head NIC a channel, so S/B_nic on one channel and S/(G B_nic) on G") {
  for (Bytes s : kSizes) {
    check_exact(all_reduce("collnet_chain", s, 1), kLatency + s / kNicBandwidth);
    check_exact(all_reduce("collnet_chain", s, kGpusPerNode), kLatency + s / (kGpusPerNode * kNicBandwidth));
  }
}

TEST_CASE("collnet under Simple pays NCCL 2.30.7's CollNet latency once") {
  const Bytes s = 8 * 1024 * 1024;
  // Direct: 2 x (min(1, G-1) x 3.7 + (G-1) x 0.4) + 31 us; chain: 2 x (G-1) x 2.8 + 30 us.
  check_exact(all_reduce("collnet_direct", s, 1, "Simple") - all_reduce("collnet_direct", s, 1), 2 * (3.7 + 3 * 0.4) * 1e-6 + 31e-6);
  check_exact(all_reduce("collnet_chain", s, 1, "Simple") - all_reduce("collnet_chain", s, 1), 2 * 3 * 2.8e-6 + 30e-6);
}

TEST_CASE("collnet needs SHARP switches, NVSwitch nodes, several nodes and Simple, and are never in an iteration's choice") {
  const Cluster sharp = test::cluster_from_yaml(sharp_nodes(true));
  const Cluster plain = test::cluster_from_yaml(sharp_nodes(false));
  const Cluster mesh = test::cluster_from_yaml(sharp_nodes(true, "full_mesh"));
  for (const char* name : {"collnet_direct", "collnet_chain"}) {
    const Algorithm& a = *find_algorithm(name);
    CHECK_FALSE(a.not_applicable(sharp, test::request(Op::all_reduce, 16, 1024, 1, "Simple")).has_value());
    CHECK_THAT(a.not_applicable(plain, test::request(Op::all_reduce, 16, 1024, 1, "Simple")).value_or(""),
               Catch::Matchers::Contains("fabric.sharp: true"));
    CHECK(a.not_applicable(mesh, test::request(Op::all_reduce, 16, 1024, 1, "Simple")).has_value());
    CHECK(a.not_applicable(sharp, test::request(Op::all_reduce, 4, 1024, 1, "Simple")).has_value());   // one node
    CHECK(a.not_applicable(sharp, test::request(Op::all_reduce, 16, 1024, 1, "LL128")).has_value());
    CHECK(a.not_applicable(sharp, test::request(Op::all_gather, 16, 1024, 1, "Simple")).has_value());
    CHECK_FALSE(a.in_iteration_auto());
  }
}

TEST_CASE("collective --algo collnet_direct on a fabric without SHARP is one line naming the cluster's fabric.sharp") {
  const std::string cluster = test::temp_file(sharp_nodes(false));
  test::require_one_line_error(test::run_cli("collective --cluster " + cluster + " --gpus 16 --op all_reduce --algo collnet_direct -b 1M -e 1M"),
                               "error: ", "fabric.sharp: true");
  const std::string bad = test::temp_file(test::replaced_all(sharp_nodes(true), "sharp: true", "sharp: maybe", "sharp"));
  test::require_one_line_error(test::run_cli("collective --cluster " + bad + " --gpus 16 --op all_reduce -b 1M -e 1M"),
                               "error: " + bad + ":", "fabric.sharp");
}
