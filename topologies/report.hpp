#pragma once
// What a built cluster contains, as one printable value: vertex, switch and link counts, and the
// bisection bandwidth. The graph as pictures (DOT, GraphML, SVG) is topology_picture.hpp's.
#include <map>
#include <string>

#include "topologies/cluster.hpp"

namespace clustersim {

struct TopologyReport {
  int gpus = 0;
  int nodes = 0;
  int nvswitches = 0;
  int nics = 0;
  std::map<int, int> switches_per_tier;  // tier (1 leaf, 2 spine, 3 core) -> switches
  int links = 0;
  std::map<std::string, int> links_per_type;  // link type name -> links
  /// Max flow, at line rate, from every GPU of nodes [0, n/2) to every GPU of nodes [n/2, n): the
  /// bisection for the natural node-order split only, not the minimum over all splits. It is 0
  /// for a single node.
  BytesPerSecond bisection_Bps = 0;
  int bisection_half_nodes = 0;  // n/2: the first half, the smaller one when n is odd
  /// bisection_Bps over the GPUs of the smaller half; 0 for a single node.
  BytesPerSecond bisection_per_gpu_Bps = 0;

  int switches(int tier) const;
  int switch_count() const;
};

/// Counts only; bisection fields stay 0. Cheap at any size.
TopologyReport count_topology(const Cluster& cluster);
/// Counts plus the bisection (a max flow over the whole graph).
TopologyReport report_topology(const Cluster& cluster);
/// The bisection for the node-order split, in bytes/s, as in TopologyReport::bisection_Bps.
BytesPerSecond bisection_bandwidth_Bps(const Cluster& cluster);

}  // namespace clustersim
