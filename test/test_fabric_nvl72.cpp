// A scale-up domain beyond one server: GB200 NVL72 racks (gb200-nvl72.yaml), 72 GPUs on one
// NVSwitch domain, joined by an NDR fat tree.
#include <catch2/catch.hpp>

#include <string>

#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {
const std::string kNvl72 = "scenarios/clusters/gb200-nvl72.yaml";
}

TEST_CASE("NVL72 counts: 8 racks of 72 GPUs, one NVLink domain each, 18 leaves and 16 spines") {
  // 576 NICs / 32 down ports = 18 leaves; 18 x 32 uplinks over 64-port spines needs at least 9, and
  // the fewest that divide a leaf's 32 uplinks evenly is 16.
  const TopologyReport r = count_topology(test::shipped_cluster(kNvl72));
  CHECK(r.nodes == 8);
  CHECK(r.gpus == 576);
  CHECK(r.nvswitches == 8);
  CHECK(r.links_per_type.at("nvlink5") == 576);
  CHECK(r.switches(1) == 18);
  CHECK(r.switches(2) == 16);
  CHECK(r.links_per_type.at("ndr") == 576 + 18 * 32);
}

TEST_CASE("any two GPUs of a rack are one NVSwitch apart, other racks across the fabric") {
  const Cluster& c = test::shipped_cluster(kNvl72);
  const Router router(c);
  for (int dst : {1, 35, 71}) {  // trays 0, 8 and 17 of rack 0
    const Route r = router.route(0, dst, flow_hash(0, dst, 0));
    REQUIRE(r.links.size() == 2);
    CHECK(c.links[link_of(r.links[0])].type == "nvlink5");
    CHECK(c.links[link_of(r.links[1])].type == "nvlink5");
  }
  const Route out = router.route(0, 72, flow_hash(0, 72, 0));
  CHECK(c.links[link_of(out.links[1])].type == "ndr");
}

TEST_CASE("NVL72 bisection is 4 racks x 72 NICs x 50 GB/s, and NVLink in a rack 18x that per GPU") {
  // Closed form of a 1:1 tree: (8/2) x 72 x 400 Gb/s. Per GPU the rack's NVLink carries 900 GB/s each
  // way (NVIDIA GB200 NVL72 datasheet), 18 times the 50 GB/s its NIC gives it.
  const Cluster& c = test::shipped_cluster(kNvl72);
  CHECK(bisection_bandwidth_Bps(c) == Approx(4 * 72 * 400e9 / 8));
  CHECK(c.links[static_cast<std::size_t>(c.gpu_switch_link[0])].bandwidth_Bps == Approx(18 * 400e9 / 8));
}
