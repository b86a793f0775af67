#include "simulator/serve_validation.hpp"

#include <algorithm>
#include <filesystem>

#include "simulator/serve_report.hpp"
#include "simulator/serve_sim.hpp"
#include "topologies/cluster.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/scenario.hpp"
#include "workloads/serving/comm_cost.hpp"
#include "workloads/serving/iteration_cost.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim {

namespace {

const std::initializer_list<const char*> kRowFields = {"set", "name", "serving", "metric", "decode_batch", "published", "source", "settings"};

/// A run's figure by name; "" when `metric` is not a run's.
double run_metric(const ServeSummary& m, const std::string& metric) {
  for (auto [prefix, l] : {std::pair{"ttft", m.ttft}, std::pair{"tpot", m.tpot}, std::pair{"e2e", m.e2e}}) {
    const std::string p = prefix;
    if (metric == p + "_p50_s") return l.p50_s;
    if (metric == p + "_p90_s") return l.p90_s;
    if (metric == p + "_p99_s") return l.p99_s;
  }
  if (metric == "output_tokens_per_s") return m.output_tokens_per_s;
  return m.requests_per_s;
}

/// The row's serving file with its settings; a setting --set would refuse is an error at the row's entry.
ServingSpec load_row(const ServeValidationRow& row) {
  try {
    return load_serving(row.serving, row.sets);
  } catch (const UserError& e) {
    if (e.file() != "command line") throw;
    throw UserError(row.file, row.line, row.path + ".settings", e.expected());
  }
}

}  // namespace

const std::vector<std::string>& serve_validation_metrics() {
  static const std::vector<std::string> m = {"ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_p50_s", "tpot_p90_s",
                                             "tpot_p99_s", "e2e_p50_s",  "e2e_p90_s",  "e2e_p99_s",  "output_tokens_per_s",
                                             "requests_per_s", "decode_iteration_s"};
  return m;
}

std::vector<ServeValidationRow> load_serve_validation(const std::string& path) {
  const YamlField root = YamlField::load_file(path);
  root.expect_keys({"set", "rows"});
  const std::string file_set = root.child("set").as_string();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const YamlField rows = root.child("rows");
  if (!rows.is_sequence() || rows.size() == 0) rows.fail("expected a list of rows");
  std::vector<ServeValidationRow> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const YamlField r = rows.element(i);
    r.expect_keys(kRowFields);
    ServeValidationRow row;
    row.file = path;
    row.line = r.line();
    row.path = "rows[" + std::to_string(i) + "]";
    row.set = r.find("set") ? r.child("set").as_string() : file_set;
    row.name = r.child("name").as_string();
    row.serving = resolve_scenario_path(dir, r.child("serving"));
    if (auto s = r.find("settings")) {
      if (!s->is_sequence()) s->fail("expected a list of FIELD=VALUE settings");
      for (std::size_t k = 0; k < s->size(); ++k) {
        const std::string text = s->element(k).as_string();
        if (text.find('=') == std::string::npos) s->element(k).fail("expected FIELD=VALUE, got '" + text + "'");
        row.sets.push_back(text);
      }
    }
    const YamlField metric = r.child("metric");
    row.metric = metric.as_string();
    const auto& known = serve_validation_metrics();
    if (std::find(known.begin(), known.end(), row.metric) == known.end()) {
      std::string names;
      for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
      metric.fail("expected one of " + names + "; got '" + row.metric + "'");
    }
    const auto batch = r.find("decode_batch");
    if (row.metric == "decode_iteration_s") {
      if (!batch) r.fail("expected decode_batch: {requests, context_tokens} with metric decode_iteration_s");
      batch->expect_keys({"requests", "context_tokens"});
      row.decode_batch = {batch->child("requests").as_integer_in(1, 65536, "requests"),
                          batch->child("context_tokens").as_integer_in(1, 1L << 24, "tokens")};
    } else if (batch) {
      batch->fail("expected decode_batch only with metric decode_iteration_s");
    }
    row.published = r.child("published").as_number_in(1e-9, 1e12);
    row.source = r.child("source").as_string();
    if (row.source.empty()) r.child("source").fail("expected where the published figure comes from");
    out.push_back(std::move(row));
  }
  return out;
}

ServeValidationResult run_serve_validation(const ServeValidationRow& row) {
  const ServingSpec s = load_row(row);
  ServeValidationResult out{row, 0, 0};
  if (row.metric == "decode_iteration_s") {
    const Cluster cluster = build_cluster(s.cluster);
    ServingComm comm(cluster);
    IterationCost cost(s, s.model, comm);
    BatchShape shape;
    shape.decode_requests = row.decode_batch.requests;
    shape.decode_context_tokens = double(row.decode_batch.requests * (row.decode_batch.context_tokens + 1));
    shape.sampled_rows = row.decode_batch.requests;
    const int ranks = s.parallel.dp_attention;
    out.predicted = ranks > 1 ? cost.time_ranks(std::vector<BatchShape>(std::size_t(ranks), shape)).total_s : cost.time(shape).total_s;
  } else {
    out.predicted = run_metric(summarize_serving(s, simulate_serving(s)), row.metric);
  }
  out.error = (out.predicted - row.published) / row.published;
  return out;
}

}  // namespace clustersim
