#pragma once
// Engine verifications as one Slurm job array, shared by `search --slurm` and `sweep --slurm`
// (simulator/slurm_array.hpp runs the array): the manifest naming each task's work, the hidden
// `clustersim search-task DIR INDEX` each task runs, and the rows read back from the results.
#include <string>
#include <vector>

#include "simulator/cli/search_verify.hpp"

namespace CLI {
class App;
}

namespace clustersim::cli {

/// --slurm DIR and --sbatch OPTION as given; checked before any screen, so a typo costs nothing:
/// --sbatch without --slurm, or a folder that cannot be created and written, is a UserError.
void check_slurm_options(const std::string& slurm, const std::vector<std::string>& sbatch);

struct SlurmVerification {
  std::string dir;                  ///< --slurm DIR, as given
  std::string scenario;             ///< the scenario file, as given
  std::string kind;                 ///< "search" or "sweep": the manifest's and the job's name
  std::vector<std::string> sbatch;  ///< --sbatch options
  bool quiet = false;               ///< no "slurm: ... reused" line on stderr
};

/// Runs each task (the scenario with its --set lines, `tasks[i]`, the work of `screens[i]`) as one
/// task of a job array over `job.dir`; a rerun over the same folder reuses every result there. The
/// manifest names the scenario by content, and every task's --set lines, so a folder of other work
/// is refused rather than resumed onto. Rows in input order; a task that left no result is a row
/// saying where its log is.
std::vector<Verified> verify_on_slurm(const SlurmVerification& job, const std::vector<std::vector<std::string>>& tasks,
                                      const std::vector<ScreenPrediction>& screens, Progress& bar);

/// `clustersim search-task DIR INDEX`, hidden from --help: what one task of the array runs.
void add_search_task_command(CLI::App& app);

}  // namespace clustersim::cli
