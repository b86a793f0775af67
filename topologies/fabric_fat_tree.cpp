// A 2- or 3-tier fat-tree (folded Clos): NIC ports fill leaves in port order (node by node), as in a
// cabling plan without rails. A node's NICs may straddle two leaves when a leaf's down ports are not
// a multiple of the NICs per node.
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

class FatTree final : public FabricBuilder {
 public:
  std::string name() const override { return "fat_tree"; }
  std::string description() const override { return "2- or 3-tier folded Clos, NICs fill leaves in node order"; }
  void validate(const FabricSpec& f, const NodeSpec& n, const YamlField& field) const override {
    reject_unused_fields(f, field, false, true);
    if (f.tiers.size() != 2 && f.tiers.size() != 3) field.child("tiers").fail("expected 2 or 3 tiers");
    check_ports(f, field);
    const TreeLayout l = tree_layout(static_cast<long>(f.nodes) * n.nics, f.tiers);
    if (!l.problem.empty()) field.child("tiers").fail("cannot build: " + l.problem);
  }
  void build(Cluster& c) const override {
    std::vector<int> ports(c.nic_vertex.size());
    for (std::size_t nic = 0; nic < ports.size(); ++nic) ports[nic] = c.nic_port(static_cast<int>(nic), 0);
    build_tree_over(c, ports, c.spec.fabric.tiers, "");
  }
};

}  // namespace

const FabricBuilder& fat_tree_fabric() {
  static FatTree instance;
  return instance;
}

}  // namespace clustersim
