// A multi-plane fabric: every NIC has several ports (node.nics.ports) and port k goes to plane
// k mod planes, each plane a fat tree of its own switches over its ports in node order. Planes share
// no switch, so a flow stays in the plane its hash picks (topologies/router.hpp); a plane failing
// or saturating leaves the others. Dual-plane, dual-ToR designs (Alibaba HPN, SIGCOMM 2024) and
// NVIDIA's multi-plane ConnectX-8 / Spectrum-X fabrics are this shape with two or four planes.
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

class MultiPlane final : public FabricBuilder {
 public:
  std::string name() const override { return "multi_plane"; }
  std::string description() const override {
    return "NIC ports split over planes, each plane its own 1- to 3-tier fat tree; a flow's hash picks its plane";
  }
  bool wires_planes() const override { return true; }
  void validate(const FabricSpec& f, const NodeSpec& n, const YamlField& field) const override {
    reject_unused_fields(f, field, false, true);
    if (f.planes == 0) field.child("planes");  // throws "missing required field"
    if (n.nic_ports % f.planes != 0)
      field.child("planes").fail("expected a plane count that divides the NIC's ports (node.nics.ports: " +
                                 std::to_string(n.nic_ports) + "), got " + std::to_string(f.planes));
    if (f.tiers.empty() || f.tiers.size() > 3) field.child("tiers").fail("expected 1 to 3 tiers per plane");
    check_ports(f, field);
    const long ports_per_plane = static_cast<long>(f.nodes) * n.nics * (n.nic_ports / f.planes);
    const TreeLayout l = tree_layout(ports_per_plane, f.tiers);
    if (!l.problem.empty()) field.child("tiers").fail("cannot build a plane: " + l.problem);
  }
  void build(Cluster& c) const override {
    const int planes = c.spec.fabric.planes;
    for (int plane = 0; plane < planes; ++plane) {
      std::vector<int> ports;
      for (int nic = 0; nic < c.nic_count(); ++nic)
        for (int port = plane; port < c.ports_per_nic(); port += planes) ports.push_back(c.nic_port(nic, port));
      build_tree_over(c, ports, c.spec.fabric.tiers, "plane" + std::to_string(plane) + ".");
    }
  }
};

}  // namespace

const FabricBuilder& multi_plane_fabric() {
  static MultiPlane instance;
  return instance;
}

}  // namespace clustersim
