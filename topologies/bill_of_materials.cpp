#include "topologies/bill_of_materials.hpp"

#include <algorithm>

namespace clustersim {

int BillOfMaterials::switches() const {
  int n = 0;
  for (const auto& [tier, bill] : tiers) n += bill.switches;
  return n;
}

int BillOfMaterials::cables() const {
  int n = 0;
  for (const auto& [tier, bill] : tiers) n += bill.cables;
  return n;
}

long switch_units(const TierBill& tier, int ports) {
  return static_cast<long>(tier.switches) * std::max(1, (tier.ports_used + ports - 1) / ports);
}

BillOfMaterials bill_of_materials(const Cluster& c) {
  BillOfMaterials bom;
  bom.nodes = c.nodes();
  bom.gpus = c.gpu_count();
  bom.nics = static_cast<int>(c.nic_port_link.size());
  const std::vector<TierSpec>& specs = c.spec.fabric.tiers;
  std::vector<int> nic_ports_on(c.switches.size(), 0);
  for (int sw : c.nic_switch)
    if (sw >= 0) ++nic_ports_on[static_cast<std::size_t>(sw)];
  for (std::size_t i = 0; i < c.switches.size(); ++i) {
    const Switch& s = c.switches[i];
    TierBill& t = bom.tiers[s.tier];
    ++t.switches;
    if (s.tier >= 1 && s.tier <= static_cast<int>(specs.size())) t.radix = specs[s.tier - 1].radix;
    t.ports_used = std::max(t.ports_used, static_cast<int>(s.ports.size()) + nic_ports_on[i]);
  }
  // A NIC port's link reaches a leaf; a switch-to-switch link belongs to its upper end's tier.
  for (LinkId l : c.nic_port_link) {
    TierBill& t = bom.tiers[1];
    ++t.cables;
    t.port_Bps = std::max(t.port_Bps, c.links[l].bandwidth_Bps);
  }
  for (const Switch& s : c.switches)
    for (const SwitchPort& p : s.ports) {
      const int upper = std::max(s.tier, c.switches[p.peer_switch].tier);
      // Each link is seen from both ends; count it from its upper end (from the lower one when
      // both are in one tier, as a dragonfly's or torus's links are: then the lower index).
      const bool mine = s.tier == upper && (c.switches[p.peer_switch].tier != upper || c.switches[p.peer_switch].vertex > s.vertex);
      if (!mine) continue;
      TierBill& t = bom.tiers[upper];
      ++t.cables;
      t.port_Bps = std::max(t.port_Bps, c.links[p.link].bandwidth_Bps);
    }
  return bom;
}

}  // namespace clustersim
