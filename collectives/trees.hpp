#pragma once
// NCCL's double binary tree over nodes (src/graph/trees.cc, ncclGetBtree and ncclGetDtree, NCCL
// 2.x), shared by `tree` and `nvls_tree`: parents per node, the root (node 0) has -1.
#include <vector>

namespace clustersim {

/// The first tree: a node's parent clears its lowest set bit b and sets the bit above it (the node
/// b away on the side of that bit), or, when that node does not exist, just clears b.
std::vector<int> nccl_btree(int n);

/// The second tree: `first` relabelled so that node i takes the place of node n-1-i (n even) or of
/// node i-1 (n odd), so that the first tree's leaves are the second's inner nodes.
std::vector<int> nccl_second_tree(const std::vector<int>& first);

/// The longest path from a node to the root (the same for both trees: one relabels the other).
int tree_depth(const std::vector<int>& parents);

}  // namespace clustersim
