#pragma once
// `clustersim bench --sweep`: how long a small sweep takes end to end (four cluster points: NIC
// speed x leaf oversubscription; search over pp and microbatch, the best 2 verified on the engine, 2 at a time).
#include <string>

namespace clustersim::cli {

/// Runs the sweep `repeat` times and prints the median wall time, its points and what each cost.
void bench_sweep(const std::string& scenario, long repeat);

}  // namespace clustersim::cli
