#pragma once
// Small clusters, as YAML text, that whole-cluster tests share: two or four DGX A100 nodes on the
// shipped fabrics, cut down so that every GPU's traffic can be replayed in a test.
#include <string>
#include <vector>

#include "collectives/flow.hpp"
#include "topologies/cluster.hpp"

namespace clustersim::test {

/// Two DGX A100 nodes on two leaves of a 2-tier fat tree whose leaves have 8 down ports and
/// 8 / oversubscription up ports.
std::string two_leaf_fat_tree(int oversubscription);

/// Four DGX A100 nodes on the shipped fat tree, rail-optimized SuperPOD and one switch.
std::string fat_tree_four_nodes();
std::string rail_optimized_four_nodes();
std::string single_switch_four_nodes();

/// The closed form of flows that start together under max-min where the flows of the busiest link
/// share it equally and no other link holds them back (each NIC, say, carries one flow a
/// direction): every flow pays its latency, then that link drains last at its bandwidth, so they
/// take the largest latency + max over links of bytes / bandwidth.
Seconds bottleneck_s(const Cluster& cluster, const std::vector<Flow>& flows);

}  // namespace clustersim::test
