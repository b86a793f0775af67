// fabric.tiers[i].switches: the spine count (per pod) or core count (per plane) asked for rather
// than the fewest that fit. On the procurement fat tree (1,024 NDR ports, 64-port switches at 1:1:
// 32 leaves of 32 up-ports) the fewest spines that take an equal share of 32 uplinks in 64 ports
// are 16 (two links to each leaf); 32 spines take one each. Every uplink stays cabled, so the
// bandwidth is the same; what changes is the switches bought and how the links are spread.
#include <catch2/catch.hpp>

#include <string>

#include "support.hpp"
#include "topologies/bill_of_materials.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

const char* const kFile = "scenarios/procurement/h100-fat-tree-1to1.yaml";
const char* const kSpines = "{radix: 64}                        # spines";

Cluster with_spines(const std::string& spine_tier) {
  return test::cluster_from_yaml(test::shipped_with(kFile, kSpines, spine_tier), kFile);
}

}  // namespace

TEST_CASE("tiers[1].switches: 32 spines instead of the fewest 16, each leaf cabled once to each, every uplink kept", "[spines]") {
  const BillOfMaterials fewest = bill_of_materials(with_spines("{radix: 64}"));
  CHECK(fewest.tiers.at(2).switches == 16);
  CHECK(fewest.tiers.at(2).ports_used == 64);  // 32 leaves x 2 links
  const Cluster c = with_spines("{radix: 64, switches: 32}");
  const BillOfMaterials asked = bill_of_materials(c);
  CHECK(asked.tiers.at(1).switches == 32);
  CHECK(asked.tiers.at(2).switches == 32);
  CHECK(asked.tiers.at(2).ports_used == 32);   // 32 leaves x 1 link
  CHECK(asked.tiers.at(2).cables == 32 * 32);  // as many as with 16 spines
  CHECK(fewest.tiers.at(2).cables == 32 * 32);
  // From a leaf to another leaf every one of its 32 uplinks is an equal-cost first hop either way.
  Router router(c);
  CHECK(router.first_hop_ways(c.nic_port(0, 0), c.nic_port(1023, 0)) == 32);
}

TEST_CASE("tiers[].switches that cannot take an equal share of the uplinks, or on the leaves, is an error at the tier", "[spines]") {
  const UserError uneven = test::error_of([] { with_spines("{radix: 64, switches: 12}"); });
  CHECK(uneven.field_path() == "fabric.tiers");
  CHECK(uneven.expected() == "cannot build: 12 spines do not divide the 32 uplinks of each switch below evenly");
  const UserError few = test::error_of([] { with_spines("{radix: 64, switches: 8}"); });
  CHECK(few.expected() == "cannot build: 8 spines of 64 ports down cannot take 32 switches x 32 uplinks (at least 16)");
  const UserError leaves = test::error_of([] {
    test::cluster_from_yaml(test::shipped_with(kFile, "{radix: 64, oversubscription: 1}", "{radix: 64, oversubscription: 1, switches: 32}"), kFile);
  });
  CHECK(leaves.field_path() == "fabric.tiers[0].switches");
  CHECK(leaves.expected() == "expected switches only on a tier above the leaves (the leaves are as many as the NICs need)");
}
