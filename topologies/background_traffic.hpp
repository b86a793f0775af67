#pragma once
// Background traffic: a fixed rate on chosen links for the whole iteration (storage reads and
// writes, another tenant's steady stream), taken off the link's capacity in each direction. A
// fixed-rate stream takes its rate whatever else runs, which a max-min competitor would not: one
// with a demand R gets less than R once the link's fair share falls below it. So a link of
// capacity C keeps C - R for the flows the engine replays, and max-min shares that.
#include <string>
#include <vector>

#include "topologies/cluster.hpp"
#include "topologies/link_faults.hpp"

namespace clustersim {

struct BackgroundTraffic {
  LinkChange link;        // the link's name and where it is written (bandwidth_fraction unused)
  BytesPerSecond rate_Bps = 0;
  std::string rate_field;  // where the rate is written, for its errors
  int rate_line = 0;
};

/// Takes each stream's rate off every link its name stands for (each direction). UserErrors: a
/// name that is no link (at the link's field); a rate at or above a link's capacity as it stands
/// (after degradations and earlier streams), which would leave its flows nothing (at the rate).
void apply_background(Cluster& cluster, const std::vector<BackgroundTraffic>& streams);

}  // namespace clustersim
