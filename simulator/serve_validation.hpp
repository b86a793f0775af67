#pragma once
// `clustersim serve --validate`: serving's predictions against published measurements
// (scenarios/validation/serving/*.yaml). A rows file names a set and its rows; each row is one
// published figure: a serving file, the settings the measurement used (as --set overrides: prompt
// length, chunk size, batch size), the metric and the published value with its source. Nothing in a
// row tunes the model: the GPU's calibration comes from the catalog (kernel measurements) and is
// the same for every row.
//
// Metrics: a latency percentile of a run (ttft_, tpot_, e2e_ with _p50_s, _p90_s, _p99_s),
// throughput over a run (output_tokens_per_s, requests_per_s), or decode_iteration_s, one decode
// iteration of `decode_batch: {requests, context_tokens}` timed by the iteration model alone, for
// papers that publish per-iteration decode times rather than a run's TPOT (under data-parallel
// attention, the batch of every attention rank alike).
#include <string>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

struct DecodeBatchSpec {
  long requests = 0, context_tokens = 0;
};

struct ServeValidationRow {
  std::string set, name;
  std::string serving;             // resolved path
  std::vector<std::string> sets;   // `settings:` FIELD=VALUE, the measurement's
  std::string metric;
  DecodeBatchSpec decode_batch;    // metric decode_iteration_s
  double published = 0;            // in the metric's unit
  std::string source;
  std::string file, path;  // the rows file, and the row's field path in it ("rows[3]")
  int line = 0;
};

/// Reads and checks a rows file (every field at its line); the serving files load when run.
std::vector<ServeValidationRow> load_serve_validation(const std::string& path);

/// The metrics a row may name.
const std::vector<std::string>& serve_validation_metrics();

struct ServeValidationResult {
  ServeValidationRow row;
  double predicted = 0;
  double error = 0;  // (predicted - published) / published
};

/// Runs one row: the serving file with the row's settings, then its metric. A bad serving file or
/// setting is a UserError at the row.
ServeValidationResult run_serve_validation(const ServeValidationRow& row);

}  // namespace clustersim
