#pragma once
// `clustersim serve FILE --vary KEY=V1,V2,...`: the serving file at every combination of the
// listed values (the last key varying fastest), each loaded as `--set KEY=V` would load it. A
// combination the file cannot take (a replica the model does not fit, a tp that does not divide
// the heads) is a row of the answer with its reason; only when none loads is it the user's error.
// Without --capacity each combination runs once and prints a row of serve's summary: with the
// arrival rate varied, that is the latency-throughput curve.
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "simulator/serve_capacity.hpp"
#include "simulator/serve_cost.hpp"
#include "simulator/serve_report.hpp"

namespace clustersim::cli {

/// Every combination of --vary's KEY=V1,V2,... lists; a malformed one, or more than 256
/// combinations, is the command line's error.
std::vector<std::vector<std::string>> vary_product(const std::vector<std::string>& vary);

/// One combination's run: what it found, or why the file with its settings could not be run
/// (loaded, or simulated: a replica the model does not fit, a request longer than its KV cache).
struct VariantRun {
  std::vector<std::string> settings;  // KEY=VALUE over the file's and --set's
  int gpus = 0;
  std::string error;                  // "FIELD: what was expected"; empty where it ran
  bool slo_declared = false;
  ServeSummary summary;               // serve --vary: the run's summary
  CapacityResult capacity;            // serve --capacity --vary: the search
  std::optional<ServeCost> cost;      // at the run's rate, or at capacity
};

/// Each combination loaded over `file` and `overrides`, then handed to `run` (which fills the
/// result); a UserError from either is that combination's error. When none runs, the first one's
/// error is thrown (a field of --vary's named as --vary).
std::vector<VariantRun> run_variants(const std::string& file, const std::vector<std::string>& overrides,
                                     const std::vector<std::string>& vary,
                                     const std::function<void(const ServingSpec&, VariantRun&)>& run);

/// serve's latency percentiles as JSON (cmd_serve.cpp's summary uses the same).
nlohmann::ordered_json latency_json(const LatencySummary& l);

/// A combination's (or a search's) cost per million tokens as JSON, its catalog named.
nlohmann::ordered_json variant_cost_json(const ServeCost& cost, const std::string& prices);

/// One row a combination, in --vary's order.
void report_serve_variants(const ServingSpec& base, const std::vector<VariantRun>& variants, const std::string& prices,
                           nlohmann::ordered_json config, const std::string& json_path);

}  // namespace clustersim::cli
