// A rail-only fabric (Wang et al., "How to Build Low-cost Networks for Large Language Models
// (without Sacrificing Performance)", 2023): the rail-optimized fabric without the spines that join
// rails. NIC r of every node meets the others only in rail r's own switches (one switch, or a fat
// tree when the nodes outnumber a switch's ports); GPUs on different rails meet only inside a node's
// scale-up domain. LLM training moves nearly all its network bytes between same-rank GPUs of
// different nodes (data and pipeline parallel), so the paper keeps their bandwidth and drops the
// spine; traffic between rails is forwarded over NVLink to the GPU on the destination's rail first.
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

class RailOnly final : public FabricBuilder {
 public:
  std::string name() const override { return "rail_only"; }
  std::string description() const override {
    return "one switch or fat tree per rail, no spine joining rails; cross-rail traffic relays over NVLink";
  }
  void validate(const FabricSpec& f, const NodeSpec&, const YamlField& field) const override {
    reject_unused_fields(f, field, false, true);
    if (f.tiers.empty() || f.tiers.size() > 3) field.child("tiers").fail("expected 1 to 3 tiers per rail");
    check_ports(f, field);
    const TreeLayout l = tree_layout(f.nodes, f.tiers);  // one port per node on each rail
    if (!l.problem.empty()) field.child("tiers").fail("cannot build a rail: " + l.problem);
  }
  void build(Cluster& c) const override {
    const int rails = c.nics_per_node();
    for (int r = 0; r < rails; ++r) {
      std::vector<int> ports;
      for (int node = 0; node < c.nodes(); ++node) ports.push_back(c.nic_port(node * rails + r, 0));
      build_tree_over(c, ports, c.spec.fabric.tiers, "rail" + std::to_string(r) + ".");
    }
    c.rails_isolated = true;
  }
};

}  // namespace

const FabricBuilder& rail_only_fabric() {
  static RailOnly instance;
  return instance;
}

}  // namespace clustersim
