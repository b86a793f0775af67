#include "simulator/serve_cost.hpp"

#include "topologies/bill_of_materials.hpp"
#include "topologies/cluster.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

ServeCost serve_cost(const ServingSpec& s, const ServeSummary& m, const PriceCatalog& catalog, const Economics& e) {
  ServeCost out;
  ClusterCost cost;
  try {
    cost = price_cluster(bill_of_materials(build_cluster(s.cluster)), s.cluster, catalog, s.node_groups);
  } catch (const UserError& err) {
    out.unpriced_reason = err.what();
    return out;
  }
  out.priced = true;
  out.cluster_capital_usd = cost.capital_usd;
  out.cluster_power_W = cost.power_W;
  const ClusterCost share = fleet_share(cost, s.gpus_by_model(), s.cluster.node.gpus);
  out.share = share.capital_usd / cost.capital_usd;
  out.fleet_usd_per_year = usd_per_year(share, e);
  const double usd_per_s = out.fleet_usd_per_year / kSecondsPerYear;
  if (m.output_tokens_per_s > 0) out.usd_per_million_output_tokens = usd_per_s / m.output_tokens_per_s * 1e6;
  const double tokens_per_s = m.output_tokens_per_s + m.prompt_tokens_per_s;
  if (tokens_per_s > 0) out.usd_per_million_tokens = usd_per_s / tokens_per_s * 1e6;
  return out;
}

}  // namespace clustersim
