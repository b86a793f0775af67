// A 2- or 3-tier fat-tree (folded Clos): NIC ports fill leaves in port order (node by node), as in a
// cabling plan without rails. A node's NICs may straddle two leaves when a leaf's down ports are not
// a multiple of the NICs per node.
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

struct Layout {
  int leaves = 0;
  int leaves_per_pod = 0;
  int pods = 0;
};

Layout layout(const FabricSpec& f, const NodeSpec& n) {
  Layout l;
  const int down = split_ports(f.tiers[0]).down;
  const long ports = static_cast<long>(f.nodes) * n.nics;
  l.leaves = static_cast<int>((ports + down - 1) / down);
  // In a 3-tier tree a pod holds as many leaves as a spine has down ports.
  l.leaves_per_pod = f.tiers.size() == 3 ? split_ports(f.tiers[1]).down : l.leaves;
  if (l.leaves_per_pod < 1) l.leaves_per_pod = 1;
  l.pods = (l.leaves + l.leaves_per_pod - 1) / l.leaves_per_pod;
  if (l.pods == 1) l.leaves_per_pod = l.leaves;
  return l;
}

class FatTree final : public FabricBuilder {
 public:
  std::string name() const override { return "fat_tree"; }
  std::string description() const override { return "2- or 3-tier folded Clos, NICs fill leaves in node order"; }
  void validate(const FabricSpec& f, const NodeSpec& n, const YamlField& field) const override {
    reject_unused_fields(f, field, false, true);
    if (f.tiers.size() != 2 && f.tiers.size() != 3) field.child("tiers").fail("expected 2 or 3 tiers");
    check_ports(f, field);
    const Layout l = layout(f, n);
    std::vector<TierSpec> tiers = f.tiers;
    if (l.pods == 1 && tiers.size() == 3) tiers.pop_back();  // one pod needs no core
    const ClosShape shape = clos_shape(l.pods, l.leaves_per_pod, tiers);
    if (!shape.problem.empty()) field.child("tiers").fail("cannot build: " + shape.problem);
  }
  void build(Cluster& c) const override {
    const FabricSpec& f = c.spec.fabric;
    const Layout l = layout(f, c.spec.node);
    const int down = split_ports(f.tiers[0]).down;
    std::vector<std::vector<int>> pods(l.pods);
    std::vector<int> leaves;
    for (int i = 0; i < l.leaves; ++i) {
      leaves.push_back(c.add_switch(1, "leaf" + std::to_string(i)));
      pods[i / l.leaves_per_pod].push_back(leaves.back());
    }
    for (std::size_t nic = 0; nic < c.nic_vertex.size(); ++nic) c.attach_nic(static_cast<int>(nic), leaves[nic / down]);
    std::vector<TierSpec> tiers = f.tiers;
    if (l.pods == 1 && tiers.size() == 3) tiers.pop_back();
    build_clos_above(c, pods, tiers);
  }
};

}  // namespace

const FabricBuilder& fat_tree_fabric() {
  static FatTree instance;
  return instance;
}

}  // namespace clustersim
