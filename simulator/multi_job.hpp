#pragma once
// Several jobs on one cluster: every job's iteration flow graph on one engine at once, sharing
// the fabric's links by max-min, beside each job alone on the same cluster in the same place. The
// difference is what the jobs cost each other (background traffic is the cluster's and is in both).
#include <string>
#include <vector>

#include "simulator/engine.hpp"
#include "simulator/iteration.hpp"
#include "simulator/trace_sink.hpp"
#include "simulator/training_run.hpp"
#include "workloads/jobs.hpp"

namespace clustersim {

struct JobOutcome {
  std::string name;
  int gpus = 0;
  std::vector<int> nodes;
  RunReport alone;     // the job by itself on the cluster, on the same nodes
  RunReport together;  // with every job of the scenario running at once: iteration_s the steady
                       // state's (the mean past the first iteration), the breakdown the last's
  std::vector<Seconds> together_iterations_s;  // each iteration's time together, in order
  double slowdown() const { return together.iteration_s / alone.iteration_s - 1; }
};

/// Every replica of every job is simulated (FoldMode::none): a fold proven on one job's traffic
/// says nothing of the others' on its links. A TP group that spans nodes runs in place together,
/// since other jobs may load the fabric links it crosses. Memory beyond a GPU's HBM is an
/// OutOfMemoryError at the job's scenario unless allow_oom. `traces`, when given, holds one sink
/// per job, which receives that job's trace of the run together (job_trace.hpp shares one file).
/// `link_tiers` sums each link tier's bytes: a job's own alone, every job's together.
std::vector<JobOutcome> run_jobs(const JobsScenario& js, Solver solver = Solver::fluid, bool allow_oom = false,
                                 const std::vector<TraceSink*>& traces = {}, bool link_tiers = false);

}  // namespace clustersim
