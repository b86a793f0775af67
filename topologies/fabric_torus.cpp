// A torus (TPU-style; Google's TPU v4 pods are 3D tori, Jouppi et al., ISCA 2023): one router per
// node, holding the node's NICs, linked to its two neighbours along each dimension, the last wrapped
// to the first. Routing is dimension-ordered: a route corrects its first coordinate, then the
// second, then the third, each the shorter way round (topologies/router.hpp).
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

class Torus final : public FabricBuilder {
 public:
  std::string name() const override { return "torus"; }
  std::string description() const override {
    return "1- to 3-D torus, a router per node with wrap-around links; dimension-ordered routing";
  }
  void validate(const FabricSpec& f, const NodeSpec&, const YamlField& field) const override {
    reject_unused_fields(f, field, false, false);
    if (f.dims.empty()) field.child("dims");  // throws "missing required field"
    if (f.dims.size() > 3) field.child("dims").fail("expected 1 to 3 dimensions, got " + std::to_string(f.dims.size()));
    long product = 1;  // at most 3 sides of at most 2^16 each (cluster_spec.cpp): no overflow
    std::string shape;
    for (int d : f.dims) {
      product *= d;
      shape += (shape.empty() ? "" : " x ") + std::to_string(d);
    }
    if (product != f.nodes)
      field.child("dims").fail("expected dimensions whose product is the node count (fabric.nodes: " +
                               std::to_string(f.nodes) + "), got " + shape + " = " + std::to_string(product));
  }
  void build(Cluster& c) const override {
    const std::vector<int>& dims = c.spec.fabric.dims;
    std::vector<int> router(static_cast<std::size_t>(c.nodes()));
    for (int node = 0; node < c.nodes(); ++node) {
      std::string name = "torus";
      for (std::size_t d = 0, rest = static_cast<std::size_t>(node); d < dims.size(); rest /= dims[d], ++d)
        name += "." + std::to_string(rest % static_cast<std::size_t>(dims[d]));
      router[static_cast<std::size_t>(node)] = c.add_switch(1, name);
      for (int nic = 0; nic < c.nics_per_node(); ++nic) c.attach_nic(node * c.nics_per_node() + nic, router[static_cast<std::size_t>(node)]);
    }
    // Dimension by dimension, so every router lists its lower dimensions' ports first: the router
    // takes the first equal-cost port, which makes routes dimension-ordered.
    for (std::size_t d = 0, stride = 1; d < dims.size(); stride *= static_cast<std::size_t>(dims[d]), ++d) {
      if (dims[d] == 1) continue;
      for (std::size_t node = 0; node < router.size(); ++node) {
        const std::size_t coord = node / stride % static_cast<std::size_t>(dims[d]);
        const std::size_t next = node + ((coord + 1) % static_cast<std::size_t>(dims[d]) - coord) * stride;
        c.connect_switches(router[node], router[next]);
      }
    }
  }
};

}  // namespace

const FabricBuilder& torus_fabric() {
  static Torus instance;
  return instance;
}

}  // namespace clustersim
