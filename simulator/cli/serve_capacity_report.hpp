#pragma once
// `clustersim serve FILE --capacity`: the rates the search ran as a latency-throughput table, and
// the capacity it bracketed (simulator/serve_capacity.hpp), as text or as JSON.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "simulator/serve_capacity.hpp"
#include "simulator/serve_cost.hpp"

namespace clustersim::cli {

/// One point of `--capacity --vary`: its KEY=VALUE settings over the file's, and its capacity, or
/// why the file with those settings does not load (a replica the model does not fit, say).
struct CapacityVariant {
  std::vector<std::string> settings;
  int gpus = 0;
  std::string error;  // "FIELD: what was expected"; empty where it loaded
  CapacityResult result;
  std::optional<ServeCost> cost;  // at the capacity rate
};

/// Every combination of --vary's KEY=V1,V2,... lists, the last key varying fastest; a malformed
/// one is the command line's error.
std::vector<std::vector<std::string>> vary_product(const std::vector<std::string>& vary);

/// The variants ranked by capacity per GPU (the buyer's measure), those that did not load last.
void report_capacity_variants(const ServingSpec& base, const CapacitySearch& search, const std::vector<CapacityVariant>& variants,
                              const std::string& prices, nlohmann::ordered_json config, const std::string& json_path);

/// `config` is serve's own config object (cmd_serve.cpp), so the JSON names the run as serve does.
/// `cost` is the highest held rate's cost per million tokens (null where no rate held), read from
/// the price catalog at `prices`.
void report_capacity(const ServingSpec& s, const CapacitySearch& search, const CapacityResult& r, const ServeCost* cost,
                     const std::string& prices, nlohmann::ordered_json config, const std::string& json_path);

}  // namespace clustersim::cli
