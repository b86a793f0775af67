// A cluster's capital cost and power (simulator/cluster_cost.hpp): the bill of materials times the
// catalog's unit figures, written out here as a sum, and the yearly economics in closed form.
#include <catch2/catch.hpp>

#include <string>

#include "simulator/cluster_cost.hpp"
#include "support.hpp"
#include "topologies/user_error.hpp"

using namespace clustersim;
using clustersim::test::source_path;

namespace {

const PriceCatalog& prices() {
  static const PriceCatalog c = load_price_catalog(source_path("scenarios/prices.yaml"));
  return c;
}

template <typename T>
const T& named(const std::vector<T>& list, const std::string& name) {
  for (const T& e : list)
    if (e.name == name) return e;
  FAIL("no catalog entry " << name);
  throw;
}

}  // namespace

TEST_CASE("the 4-SU H100 SuperPOD costs its servers, 48 switches, 4,080 optics and 2,040 cables at catalog prices", "[cost]") {
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const ClusterCost cost = price_cluster(bill_of_materials(c), c.spec, prices());
  const ServerPrice& dgx = named(prices().servers, "DGX H100");
  const SwitchPrice& qm = named(prices().switches, "QM9700 (Quantum-2 NDR)");
  const PortPrice& optic = named(prices().optics, "half of a twin-port 800G 2xSR4 OSFP");
  const PortPrice& fiber = named(prices().cables, "MPO-12 multimode fiber");
  const int cables = 127 * 8 + 1024;  // node-leaf, leaf-spine
  CHECK(cost.capital_usd == Approx(127 * dgx.price_usd + 48 * qm.price_usd + 2 * cables * optic.price_usd + cables * fiber.price_usd));
  CHECK(cost.power_W == Approx(127 * dgx.power_W + 48 * qm.power_W + 2 * cables * optic.power_W));
  // The DGX ships with its 8 NICs: no line for extra ones.
  for (const CostLine& l : cost.lines) CHECK(l.item != "extra NICs");
}

TEST_CASE("NICs beyond the server's 8 are bought at the catalog's 400G NIC price, and an 800G one it lacks is an error", "[cost]") {
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const BillOfMaterials bom = bill_of_materials(c);
  ClusterSpec spec = c.spec;
  spec.node.nics = 16;  // two NDR NICs a GPU: 8 shipped with each DGX H100, 8 bought
  const ClusterCost base = price_cluster(bom, c.spec, prices());
  const ClusterCost more = price_cluster(bom, spec, prices());
  const NicPrice& cx7 = named(prices().nics, "ConnectX-7 MCX75310AAS-NEAT (NDR / 400GbE, single-port OSFP)");
  const long extra = 127 * 8;  // 127 nodes x (16 - 8)
  CHECK(more.capital_usd - base.capital_usd == Approx(extra * cx7.price_usd));
  CHECK(more.power_W - base.power_W == Approx(extra * cx7.power_W));
  spec.node.nic_link.bandwidth_Bps *= 2;  // 800G NICs: the catalog sells none apart from a server
  try {
    price_cluster(bom, spec, prices());
    FAIL("priced 800G NICs the catalog does not list");
  } catch (const UserError& e) {
    CHECK(e.field_path() == "nics");
    CHECK(e.expected() == "expected an entry for a NIC of 800 Gb/s (the cluster needs one to be priced)");
  }
}

TEST_CASE("HDR 200G ports are priced as NDR ports split in two: one QM9700 per 40-port leaf", "[cost]") {
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-a100-superpod.yaml");
  const BillOfMaterials bom = bill_of_materials(c);
  const ClusterCost cost = price_cluster(bom, c.spec, prices());
  const SwitchPrice& qm = named(prices().switches, "QM9700 (Quantum-2 NDR)");
  for (const CostLine& l : cost.lines)
    if (l.item == "switches tier 1") CHECK(l.count == bom.tiers.at(1).switches);  // 40 ports <= 2 x 64
  double switches_usd = 0;
  for (const CostLine& l : cost.lines)
    if (l.item.rfind("switches", 0) == 0) switches_usd += l.price_usd();
  CHECK(switches_usd == Approx(qm.price_usd * (switch_units(bom.tiers.at(1), 128) + switch_units(bom.tiers.at(2), 128) +
                                               (bom.tiers.count(3) ? switch_units(bom.tiers.at(3), 128) : 0))));
}

TEST_CASE("a year of a cluster: capital over the amortisation period plus its energy at the electricity price", "[cost]") {
  ClusterCost cost;
  cost.capital_usd = 40e6;
  cost.power_W = 1.5e6;
  const Economics e{0.10, 5};
  const double year_h = 365.25 * 24;
  const double usd = 40e6 / 5 + 1.5e3 * year_h * 0.10;  // 8 M$ + 1.5 MW x 8766 h x 0.10 $/kWh
  CHECK(usd_per_year(cost, e) == Approx(usd));
  CHECK(tokens_per_usd(1e6, cost, e) == Approx(1e6 * year_h * 3600 / usd));
  CHECK(tokens_per_MWh(1e6, cost) == Approx(1e6 * 3600 / 1.5));
}

TEST_CASE("a cluster whose GPU the catalog has no server for is an error naming the catalog's servers", "[cost]") {
  const Cluster& c = test::shipped_cluster("scenarios/clusters/h800-deepseek.yaml");
  try {
    price_cluster(bill_of_materials(c), c.spec, prices());
    FAIL("priced a cluster of H800s");
  } catch (const UserError& e) {
    CHECK(e.file() == source_path("scenarios/prices.yaml"));
    CHECK(e.field_path() == "servers");
    CHECK(e.expected() == "expected an entry for GPU 'H800-SXM' (the cluster needs one to be priced)");
  }
}
