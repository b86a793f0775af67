#pragma once
// A jobs scenario: several training jobs placed on one cluster, sharing its fabric, and background
// traffic on chosen links. Each job is a scenario (a file, with `set:` overrides, or its fields
// written inline) run on the jobs scenario's cluster, on nodes its placement gives it
// (job_placement.hpp). Everything is checked here, before anything is simulated.
#include <string>
#include <vector>

#include "topologies/background_traffic.hpp"
#include "workloads/job_placement.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

struct JobSpec {
  std::string name;
  ScenarioSpec scenario;  // on the jobs scenario's cluster
  JobPlacement placement;
  std::vector<int> nodes;  // where it runs, in rank order (its GPUs: every GPU of these nodes, in order)
};

struct JobsScenario {
  std::string file;
  std::string name;
  std::string cluster_file;
  std::vector<JobSpec> jobs;
  std::vector<BackgroundTraffic> background;
  /// Iterations each job runs back to back in the run together (`iterations:`, default 1): jobs of
  /// different step times drift out of phase, so their meetings on the fabric change from one
  /// iteration to the next; together is reported over iterations 2 onwards.
  int iterations = 1;
};

/// Whether the file is a jobs scenario (it has `jobs:`); false for anything else, which
/// load_scenario then reads (and reports on).
bool is_jobs_scenario(const std::string& path);

/// Reads a jobs scenario. `overrides` are the command line's --set: "cluster.PATH=VALUE" for the
/// cluster, "JOB.FIELD=VALUE" for a field of the job named JOB. UserErrors (file:line: field):
/// a job without name or with one used twice, a job scenario that does not load (its own error),
/// a job naming a cluster of its own, an unknown placement, placements that do not fit
/// (place_jobs), background on a link the cluster lacks or at a rate outside (0, capacity).
JobsScenario load_jobs_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

/// The cluster the jobs share, as built: the jobs' link degradations and failures, then background
/// traffic, applied.
Cluster shared_cluster(const JobsScenario& js);

}  // namespace clustersim
