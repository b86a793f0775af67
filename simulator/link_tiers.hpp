#pragma once
// How busy each tier of the fabric was over an iteration: the bytes every link direction carried
// (FabricEngine::record_link_bytes) summed per tier, over what the tier could have carried in the
// iteration's time. A tier is the pair of vertex kinds a link joins (GPU - NVSwitch, GPU - NIC,
// NIC - leaf, leaf - spine, ...) and its link type.
#include <string>
#include <vector>

#include "topologies/cluster.hpp"

namespace clustersim {

struct LinkTierLoad {
  std::string tier;       // e.g. "NIC - leaf"
  std::string link_type;  // the cluster file's type, e.g. "ndr"
  int links = 0;          // full-duplex links of the tier
  double bytes = 0;       // carried, both directions
  /// bytes / (both directions' calibrated bandwidth x links x iteration): the tier's mean, 0 to 1.
  double mean_utilization = 0;
  /// The busiest direction of one link: its bytes / (bandwidth x iteration).
  double busiest_utilization = 0;
};

/// One row per tier, in the order the cluster's links first name them (scale-up first).
/// `bytes_per_direction` is in LinkDir order; empty gives every tier at 0.
std::vector<LinkTierLoad> link_tier_loads(const Cluster& cluster, const std::vector<double>& bytes_per_direction,
                                          Seconds iteration_s);

/// The tier of one link, by the kinds (and switch tiers) of its two ends.
std::string link_tier_name(const Cluster& cluster, LinkId link);

}  // namespace clustersim
