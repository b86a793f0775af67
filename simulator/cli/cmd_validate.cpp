// `clustersim validate`: predicted against published iteration times, row by row, with the errors.
// Each simulation runs in its own child process (SimGrid holds one platform per process).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>

#include "simulator/cli/commands.hpp"
#include "simulator/training_run.hpp"
#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

struct Row {
  std::string name;
  std::string scenario;  // resolved path
  double published_s = 0;
  std::string source;
};

std::vector<Row> load_rows(const std::string& path) {
  const YamlField root = YamlField::load_file(path, "--rows");
  root.expect_keys({"rows"});
  const YamlField rows = root.child("rows");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<Row> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const YamlField r = rows.element(i);
    r.expect_keys({"name", "scenario", "published_iter_s", "source"});
    const YamlField scenario = r.child("scenario");
    const std::string resolved = (dir / scenario.as_string()).string();
    if (auto why = input_file_problem(resolved)) scenario.fail("cannot open '" + resolved + "' (" + *why + ")");
    out.push_back({r.child("name").as_string(), resolved, r.child("published_iter_s").as_number_in(1e-6, 1e9, "s"),
                   r.child("source").as_string()});
  }
  return out;
}

/// A row's predicted iteration time, simulated in a child process; NaN when the scenario does not
/// fit in memory. Any other error in the row's files is the user's, reported as such (exit 2).
double predict(const Row& row) {
  load_scenario(row.scenario);
  const std::string text = run_in_child([&] {
    try {
      return fmt::format("{:.17g}", run_training(load_scenario(row.scenario), false).iteration_s);
    } catch (const OutOfMemoryError&) {
      return std::string("nan");
    } catch (const UserError& e) {
      return fmt::format("error\n{}\n{}\n{}\n{}", e.file(), e.line(), e.field_path(), e.expected());
    }
  });
  if (text.rfind("error\n", 0) == 0) {
    std::istringstream in(text.substr(6));
    std::string file, line, field, expected;
    std::getline(in, file);
    std::getline(in, line);
    std::getline(in, field);
    std::getline(in, expected, '\0');
    throw UserError(file, std::stoi(line), field, expected);
  }
  return text == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::stod(text);
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
    std::cout << fmt::format("# {:<32} {:>10} {:>10} {:>8}\n", "row", "published", "predicted", "error");
    std::cout << fmt::format("# {:<32} {:>10} {:>10} {:>8}\n", "", "(s)", "(s)", "(%)");
    double sum = 0, worst = 0;
    int counted = 0;
    for (const Row& r : rows) {
      const double predicted = predict(r);
      if (std::isnan(predicted)) {
        std::cout << fmt::format("  {:<32} {:>10.2f} {:>10} {:>8}  does not fit in memory\n", r.name, r.published_s, "-", "-");
        continue;
      }
      const double error = 100 * (predicted - r.published_s) / r.published_s;
      std::cout << fmt::format("  {:<32} {:>10.2f} {:>10.3f} {:>+8.1f}\n", r.name, r.published_s, predicted, error);
      sum += std::abs(error);
      worst = std::max(worst, std::abs(error));
      ++counted;
    }
    std::cout << fmt::format("# mean |error| {:.1f}%, max |error| {:.1f}% over {} rows\n", counted ? sum / counted : 0.0,
                             worst, counted);
  });
}

}  // namespace clustersim::cli
