// search --slurm against a real single-machine Slurm (slurmctld, slurmd and munged that
// test/slurm/start-slurm.sh starts as a ctest fixture): the verifications run as a job array and give
// the rows local processes give, and a rerun over the same folder submits only what left no result.
// Without slurm-wlm the fixture leaves no slurm.conf and the tests say they skip.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "one_line_error.hpp"
#include "slurm_fixture.hpp"
#include "support.hpp"

namespace {

using clustersim::test::CliResult;
using clustersim::test::run_cli;

using clustersim::test::slurm_available;

std::string fresh_folder(const std::string& tag) { return clustersim::test::fresh_slurm_folder(tag); }

const std::string kSearch = "search " + clustersim::test::source_path("scenarios/validation/narayanan-1.7b.yaml") +
                            " --vary pp,microbatch --top 4 --json -";

}  // namespace

TEST_CASE("search --slurm: a job array gives the rows local processes give, and a rerun resumes from what finished") {
  if (!slurm_available()) return;
  const std::string dir = fresh_folder("resume");
  const CliResult local = run_cli(kSearch + " -j 2 -q");
  REQUIRE(local.exit_code == 0);

  const CliResult first = run_cli(kSearch + " --slurm " + dir);
  INFO(first.stderr_text);
  REQUIRE(first.exit_code == 0);
  CHECK(first.stdout_text == local.stdout_text);  // the same document, byte for byte
  CHECK_THAT(first.stderr_text, Catch::Matchers::Contains("slurm: 0 of 4 verifications reused") &&
                                    Catch::Matchers::Contains("; 4 submitted as job "));
  for (int i = 0; i < 4; ++i) CHECK(std::filesystem::exists(dir + "/result-" + std::to_string(i) + ".json"));

  // An interrupted search: one task's result is missing. Only that task goes to Slurm again.
  std::filesystem::remove(dir + "/result-2.json");
  const CliResult resumed = run_cli(kSearch + " --slurm " + dir);
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.stdout_text == local.stdout_text);
  CHECK_THAT(resumed.stderr_text, Catch::Matchers::Contains("slurm: 3 of 4 verifications reused") &&
                                      Catch::Matchers::Contains("; 1 submitted as job "));

  // Everything finished: nothing is submitted at all.
  const CliResult done = run_cli(kSearch + " --slurm " + dir);
  REQUIRE(done.exit_code == 0);
  CHECK(done.stdout_text == local.stdout_text);
  CHECK_THAT(done.stderr_text, Catch::Matchers::Contains("slurm: 4 of 4 verifications reused") &&
                                   Catch::Matchers::Contains("; 0 submitted\n"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("search --slurm: a folder holding another search is refused, not resumed onto") {
  if (!slurm_available()) return;
  const std::string dir = fresh_folder("other");
  REQUIRE(run_cli(kSearch + " --slurm " + dir + " -q").exit_code == 0);
  // Top 3 is another set of tasks: its results must not be taken from this folder.
  const std::string other = "search " + clustersim::test::source_path("scenarios/validation/narayanan-1.7b.yaml") +
                            " --vary pp,microbatch --top 3 -q --slurm " + dir;
  clustersim::test::require_one_line_error(run_cli(other), "error: command line: --slurm: ", "holds the tasks of another search");
  std::filesystem::remove_all(dir);
}

TEST_CASE("search --slurm: Slurm refusing the job array, or not installed, is one line naming --slurm") {
  if (!slurm_available()) return;
  const std::string refused = fresh_folder("refused"), missing_dir = fresh_folder("missing");
  clustersim::test::require_one_line_error(run_cli(kSearch + " -q --slurm " + refused + " --sbatch=--no-such-option"),
                                           "error: command line: --slurm: ", "Slurm did not take the job array: ");
  // No sbatch on PATH: clustersim itself is named by its absolute path, so only sbatch goes missing.
  const std::string path = std::getenv("PATH");
  setenv("PATH", "/nonexistent", 1);
  const CliResult missing = run_cli(kSearch + " -q --slurm " + missing_dir);
  setenv("PATH", path.c_str(), 1);
  clustersim::test::require_one_line_error(missing, "error: command line: --slurm: ",
                                           "Slurm is not reachable: sbatch was not found on PATH");
  std::filesystem::remove_all(refused);
  std::filesystem::remove_all(missing_dir);
}

TEST_CASE("search --slurm: a folder that cannot be written and --sbatch without --slurm are refused before screening") {
  clustersim::test::require_one_line_error(run_cli(kSearch + " -q --slurm /proc/clustersim"), "error: command line: --slurm: ",
                                           "expected a folder that can be created and written");
  clustersim::test::require_one_line_error(run_cli(kSearch + " -q --sbatch=--partition=x"), "error: command line: --sbatch: ",
                                           "expected --slurm DIR beside it");
}
