#pragma once
// `clustersim run` on a jobs scenario (workloads/jobs.hpp): each job's iteration alone and with
// every job sharing the fabric, and the slowdown. cmd_run.cpp hands it over once it sees `jobs:`.
#include <optional>
#include <string>
#include <vector>

#include "simulator/trace_writer.hpp"

namespace clustersim::cli {

struct JobsRunOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string json, csv, solver;
  std::string trace;  // --trace: the jobs together
  std::string report, topology_level;  // --report: each job alone and together
  std::optional<std::string> trace_ranks;  // its GPUs by cluster-wide id; none: each job's first GPU per rank
  bool allow_oom = false;
  /// Options of a single-job run given on the command line, which a jobs run refuses.
  std::vector<std::string> single_job_options;
};

void run_jobs_scenario(const JobsRunOptions& o);

/// --trace-ranks: "0-7,64", each GPU from 0 to gpus - 1 (a job's, or the cluster's under jobs:).
GpuSelection parse_ranks(const std::string& text, int gpus);

}  // namespace clustersim::cli
