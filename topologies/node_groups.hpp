#pragma once
// A heterogeneous cluster's `node_groups:` (optional): nodes holding another GPU model than the
// cluster's `gpu:`, e.g. H200 nodes beside H100 ones. Every node no group names holds the cluster's
// GPU. The models are names here; the GPU catalog that knows them is the scenario's, so workloads/
// checks them (workloads/stage_gpus.hpp). The graph is the same for every node: a group shares the
// cluster's node design.
#include <string>
#include <vector>

#include "topologies/yaml_reader.hpp"

namespace clustersim {

struct NodeGroup {
  std::string gpu;          // a GPU of the catalog
  std::vector<int> nodes;   // node ids, ascending, no two groups sharing one
};

/// Reads `node_groups:` against a cluster of `nodes` nodes whose own GPU is `cluster_gpu`.
/// UserErrors at the field: not a list, a node id outside the cluster, a range written downwards,
/// a node in two groups, a group of the cluster's own GPU.
std::vector<NodeGroup> read_node_groups(const YamlField& f, const std::string& cluster_gpu, int nodes);

/// The GPU model of node `n`: its group's, else `cluster_gpu`.
const std::string& gpu_of_node(const std::vector<NodeGroup>& groups, const std::string& cluster_gpu, int n);

}  // namespace clustersim
