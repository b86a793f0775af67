// `clustersim validate`: predicted against published iteration times, row by row, with the errors.
// Each simulation runs in its own child process (SimGrid holds one platform per process).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>

#include "simulator/cli/commands.hpp"
#include "simulator/training_run.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

struct Row {
  std::string name;
  std::string scenario;  // resolved path
  double published_s = 0;
  bool tune = false;
  std::string source;
};

std::vector<Row> load_rows(const std::string& path) {
  const YamlField root = YamlField::load_file(path);
  root.expect_keys({"rows"});
  const YamlField rows = root.child("rows");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<Row> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const YamlField r = rows.element(i);
    r.expect_keys({"name", "scenario", "published_iter_s", "tune", "source"});
    out.push_back({r.child("name").as_string(), (dir / r.child("scenario").as_string()).string(),
                   r.child("published_iter_s").as_positive(), r.child("tune").as_bool(), r.child("source").as_string()});
  }
  return out;
}

/// Iteration time of a scenario with overrides, or NaN when that configuration is invalid or does
/// not fit in memory (both are UserErrors).
double iteration_s(const std::string& scenario, const std::vector<std::string>& overrides) {
  const std::string text = run_in_child([&] {
    try {
      const RunReport r = run_training(load_scenario(scenario, overrides), false);
      return fmt::format("{:.17g}", r.iteration_s);
    } catch (const UserError&) {
      return std::string("nan");
    }
  });
  return text == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::stod(text);
}

/// The published rows' one rule for unstated knobs: the fastest that fits over microbatch in
/// {1, 2, 4, 8} and virtual stages in {1, 2, 3, 4}. Returns the time and the knobs chosen.
std::pair<double, std::string> predict(const Row& row) {
  load_scenario(row.scenario);  // a bad file is the user's error, not a configuration that does not fit
  if (!row.tune) return {iteration_s(row.scenario, {}), "as published"};
  double best = std::numeric_limits<double>::quiet_NaN();
  std::string chosen;
  for (int mb : {1, 2, 4, 8})
    for (int v : {1, 2, 3, 4}) {
      const double t = iteration_s(row.scenario, {"microbatch=" + std::to_string(mb),
                                                  "parallel.virtual_stages=" + std::to_string(v),
                                                  std::string("schedule=") + (v > 1 ? "interleaved" : "1f1b")});
      if (!std::isnan(t) && (std::isnan(best) || t < best)) {
        best = t;
        chosen = fmt::format("mb {} v {}", mb, v);
      }
    }
  return {best, chosen};
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto file = std::make_shared<std::string>("scenarios/validation/published.yaml");
  auto only = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("validate", "predicted vs published iteration times, with % error");
  cmd->add_option("--rows", *file, "the rows file (scenarios/validation/published.yaml)");
  cmd->add_option("--only", *only, "row names to run (default: all)")->delimiter(',');
  cmd->callback([file, only] {
    std::vector<Row> rows = load_rows(*file);
    if (!only->empty()) {
      std::erase_if(rows, [&](const Row& r) { return std::find(only->begin(), only->end(), r.name) == only->end(); });
      if (rows.empty()) throw UserError("command line", 0, "--only", "expected row names listed in " + *file);
    }
    std::cout << fmt::format("# {:<32} {:>10} {:>10} {:>8}  {}\n", "row", "published", "predicted", "error", "knobs");
    std::cout << fmt::format("# {:<32} {:>10} {:>10} {:>8}\n", "", "(s)", "(s)", "(%)");
    double sum = 0, worst = 0;
    int counted = 0;
    for (const Row& r : rows) {
      const auto [predicted, knobs] = predict(r);
      if (std::isnan(predicted)) {
        std::cout << fmt::format("  {:<32} {:>10.2f} {:>10} {:>8}  no configuration fits\n", r.name, r.published_s, "-", "-");
        continue;
      }
      const double error = 100 * (predicted - r.published_s) / r.published_s;
      std::cout << fmt::format("  {:<32} {:>10.2f} {:>10.3f} {:>+8.1f}  {}\n", r.name, r.published_s, predicted, error, knobs);
      sum += std::abs(error);
      worst = std::max(worst, std::abs(error));
      ++counted;
    }
    std::cout << fmt::format("# mean |error| {:.1f}%, max |error| {:.1f}% over {} rows\n", counted ? sum / counted : 0.0,
                             worst, counted);
  });
}

}  // namespace clustersim::cli
