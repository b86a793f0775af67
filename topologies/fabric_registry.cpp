#include "topologies/fabric.hpp"

namespace clustersim {

const FabricBuilder& single_switch_fabric();
const FabricBuilder& fat_tree_fabric();
const FabricBuilder& rail_optimized_fabric();

std::vector<const FabricBuilder*> all_fabrics() {
  return {&single_switch_fabric(), &fat_tree_fabric(), &rail_optimized_fabric()};
}

const FabricBuilder* find_fabric(const std::string& name) {
  for (const FabricBuilder* f : all_fabrics())
    if (f->name() == name) return f;
  return nullptr;
}

std::string fabric_names() {
  std::string out;
  for (const FabricBuilder* f : all_fabrics()) out += (out.empty() ? "" : ", ") + f->name();
  return out;
}

}  // namespace clustersim
