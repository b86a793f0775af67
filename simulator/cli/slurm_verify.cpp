#include "simulator/cli/slurm_verify.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "simulator/cli/commands.hpp"
#include "simulator/slurm_array.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

std::string absolute(const std::string& path) { return std::filesystem::absolute(path).lexically_normal().string(); }

}  // namespace

void check_slurm_options(const std::string& slurm, const std::vector<std::string>& sbatch) {
  if (!sbatch.empty() && slurm.empty())
    throw UserError("command line", 0, "--sbatch", "expected --slurm DIR beside it (sbatch options are for the job array)");
  if (slurm.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(slurm, ec);
  if (ec || access(slurm.c_str(), W_OK | X_OK) != 0)
    throw UserError("command line", 0, "--slurm", "expected a folder that can be created and written; got " + slurm);
}

std::vector<Verified> verify_on_slurm(const SlurmVerification& job, const std::vector<std::vector<std::string>>& tasks,
                                      const std::vector<ScreenPrediction>& screens, Progress& bar) {
  const std::string dir = absolute(job.dir), scenario = absolute(job.scenario);
  // The manifest names the work by content, so a rerun resumes only onto results of the same work.
  nlohmann::json manifest = {{"kind", "clustersim " + job.kind + " verifications"}, {"clustersim_version", kVersion},
                             {"scenario", scenario},
                             {"scenario_fnv1a", file_fingerprint(scenario)},
                             {"tasks", tasks}};
  SlurmArrayOptions array;
  array.dir = dir;
  array.task_command = {std::filesystem::read_symlink("/proc/self/exe").string(), "search-task", dir};
  array.job_name = "clustersim-" + job.kind;
  array.sbatch_options = job.sbatch;
  const long count = static_cast<long>(tasks.size());
  const SlurmArrayOutcome done = run_slurm_array(array, manifest, count, [&](long d, long t) { bar.update(d, t); });
  if (!job.quiet)
    std::cerr << fmt::format("slurm: {} of {} verifications reused from {}; {} submitted{}\n", done.reused, count, dir,
                             done.submitted, done.job_id.empty() ? "" : " as job " + done.job_id);
  std::vector<Verified> out;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    out.push_back(verified_from(screens[i], done.results[i], fmt::format("Slurm task {} left no result (see {}/log-{}.txt)", i, dir, i)));
  return out;
}

void add_search_task_command(CLI::App& app) {
  auto args = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* cmd = app.add_subcommand("search-task", "one verification of a search --slurm or sweep --slurm job array (Slurm runs it)");
  cmd->group("");  // not for users: left out of --help
  cmd->add_option("dir", args->first, "the job array's folder")->required();
  cmd->add_option("index", args->second, "the task's index")->required();
  cmd->callback([args] {
    const std::string& dir = args->first;
    const nlohmann::json manifest = read_slurm_manifest(dir);
    std::string scenario;
    std::vector<std::string> overrides;
    long index = 0;
    try {
      const nlohmann::json& tasks = manifest.at("tasks");
      index = parse_integer(args->second, "index", 0, static_cast<long>(tasks.size()) - 1);
      scenario = manifest.at("scenario").get<std::string>();
      overrides = tasks.at(static_cast<std::size_t>(index)).get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception&) {
      throw UserError(dir + "/manifest.json", 0, "tasks", "expected the manifest search --slurm or sweep --slurm wrote");
    }
    write_slurm_result(dir, index, verify_one(scenario, overrides));
  });
}

}  // namespace clustersim::cli
