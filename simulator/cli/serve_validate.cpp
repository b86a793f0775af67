#include "simulator/cli/serve_validate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <map>

#include "simulator/serve_validation.hpp"

namespace clustersim::cli {

void print_serve_validation(const std::string& rows_file) {
  const std::vector<ServeValidationRow> rows = load_serve_validation(rows_file);
  std::cout << fmt::format("# clustersim serve --validate {}\n", rows_file);
  std::cout << fmt::format("{:<28} {:<34} {:<20} {:>12} {:>12} {:>8}\n", "set", "row", "metric", "published", "predicted", "error");
  std::map<std::string, std::pair<double, double>> sets;  // set -> (sum |error|, max |error|)
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  for (const ServeValidationRow& row : rows) {
    const ServeValidationResult r = run_serve_validation(row);
    std::cout << fmt::format("{:<28} {:<34} {:<20} {:>12.4g} {:>12.4g} {:>7.1f}%\n", row.set, row.name, row.metric, row.published,
                             r.predicted, 100 * r.error);
    if (!counts.count(row.set)) order.push_back(row.set);
    auto& [sum, max] = sets[row.set];
    sum += std::fabs(r.error);
    max = std::max(max, std::fabs(r.error));
    ++counts[row.set];
  }
  for (const std::string& set : order)
    std::cout << fmt::format("# set {}: {} rows, mean |error| {:.1f}%, max |error| {:.1f}%\n", set, counts[set],
                             100 * sets[set].first / counts[set], 100 * sets[set].second);
}

}  // namespace clustersim::cli
