#pragma once
// `clustersim bench --search`: how fast search's analytic screen goes over a scenario's whole space.
#include <string>
#include <vector>

namespace clustersim::cli {

/// Screens every configuration of each scenario (every --vary dimension) `repeat` times, each in a
/// fresh Screen (its per-layer caches empty), and prints the median wall and CPU time and the
/// configurations per second of one core (by CPU time).
void bench_search(const std::vector<std::string>& scenarios, long repeat);

}  // namespace clustersim::cli
