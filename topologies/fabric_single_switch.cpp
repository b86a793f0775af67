// Every NIC on one switch: the idealised fabric of closed-form tests and small clusters.
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

class SingleSwitch final : public FabricBuilder {
 public:
  std::string name() const override { return "single_switch"; }
  std::string description() const override { return "every NIC on one non-blocking switch"; }
  void validate(const FabricSpec& fabric, const NodeSpec&, const YamlField& field) const override {
    reject_unused_fields(fabric, field, false, false);
  }
  void build(Cluster& c) const override {
    int sw = c.add_switch(1, "switch0");
    for (std::size_t nic = 0; nic < c.nic_vertex.size(); ++nic) c.attach_nic(static_cast<int>(nic), sw);
  }
};

}  // namespace

const FabricBuilder& single_switch_fabric() {
  static SingleSwitch instance;
  return instance;
}

}  // namespace clustersim
