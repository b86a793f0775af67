#pragma once
// Where each job of a shared cluster runs: whole nodes, so every job keeps its GPUs' NVLink and
// its NICs' rails to itself, and only the fabric above the NICs is shared. A placement is a policy
// or an explicit node list; placed in file order, explicit lists first since they are fixed.
#include <string>
#include <vector>

#include "topologies/cluster.hpp"
#include "workloads/iteration_plan.hpp"

namespace clustersim {

/// contiguous: the lowest run of consecutive free nodes (a scheduler's block allocation);
/// scattered: free nodes at an even stride over all free ones (a busy cluster's fragments);
/// rail_aligned: whole leaf (or rail) groups, the nodes whose first NIC hangs off one switch, none
/// of it used yet, so the job shares no leaf with jobs placed before it; nodes: as listed, in order.
enum class PlacementPolicy { contiguous, scattered, rail_aligned, nodes };
const char* to_string(PlacementPolicy p);

struct JobPlacement {
  PlacementPolicy policy = PlacementPolicy::contiguous;
  std::vector<int> nodes;  // PlacementPolicy::nodes: as written
  int nodes_needed = 1;    // the job's GPUs over the node's, rounded up
  // where the placement is written, for its errors
  std::string file;
  int line = 0;
  std::string field;
};

/// Each job's nodes, in rank order. UserErrors: jobs needing more nodes together than the cluster
/// has (at `jobs_field`); an explicit list shorter than its job, naming a node twice, a node the
/// cluster lacks, or a node of another explicit list; a policy that finds too few free nodes.
std::vector<std::vector<int>> place_jobs(const Cluster& cluster, const std::vector<JobPlacement>& jobs,
                                         const std::string& file, int jobs_line, const std::string& jobs_field);

/// Moves a plan made over GPUs 0 .. n-1 onto `nodes`: local GPU g runs on node nodes[g / per node],
/// same local index, so each node's GPUs keep their NVLink and NICs.
void place_plan(IterationPlan& plan, const std::vector<int>& nodes, int gpus_per_node);

}  // namespace clustersim
