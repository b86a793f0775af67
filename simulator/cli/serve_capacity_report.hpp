#pragma once
// `clustersim serve FILE --capacity`: the rates the search ran as a latency-throughput table, and
// the capacity it bracketed (simulator/serve_capacity.hpp), as text or as JSON; with --vary, each
// combination's capacity, ranked.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "simulator/cli/serve_vary.hpp"
#include "simulator/serve_capacity.hpp"
#include "simulator/serve_cost.hpp"

namespace clustersim::cli {

/// `config` is serve's own config object (cmd_serve.cpp), so the JSON names the run as serve does.
/// `cost` is the highest held rate's cost per million tokens (null where no rate held), read from
/// the price catalog at `prices`.
void report_capacity(const ServingSpec& s, const CapacitySearch& search, const CapacityResult& r, const ServeCost* cost,
                     const std::string& prices, nlohmann::ordered_json config, const std::string& json_path);

/// `--capacity --vary`: the combinations (run_variants' capacity and cost at capacity) ranked by
/// capacity per GPU (the buyer's measure), those that did not run last.
void report_capacity_variants(const ServingSpec& base, const CapacitySearch& search, const std::vector<VariantRun>& variants,
                              const std::string& prices, nlohmann::ordered_json config, const std::string& json_path);

}  // namespace clustersim::cli
