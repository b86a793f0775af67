// A rail-optimized fabric (NVIDIA SuperPOD): nodes come in scalable units; NIC i of every node of a
// unit goes to the unit's leaf i, so same-rail traffic is one switch hop. Spines join all leaves
// (2 tiers), or each unit has its own spines and a core tier joins the units (3 tiers).
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

int units_of(const FabricSpec& f) { return (f.nodes + f.nodes_per_unit - 1) / f.nodes_per_unit; }

/// With a core tier a pod is one scalable unit; without one, every leaf is in one pod.
std::pair<int, int> pods_and_size(const FabricSpec& f, const NodeSpec& n) {
  const int units = units_of(f);
  if (f.tiers.size() == 3) return {units, n.nics};
  return {1, units * n.nics};
}

class RailOptimized final : public FabricBuilder {
 public:
  std::string name() const override { return "rail_optimized"; }
  std::string description() const override {
    return "scalable units with one leaf per rail, spines above, optional core tier";
  }
  void validate(const FabricSpec& f, const NodeSpec& n, const YamlField& field) const override {
    if (f.nodes_per_unit <= 0) field.child("nodes_per_unit");  // throws "missing required field"
    if (f.tiers.size() != 2 && f.tiers.size() != 3) field.child("tiers").fail("expected 2 or 3 tiers");
    check_ports(f, field);
    if (f.nodes_per_unit > split_ports(f.tiers[0]).down)
      field.child("nodes_per_unit").fail("expected at most the leaf's " + std::to_string(split_ports(f.tiers[0]).down) +
                                         " down ports");
    auto [pods, size] = pods_and_size(f, n);
    const ClosShape shape = clos_shape(pods, size, f.tiers);
    if (!shape.problem.empty()) field.child("tiers").fail("cannot build: " + shape.problem);
  }
  void build(Cluster& c) const override {
    const FabricSpec& f = c.spec.fabric;
    const int rails = c.nics_per_node();
    const int units = units_of(f);
    std::vector<std::vector<int>> pods(f.tiers.size() == 3 ? units : 1);
    std::vector<int> leaf;  // [unit * rails + rail]
    for (int u = 0; u < units; ++u)
      for (int r = 0; r < rails; ++r) {
        leaf.push_back(c.add_switch(1, "su" + std::to_string(u) + ".leaf" + std::to_string(r)));
        pods[f.tiers.size() == 3 ? u : 0].push_back(leaf.back());
      }
    for (int node = 0; node < f.nodes; ++node)
      for (int r = 0; r < rails; ++r) c.attach_nic(node * rails + r, leaf[(node / f.nodes_per_unit) * rails + r]);
    build_clos_above(c, pods, f.tiers);
  }
};

}  // namespace

const FabricBuilder& rail_optimized_fabric() {
  static RailOptimized instance;
  return instance;
}

}  // namespace clustersim
