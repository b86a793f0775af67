#pragma once
// `clustersim bench --fabric-only`: how fast a cluster file is built and routed, without simulating.
#include <string>

namespace clustersim::cli {

/// Builds the cluster, then routes two transfers per GPU - to the same local rank of the next node
/// (a data-parallel ring's hop) and to the next local rank of the node half the cluster away
/// (another rail, across the top tier) - and prints the build and routing wall and CPU times and
/// the process's peak memory.
void bench_fabric(const std::string& cluster_path);

}  // namespace clustersim::cli
