#include "topologies/tier_oversubscription.hpp"

#include <algorithm>
#include <map>

namespace clustersim {

std::vector<TierOversubscription> tier_oversubscription(const Cluster& c) {
  // Each switch's bandwidth down and up; a NIC's port feeds its switch from below.
  std::vector<BytesPerSecond> down(c.switches.size(), 0), up(c.switches.size(), 0);
  for (std::size_t s = 0; s < c.switches.size(); ++s)
    for (const SwitchPort& p : c.switches[s].ports)
      (c.switches[static_cast<std::size_t>(p.peer_switch)].tier > c.switches[s].tier ? up : down)[s] +=
          c.links[static_cast<std::size_t>(p.link)].bandwidth_Bps;
  for (std::size_t nic = 0; nic < c.nic_port_link.size() && nic < c.nic_switch.size(); ++nic)
    if (c.nic_switch[nic] >= 0)
      down[static_cast<std::size_t>(c.nic_switch[nic])] += c.links[static_cast<std::size_t>(c.nic_port_link[nic])].bandwidth_Bps;
  std::map<int, TierOversubscription> tiers;
  for (std::size_t s = 0; s < c.switches.size(); ++s) {
    TierOversubscription& t = tiers[c.switches[s].tier];
    t.tier = c.switches[s].tier;
    ++t.switches;
    t.down_Bps += down[s];
    t.up_Bps += up[s];
    if (up[s] > 0) t.worst_switch_ratio = std::max(t.worst_switch_ratio, down[s] / up[s]);
  }
  std::vector<TierOversubscription> out;
  for (const auto& [tier, t] : tiers) out.push_back(t);
  return out;
}

}  // namespace clustersim
