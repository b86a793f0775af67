#pragma once
// The cluster points `clustersim sweep` visits: dimensions named on the command line
// (`--vary-cluster nic_Gbps=200,400`), their Cartesian product, and each point's cluster file, the
// scenario's cluster with the point's values written in and its node count sized to the job.
// A point is a cluster file rather than a list of `--set cluster.` overrides because a dimension can
// change lists (which GPU each NIC sits next to) and the whole file (`cluster=`); written out, each
// point can be rerun alone: `clustersim search SCENARIO --set cluster=POINT.yaml`.
#include <string>
#include <utility>
#include <vector>

namespace clustersim {

/// What --vary-cluster may name: cluster, gpu, gpus_per_node, nics_per_node, nic_Gbps, fabric,
/// rails, oversubscription.N, radix.N and switches.N (N: the tier, 1 for the leaves; switches.2 is
/// the spine count per pod, switches.3 the cores per plane).
const std::vector<std::string>& sweep_dimension_names();

struct SweepDimension {
  std::string name;
  std::vector<std::string> values;
};

/// "NAME=V1,V2,...": a UserError on "command line", --vary-cluster, for an unknown name, no value,
/// or a value given twice.
SweepDimension parse_sweep_dimension(const std::string& text);

/// One value per dimension, in the order the dimensions were given.
struct ClusterPoint {
  std::vector<std::pair<std::string, std::string>> values;
  /// "nic_Gbps=200 oversubscription.1=2" ("scenario's cluster" with no dimension).
  std::string text() const;
};

/// Every combination, the last dimension varying fastest.
std::vector<ClusterPoint> sweep_points(const std::vector<SweepDimension>& dimensions);

/// The point's cluster file as YAML text: `base_cluster_file` (or the point's `cluster`) with its
/// values applied, and fabric.nodes the fewest whose GPUs hold `job_gpus` (fabrics whose node
/// count is their shape's, torus and dragonfly, keep theirs). A value the cluster loader would
/// reject is left for it to reject, with the generated file's line; a dimension that cannot apply to
/// the file (a tier it lacks, a count that is not a number) is a UserError on --vary-cluster.
std::string point_cluster_yaml(const std::string& base_cluster_file, const ClusterPoint& point, int job_gpus);

}  // namespace clustersim
