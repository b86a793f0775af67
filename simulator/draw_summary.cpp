#include "simulator/draw_summary.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clustersim {

Seconds nearest_rank(std::vector<Seconds> values, double percent) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(percent / 100 * static_cast<double>(values.size()));
  const std::size_t at = static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[at];
}

DrawSummary summarize_draws(std::vector<std::uint64_t> seeds, std::vector<Seconds> iteration_s) {
  DrawSummary out;
  out.seeds = std::move(seeds);
  out.iteration_s = std::move(iteration_s);
  if (out.iteration_s.empty()) return out;
  out.mean_s = std::accumulate(out.iteration_s.begin(), out.iteration_s.end(), 0.0) / static_cast<double>(out.iteration_s.size());
  out.p50_s = nearest_rank(out.iteration_s, 50);
  out.p99_s = nearest_rank(out.iteration_s, 99);
  out.min_s = *std::min_element(out.iteration_s.begin(), out.iteration_s.end());
  out.max_s = *std::max_element(out.iteration_s.begin(), out.iteration_s.end());
  return out;
}

}  // namespace clustersim
