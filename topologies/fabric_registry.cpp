#include "topologies/fabric.hpp"

namespace clustersim {

const FabricBuilder& single_switch_fabric();
const FabricBuilder& fat_tree_fabric();
const FabricBuilder& rail_optimized_fabric();
const FabricBuilder& rail_only_fabric();
const FabricBuilder& multi_plane_fabric();
const FabricBuilder& torus_fabric();
const FabricBuilder& dragonfly_fabric();

std::vector<const FabricBuilder*> all_fabrics() {
  return {&single_switch_fabric(), &fat_tree_fabric(), &rail_optimized_fabric(), &rail_only_fabric(),
          &multi_plane_fabric(), &torus_fabric(), &dragonfly_fabric()};
}

const FabricBuilder* find_fabric(const std::string& name) {
  for (const FabricBuilder* f : all_fabrics())
    if (f->name() == name) return f;
  return nullptr;
}

void reject_unused_fields(const FabricSpec& fabric, const YamlField& field, bool uses_units, bool uses_tiers) {
  if (!uses_units && fabric.nodes_per_unit > 0)
    field.child("nodes_per_unit").fail("expected no nodes_per_unit: only rail_optimized fabrics have scalable units");
  if (!uses_tiers && !fabric.tiers.empty()) field.child("tiers").fail("expected no tiers for a " + fabric.type + " fabric");
}

std::string fabric_names() {
  std::string out;
  for (const FabricBuilder* f : all_fabrics()) out += (out.empty() ? "" : ", ") + f->name();
  return out;
}

}  // namespace clustersim
