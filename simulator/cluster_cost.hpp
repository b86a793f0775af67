#pragma once
// A cluster's capital cost and power from its bill of materials and the price catalog, and what a
// year of it buys: tokens per dollar (capital spread over the amortisation period plus electricity)
// and tokens per MWh. The servers are sized from the cluster's nodes; every other line from the
// fabric as built (topologies/bill_of_materials.hpp).
#include <string>
#include <vector>

#include "simulator/price_catalog.hpp"
#include "topologies/bill_of_materials.hpp"
#include "topologies/node_groups.hpp"

namespace clustersim {

struct CostLine {
  std::string item;      // "servers", "switches tier 2", "optics tier 1", ...
  std::string name;      // the catalog entry priced
  std::string gpu;       // a servers line's GPU model (a heterogeneous cluster has one line per model)
  long count = 0;
  double unit_price_usd = 0;
  double unit_power_W = 0;
  double price_usd() const { return count * unit_price_usd; }
  double power_W() const { return count * unit_power_W; }
};

struct ClusterCost {
  std::vector<CostLine> lines;
  double capital_usd = 0;
  double power_W = 0;
};

/// Prices every line; a component the catalog has no entry for is a UserError at the catalog.
/// Servers: one per node, at the catalog server of its GPU (the cluster's, or its node group's: one
/// line per model), the one with as many GPUs per node if there is one, scaled per GPU otherwise. NICs beyond those the server ships with are
/// priced from the NIC entry of the port speed. A switch tier is switch_units() of the catalog
/// switch of its port speed that costs least so (a port of k times the speed splits into k: NDR's
/// 400G into two 200G); optics two per cable (one per end); cables one per link.
ClusterCost price_cluster(const BillOfMaterials& bom, const ClusterSpec& spec, const PriceCatalog& catalog,
                          const std::vector<NodeGroup>& groups = {});

/// The part of `cluster` a fleet of `fleet_gpus` GPUs per model pays for: its servers' share of
/// each model's servers line, and its share of GPUs of every other line (the fabric and NICs serve
/// every GPU alike).
ClusterCost fleet_share(const ClusterCost& cluster, const std::vector<std::pair<std::string, int>>& fleet_gpus, int gpus_per_node);

/// What running the cluster costs: its price over `amortisation_years` plus its power at
/// `usd_per_kWh`, around the clock.
struct Economics {
  double usd_per_kWh = 0.08;
  double amortisation_years = 4;
};
inline constexpr double kSecondsPerYear = 365.25 * 24 * 3600;
double usd_per_year(const ClusterCost& cost, const Economics& e);
/// Tokens trained per dollar of usd_per_year.
double tokens_per_usd(double tokens_per_s, const ClusterCost& cost, const Economics& e);
/// Tokens trained per MWh the cluster draws.
double tokens_per_MWh(double tokens_per_s, const ClusterCost& cost);

}  // namespace clustersim
