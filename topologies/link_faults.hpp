#pragma once
// Links that do not run as built: degraded (a fraction of their bandwidth, a bad cable or a
// port negotiated down) or failed (down). A degraded link keeps carrying what ECMP hashes onto
// it, slower, so max-min slows exactly the flows on it; a failed link between two switches is
// taken out of the switches' ports, so the router's distances and equal-cost next hops never see
// it: its flows hash over the remaining equal-cost paths.
#include <string>
#include <vector>

#include "topologies/cluster.hpp"

namespace clustersim {

/// One link named in a scenario: "leaf0-spine1" joins two vertex names (either order, as
/// `clustersim topology --dot` names them); "leaf0-spine1#2" picks the third of parallel links
/// between them, without it every one. `file`, `line` and `field` are where it is written.
struct LinkChange {
  std::string name;
  double bandwidth_fraction = 1;  // (0, 1]; ignored when failed
  bool failed = false;
  std::string file;
  int line = 0;
  std::string field;
};

/// The links a name stands for; a name that is no link of the cluster is a UserError at the
/// change's field.
std::vector<LinkId> links_named(const Cluster& cluster, const LinkChange& change);

/// Applies every change to the cluster, before its router and engine are made. UserErrors (at
/// the change's field): an unknown name; a failed link that is not between two fabric switches
/// (a NIC's or a node's own link down cuts its GPU off: not a rerouting); failures that leave a
/// NIC's switch unable to reach another's.
void apply_link_changes(Cluster& cluster, const std::vector<LinkChange>& changes);

}  // namespace clustersim
