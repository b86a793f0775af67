#pragma once
// Small clusters, as YAML text, that whole-cluster tests share: two or four DGX A100 nodes on the
// shipped fabrics, cut down so that every GPU's traffic can be replayed in a test.
#include <string>
#include <vector>

#include "collectives/flow.hpp"
#include "simulator/engine.hpp"
#include "topologies/cluster.hpp"
#include "topologies/router.hpp"

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

/// Two DGX A100 nodes under 4:1 leaves (eight NICs, two uplinks each way), routed and simulated.
struct FourToOneLeaves {
  Cluster cluster;
  Router router;
  FabricEngine engine;
  FourToOneLeaves();
  /// The all-to-all `bytes` (bytes[i][j] from the pair's i-th GPU to its j-th) within each pair of
  /// `pairs`, all at once, in closed form: each NIC carries one flow a direction, so the busiest
  /// uplink sets it (bottleneck_s).
  Seconds exchange_s(const std::vector<std::vector<double>>& bytes, const std::vector<std::pair<int, int>>& pairs) const;
};

/// run's and compare's whole-cluster placement option `option` (--tp-collectives, --cp-exchanges, ...) on
/// `scenario`: a word other than auto, alone or in-place is an error, and so is any of them under the
/// default fold (assume), which times `what` ("EP all-to-alls") alone; both exit 2 naming the option.
void check_placement_option_errors(const std::string& scenario, const std::string& option, const std::string& what);

}  // namespace clustersim::test
