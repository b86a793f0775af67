#pragma once
// A failed link as failed_links makes it (link_faults.hpp), without the errors: for a link that
// fails only for a while (a flapping link's down state, simulator/flapping.hpp), whose flows wait
// for it where nothing else can carry them.
#include "topologies/cluster.hpp"
#include "topologies/link_faults.hpp"

namespace clustersim {

/// Takes a link out of the switches' ports if the fabric stays connected without it and returns
/// true; returns false, changing nothing, when its flows have no other path: a node's own link, or
/// a link whose loss parts two switches NICs hang from. A name that is no link is a UserError at
/// its field. (Defined in link_faults.cpp, beside the check it shares.)
bool fail_if_reroutable(Cluster& cluster, const LinkChange& change);

}  // namespace clustersim
