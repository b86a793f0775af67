// A fat tree over any list of NIC ports: the fat_tree fabric over all of them, rail_only per rail,
// multi_plane per plane.
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {

TreeLayout tree_layout(long ports, const std::vector<TierSpec>& tiers) {
  TreeLayout l;
  l.tiers = tiers;
  if (tiers.size() == 1) {  // one switch takes every port
    l.leaves = l.leaves_per_pod = l.pods = 1;
    if (ports > tiers[0].radix)
      l.problem = "a single-tier tree takes at most its radix (" + std::to_string(tiers[0].radix) + ") ports, got " +
                  std::to_string(ports) + "; add a tier";
    return l;
  }
  const int down = split_ports(tiers[0]).down;
  if (down < 1) {
    l.problem = "leaf radix and oversubscription leave no down ports";
    return l;
  }
  l.leaves = static_cast<int>((ports + down - 1) / down);
  // In a 3-tier tree a pod holds as many leaves as a spine has down ports.
  l.leaves_per_pod = tiers.size() == 3 ? split_ports(tiers[1]).down : l.leaves;
  if (l.leaves_per_pod < 1) l.leaves_per_pod = 1;
  l.pods = (l.leaves + l.leaves_per_pod - 1) / l.leaves_per_pod;
  if (l.pods == 1) l.leaves_per_pod = l.leaves;
  if (l.pods == 1 && l.tiers.size() == 3) l.tiers.pop_back();  // one pod needs no core
  l.problem = clos_shape(l.pods, l.leaves_per_pod, l.tiers).problem;
  return l;
}

void build_tree_over(Cluster& c, const std::vector<int>& ports, const std::vector<TierSpec>& tiers,
                     const std::string& prefix) {
  const TreeLayout l = tree_layout(static_cast<long>(ports.size()), tiers);
  const int down = tiers.size() == 1 ? tiers[0].radix : split_ports(tiers[0]).down;
  std::vector<std::vector<int>> pods(static_cast<std::size_t>(l.pods));
  std::vector<int> leaves;
  for (int i = 0; i < l.leaves; ++i) {
    leaves.push_back(c.add_switch(1, prefix + (tiers.size() == 1 ? "switch" : "leaf" + std::to_string(i))));
    pods[static_cast<std::size_t>(i / l.leaves_per_pod)].push_back(leaves.back());
  }
  for (std::size_t i = 0; i < ports.size(); ++i) c.attach_nic_port(ports[i], leaves[i / static_cast<std::size_t>(down)]);
  if (l.tiers.size() > 1) build_clos_above(c, pods, l.tiers, prefix);
}

}  // namespace clustersim
