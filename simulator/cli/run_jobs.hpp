#pragma once
// `clustersim run` on a jobs scenario (workloads/jobs.hpp): each job's iteration alone and with
// every job sharing the fabric, and the slowdown. cmd_run.cpp hands it over once it sees `jobs:`.
#include <string>
#include <vector>

namespace clustersim::cli {

struct JobsRunOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string json, csv, solver;
  bool allow_oom = false;
  /// Options of a single-job run given on the command line, which a jobs run refuses.
  std::vector<std::string> single_job_options;
};

void run_jobs_scenario(const JobsRunOptions& o);

}  // namespace clustersim::cli
