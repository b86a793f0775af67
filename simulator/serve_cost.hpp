#pragma once
// What a serving run's tokens cost: the cluster priced as `sweep` prices it (its bill of materials
// and the price catalog, simulator/cluster_cost.hpp), a year of it (capital over the amortisation
// period plus its power around the clock), charged to the fleet by its share (fleet_share: its part of
// each GPU model's servers, and its share of GPUs of the fabric), over the tokens the run produced
// per second; on a cluster of one model
//   usd_per_million_output_tokens = usd_per_year x gpus_used / cluster_gpus / (output_tokens_per_s x year_s) x 1e6
// and the same over prompt and output tokens together. The fleet is paid for whether busy or idle,
// so a lightly loaded run's tokens cost more.
#include <string>

#include "simulator/cluster_cost.hpp"
#include "simulator/price_catalog.hpp"
#include "simulator/serve_report.hpp"

namespace clustersim {

struct ServeCost {
  bool priced = false;
  std::string unpriced_reason;          // why not, when the catalog lacks a part of this cluster
  double cluster_capital_usd = 0, cluster_power_W = 0;
  double share = 0;                     // the fleet's capital over the cluster's (its GPUs' share on one model)
  double fleet_usd_per_year = 0;
  double usd_per_million_output_tokens = 0;
  double usd_per_million_tokens = 0;    // prompt and output tokens together
};

/// The run's cost per million tokens; a cluster the catalog cannot price comes back unpriced, with
/// the catalog's reason, rather than failing the run.
ServeCost serve_cost(const ServingSpec& s, const ServeSummary& m, const PriceCatalog& catalog, const Economics& e);

}  // namespace clustersim
