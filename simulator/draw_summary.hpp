#pragma once
// The spread of iteration times over several draws of a scenario's variability (`run --repeat`):
// a user sizing a job needs the tail, not one draw.
#include <cstdint>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

struct DrawSummary {
  std::vector<std::uint64_t> seeds;
  std::vector<Seconds> iteration_s;  // in draw order
  Seconds mean_s = 0, p50_s = 0, p99_s = 0, min_s = 0, max_s = 0;
};

/// Nearest-rank percentile (the smallest value with at least p% of the draws at or below it), so
/// every figure is an iteration time some draw gave.
Seconds nearest_rank(std::vector<Seconds> values, double percent);

DrawSummary summarize_draws(std::vector<std::uint64_t> seeds, std::vector<Seconds> iteration_s);

}  // namespace clustersim
