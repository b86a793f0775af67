#include "collectives/trees.hpp"

#include <algorithm>
#include <cstddef>

namespace clustersim {

std::vector<int> nccl_btree(int n) {
  std::vector<int> parents(static_cast<std::size_t>(n), -1);
  for (int node = 1; node < n; ++node) {
    const int low = node & -node;
    const int up = (node & ~low) | (low << 1);
    parents[static_cast<std::size_t>(node)] = up < n ? up : node & ~low;
  }
  return parents;
}

std::vector<int> nccl_second_tree(const std::vector<int>& first) {
  const int n = static_cast<int>(first.size());
  auto plays = [n](int node) { return n % 2 == 0 ? n - 1 - node : (node - 1 + n) % n; };
  auto played_by = [n](int role) { return n % 2 == 0 ? n - 1 - role : (role + 1) % n; };
  std::vector<int> parents(first.size(), -1);
  for (int node = 0; node < n; ++node) {
    const int role_parent = first[static_cast<std::size_t>(plays(node))];
    parents[static_cast<std::size_t>(node)] = role_parent < 0 ? -1 : played_by(role_parent);
  }
  return parents;
}

int tree_depth(const std::vector<int>& parents) {
  int deepest = 0;
  for (std::size_t i = 0; i < parents.size(); ++i) {
    int d = 0;
    for (int at = static_cast<int>(i); parents[static_cast<std::size_t>(at)] >= 0; at = parents[static_cast<std::size_t>(at)]) ++d;
    deepest = std::max(deepest, d);
  }
  return deepest;
}

}  // namespace clustersim
