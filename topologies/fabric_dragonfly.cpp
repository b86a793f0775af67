// A dragonfly (Kim, Dally, Scott and Abts, ISCA 2008): groups of routers joined all-to-all inside a
// group by local links, and groups joined all-to-all by global links, each router holding
// `global_links` of them. Nodes fill routers in order. Minimal routing takes the one global link
// between two groups: local, global, local (four routers at most; Router::dragonfly_waypoints).
#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {
namespace {

constexpr long kMaxDragonflyLinks = 1L << 24;

class Dragonfly final : public FabricBuilder {
 public:
  std::string name() const override { return "dragonfly"; }
  std::string description() const override {
    return "groups of all-to-all routers, groups joined all-to-all by global links; minimal routing";
  }
  void validate(const FabricSpec& f, const NodeSpec&, const YamlField& field) const override {
    reject_unused_fields(f, field, false, false);
    for (const char* key : {"groups", "routers_per_group", "global_links"}) field.child(key);  // required
    // Each group needs a global link to each other group.
    if (f.groups - 1 > static_cast<long>(f.routers_per_group) * f.global_links)
      field.child("groups").fail("expected at most routers_per_group x global_links + 1 = " +
                                 std::to_string(static_cast<long>(f.routers_per_group) * f.global_links + 1) +
                                 " groups, got " + std::to_string(f.groups));
    // Links grow as a^2 per group and groups^2: bound them as the GPU count bounds everything else.
    const long links = static_cast<long>(f.groups) * f.routers_per_group * (f.routers_per_group - 1) / 2 +
                       static_cast<long>(f.groups) * (f.groups - 1) / 2;
    if (links > kMaxDragonflyLinks)
      field.child("routers_per_group").fail("expected at most " + std::to_string(kMaxDragonflyLinks) +
                                            " router links in all (groups x a(a-1)/2 + groups(groups-1)/2), got " +
                                            std::to_string(links));
    const long routers = static_cast<long>(f.groups) * f.routers_per_group;
    if (f.nodes % routers != 0)
      field.child("nodes").fail("expected a node count that fills the " + std::to_string(routers) +
                                " routers (groups x routers_per_group) evenly, got " + std::to_string(f.nodes));
  }
  void build(Cluster& c) const override {
    const FabricSpec& f = c.spec.fabric;
    const int a = f.routers_per_group, h = f.global_links;
    auto router = [&](int group, int r) { return group * a + r; };  // switch index: routers come first
    for (int g = 0; g < f.groups; ++g)
      for (int r = 0; r < a; ++r) c.add_switch(1, "group" + std::to_string(g) + ".router" + std::to_string(r));
    const int per_router = c.nodes() / (f.groups * a);
    for (int node = 0; node < c.nodes(); ++node)
      for (int nic = 0; nic < c.nics_per_node(); ++nic) c.attach_nic(node * c.nics_per_node() + nic, node / per_router);
    for (int g = 0; g < f.groups; ++g)
      for (int r = 0; r < a; ++r)
        for (int s = r + 1; s < a; ++s) c.connect_switches(router(g, r), router(g, s));
    // Group g's link to group t leaves from router j / h, j being t's place among the other groups.
    for (int g = 0; g < f.groups; ++g)
      for (int t = g + 1; t < f.groups; ++t) c.connect_switches(router(g, (t - 1) / h), router(t, g / h));
  }
};

}  // namespace

const FabricBuilder& dragonfly_fabric() {
  static Dragonfly instance;
  return instance;
}

}  // namespace clustersim
