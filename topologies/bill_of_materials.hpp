#pragma once
// What a built fabric is made of, per tier, for pricing it: switches (and their radix), cables and
// the optics at their ends. Counted on the graph the fabric builder made, so every registered
// fabric has one without a counting rule of its own. Tier 1 is the NIC-to-leaf level, tier 2
// leaf-to-spine, tier 3 spine-to-core (a link belongs to the tier of its upper end).
#include <map>

#include "topologies/cluster.hpp"

namespace clustersim {

struct TierBill {
  int switches = 0;      // switches of this tier
  int radix = 0;         // ports per switch, as the cluster file asks (0 where the fabric has no tiers)
  int ports_used = 0;    // the most ports in use on one switch of the tier (links up, down and to NICs)
  int cables = 0;        // links whose upper end is a switch of this tier
  BytesPerSecond port_Bps = 0;  // line rate of those links, per direction
};

/// Switches of `ports` ports each that a tier's switches amount to: ceil(ports used / ports) per
/// switch, so a director-class switch is priced as the fixed switches its used ports need (the
/// 98K cluster's radix-384 cores), and a fixed switch as one.
long switch_units(const TierBill& tier, int ports);

struct BillOfMaterials {
  int nodes = 0;
  int gpus = 0;
  int nics = 0;                   // NIC ports on the fabric (a multi-port NIC counts once per port)
  std::map<int, TierBill> tiers;  // by tier: 1 leaf, 2 spine, 3 core
  int switches() const;
  int cables() const;
  /// One transceiver per cable end: every fabric cable is optical (the SuperPOD's are, NIC to leaf
  /// included); a twin-port transceiver serving two switch ports counts as two ends.
  int optics() const { return 2 * cables(); }
};

BillOfMaterials bill_of_materials(const Cluster& cluster);

}  // namespace clustersim
