#pragma once
// Oversubscription per switch tier, as built: for the switches of a tier, the bandwidth their
// links carry down (to NICs, or to the tier below) over what their links carry up. 1 is
// non-blocking; 2 means two bytes can arrive from below for each that can leave upward.
#include <vector>

#include "topologies/cluster.hpp"

namespace clustersim {

struct TierOversubscription {
  int tier = 1;
  int switches = 0;
  BytesPerSecond down_Bps = 0;  // line rate per direction, summed over the tier's switches
  BytesPerSecond up_Bps = 0;    // 0 at the top tier
  /// down / up; 0 at the top tier, which has nothing above it.
  double ratio() const { return up_Bps > 0 ? down_Bps / up_Bps : 0; }
  /// The largest down / up of one switch of the tier: above ratio() where switches differ (a
  /// partly filled pod's spines have fewer leaves below them).
  double worst_switch_ratio = 0;
};

/// One entry per tier that has switches, lowest first.
std::vector<TierOversubscription> tier_oversubscription(const Cluster& cluster);

}  // namespace clustersim
