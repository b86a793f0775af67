// The fabric's bill of materials (topologies/bill_of_materials.hpp) against NVIDIA's published
// DGX SuperPOD component counts. Source: NVIDIA DGX SuperPOD reference architecture, compute
// fabric component table per number of scalable units (SU: 32 nodes of 8 NDR rails on 64-port
// Quantum-2 switches; the same table in the DGX H100 RA, RA-11333-001, Table 3, and the DGX B200
// RA, https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html):
//   SUs  nodes   leaf  spine  core   node-leaf  leaf-spine  spine-core cables
//    2     64     16      8     -        512         512        -
//    4    128     32     16     -       1024        1024        -
//    8    256     64     32     -       2048        2048        -
//   16    512    128    128    64       4096        4096     4096
//   64   2048    512    512   256      16384       16384    16384
#include <catch2/catch.hpp>

#include <string>

#include "support.hpp"
#include "topologies/bill_of_materials.hpp"

using namespace clustersim;
using clustersim::test::source_path;

namespace {

/// A shipped SuperPOD file with its node count replaced.
BillOfMaterials superpod(const std::string& file, const std::string& nodes_line, int nodes) {
  const std::string yaml = test::read_file(source_path("scenarios/clusters/" + file));
  return bill_of_materials(test::cluster_from_yaml(
      test::replaced_all(yaml, nodes_line, "nodes: " + std::to_string(nodes), file), file));
}

/// Switches counted as 64-port Quantum-2 units (switch_units), as NVIDIA's table counts them.
void check_row(const BillOfMaterials& bom, int leaf, int spine, int core, int cables_per_tier) {
  CHECK(switch_units(bom.tiers.at(1), 64) == leaf);
  CHECK(switch_units(bom.tiers.at(2), 64) == spine);
  CHECK(bom.tiers.count(3) == (core > 0 ? 1u : 0u));
  if (core > 0) CHECK(switch_units(bom.tiers.at(3), 64) == core);
  CHECK(bom.tiers.at(1).cables == cables_per_tier);
  CHECK(bom.tiers.at(2).cables == cables_per_tier);
  if (core > 0) CHECK(bom.tiers.at(3).cables == cables_per_tier);
  CHECK(bom.optics() == 2 * bom.cables());
}

}  // namespace

TEST_CASE("the shipped 4-SU SuperPOD has NVIDIA's 32 leaf and 16 spine switches and 1,024 leaf-spine cables", "[bom]") {
  // 127 nodes, as the H100 RA builds 4 SUs: the 128th slot holds the fabric manager, so 1,016 of the
  // table's 1,024 node-leaf cables go to DGX nodes.
  const BillOfMaterials bom = bill_of_materials(test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"));
  CHECK(bom.nodes == 127);
  CHECK(bom.tiers.at(1).switches == 32);
  CHECK(bom.tiers.at(2).switches == 16);
  CHECK(bom.tiers.at(1).cables == 127 * 8);
  CHECK(bom.tiers.at(2).cables == 1024);
  CHECK(bom.tiers.at(1).radix == 64);
  CHECK(bom.tiers.at(1).port_Bps == Approx(400e9 / 8));
}

TEST_CASE("2, 4 and 8 SUs of the SuperPOD match NVIDIA's table switch for switch and cable for cable", "[bom]") {
  check_row(superpod("dgx-h100-superpod.yaml", "nodes: 127", 64), 16, 8, 0, 512);
  check_row(superpod("dgx-h100-superpod.yaml", "nodes: 127", 128), 32, 16, 0, 1024);
  check_row(superpod("dgx-h100-superpod.yaml", "nodes: 127", 256), 64, 32, 0, 2048);
}

TEST_CASE("the 16K SuperPOD (64 SUs) and its 16-SU cut match NVIDIA's core-tier rows", "[bom]") {
  check_row(bill_of_materials(test::shipped_cluster("scenarios/clusters/dgx-h100-superpod-16k.yaml")), 512, 512, 256, 16384);
  check_row(superpod("dgx-h100-superpod-16k.yaml", "nodes: 2048", 512), 128, 128, 64, 4096);
}
