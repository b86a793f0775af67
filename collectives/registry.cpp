#include "collectives/collective.hpp"

namespace clustersim {

const Algorithm& ring_algorithm();
const Algorithm& tree_algorithm();
const Algorithm& direct_algorithm();
const Algorithm& pxn_algorithm();
const Algorithm& nvls_algorithm();
const Algorithm& nvls_tree_algorithm();
const Algorithm& pat_algorithm();
const Algorithm& recursive_doubling_algorithm();
const Algorithm& halving_doubling_algorithm();
const Algorithm& hierarchical_algorithm();
const Algorithm& deepep_algorithm();
const Algorithm& collnet_direct_algorithm();
const Algorithm& collnet_chain_algorithm();

std::vector<const Algorithm*> all_algorithms() {
  return {&ring_algorithm(),          &tree_algorithm(),     &direct_algorithm(),
          &pxn_algorithm(),           &nvls_algorithm(),     &nvls_tree_algorithm(),
          &pat_algorithm(),           &halving_doubling_algorithm(), &recursive_doubling_algorithm(),
          &hierarchical_algorithm(),   &deepep_algorithm(),   &collnet_direct_algorithm(),
          &collnet_chain_algorithm()};
}

const Algorithm* find_algorithm(const std::string& name) {
  for (const Algorithm* a : all_algorithms())
    if (a->name() == name) return a;
  return nullptr;
}

std::string algorithm_names() {
  std::string out;
  for (const Algorithm* a : all_algorithms()) out += (out.empty() ? "" : ", ") + a->name();
  return out;
}

}  // namespace clustersim
