#pragma once
// Whether one kind of collective (every TP group's, say) may be timed alone on an empty fabric and
// its time reused for every group: only where nothing else can meet it. That holds when (1) no
// link any group uses carries another group's flows of that kind, (2) no link any group uses
// carries any other traffic of the job (pipeline transfers, gradient collectives, syncs), and (3)
// every group's flows are an image of the group whose alone time it reuses (same count, sizes, latencies and link
// capacities, in order), so the one time measured is every group's. Max-min then gives each group
// alone exactly the rates it gets with everything running. Where it does not hold, the iteration
// runs that kind in place, as flows among the rest.
#include <string>
#include <vector>

#include "simulator/fold.hpp"
#include "topologies/cluster.hpp"

namespace clustersim {

struct Isolation {
  bool isolated = true;
  int shared_links = 0;  // link directions its groups share with other traffic or with each other
  std::string why;       // the first such link and what else crosses it; empty when isolated
};

/// `groups`: every group's flows of one kind; `timed_as[g]`: the group whose alone time group g
/// reuses; `others`: the links of every other flow of the job.
Isolation check_isolation(const Cluster& cluster, const std::vector<std::vector<OwnFlow>>& groups,
                          const std::vector<std::size_t>& timed_as, const std::vector<const std::vector<LinkDir>*>& others);

}  // namespace clustersim
