#pragma once
// The sweep itself, apart from its options and output: each cluster point written as a cluster
// file, loaded as the scenario's cluster, priced, screened and its best configurations verified.
// `clustersim sweep` and `clustersim bench --sweep` both run it.
#include <string>
#include <vector>

#include "simulator/cli/sweep_output.hpp"
#include "simulator/price_catalog.hpp"

namespace clustersim::cli {

struct SweepRequest {
  std::string scenario;
  std::vector<std::string> overrides;          // the user's --set lines
  std::vector<SweepDimension> dimensions;
  std::vector<std::string> vary;                // search's dimensions
  int top = 5, jobs = 2;
  std::string keep_clusters;                    // where the point files stay ("": a temporary folder)
  bool progress = false;                        // bars on stderr (a terminal only)
  std::string slurm;                            // --slurm DIR: every point's verifications as one job array
  std::vector<std::string> sbatch;              // --sbatch options
  bool quiet = false;                           // no "slurm: ... reused" line
};

/// Every point in order, Pareto front marked. A point the loader rejects, or with no valid
/// configuration, is a UserError on --vary-cluster naming the point. With `slurm`, each point's
/// cluster file is also written into that folder, named by its content (`cluster-<FNV-1a>.yaml`:
/// two sweeps' files never overwrite each other's), and the verifications of every point run as
/// one job array, so a rerun resumes the whole sweep from what finished.
std::vector<SweepRow> run_sweep(const SweepRequest& request, const ScenarioSpec& base, const PriceCatalog& catalog);

}  // namespace clustersim::cli
