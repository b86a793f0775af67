#pragma once
// Engine runs as a Slurm job array (`search --slurm DIR`). The tasks, their results and their logs
// live in one folder that every node can read and write. A rerun over the same folder submits only
// the tasks that left no result, so an interrupted search resumes from what finished.
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace clustersim {

struct SlurmArrayOptions {
  std::string dir;                         ///< the shared folder, absolute (created when missing)
  std::vector<std::string> task_command;   ///< argv of one task; sbatch appends the task's index
  std::string job_name = "clustersim";
  std::vector<std::string> sbatch_options; ///< passed to sbatch as given (--partition=..., --time=...)
  double poll_s = 1.0;                     ///< between two looks at squeue
};

/// What the folder held and what was submitted, for the user's log line.
struct SlurmArrayOutcome {
  std::vector<std::string> results;  ///< per task, its result text; empty when it left none
  long reused = 0;                   ///< results already in the folder (a resumed run)
  long submitted = 0;
  std::string job_id;                ///< empty when nothing had to be submitted
};

/// Runs the tasks 0..count-1 that have no result in `o.dir` as one job array, waits for them, and
/// returns every task's result. `manifest` describes the tasks; a folder holding another manifest is
/// refused (its results belong to another search). Slurm not reachable, or refusing the job, is a
/// UserError naming --slurm.
SlurmArrayOutcome run_slurm_array(const SlurmArrayOptions& o, const nlohmann::json& manifest, long count,
                                  const std::function<void(long done, long total)>& progress);

/// The manifest a task reads its work from (a UserError naming the folder when it cannot).
nlohmann::json read_slurm_manifest(const std::string& dir);
/// A task's result, written under a temporary name and renamed, so a result is whole or absent.
void write_slurm_result(const std::string& dir, long index, const std::string& text);

/// The 64-bit FNV-1a hash of a file's bytes, in hex: a manifest names its inputs by content, so a
/// scenario edited between two runs does not resume onto results of the old one.
std::string file_fingerprint(const std::string& path);
/// The same hash of a text.
std::string text_fingerprint(const std::string& text);

}  // namespace clustersim
