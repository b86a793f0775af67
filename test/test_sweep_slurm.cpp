// sweep --slurm against the real single-machine Slurm of test/slurm/start-slurm.sh (the ctest fixture
// test_search_slurm uses): every point's verifications run as one job array and give the points
// local processes give, a rerun over the same folder submits only what left no result, and a
// folder holding another sweep is refused.
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

// Two points (HDR 200G and NDR 400G NICs), the best 2 configurations over pp of each: 4 tasks.
const std::string kSweep = "sweep " + clustersim::test::source_path("scenarios/validation/narayanan-1.7b.yaml") +
                           " --vary pp --top 2 --vary-cluster nic_Gbps=200,400 --json -";

}  // namespace

TEST_CASE("sweep --slurm: one job array gives the points local processes give, and a rerun resumes from what finished") {
  if (!clustersim::test::slurm_available()) return;
  const std::string dir = clustersim::test::fresh_slurm_folder("sweep");
  const CliResult local = run_cli(kSweep + " -j 2 -q");
  REQUIRE(local.exit_code == 0);

  const CliResult first = run_cli(kSweep + " --slurm " + dir);
  INFO(first.stderr_text);
  REQUIRE(first.exit_code == 0);
  CHECK(first.stdout_text == local.stdout_text);  // the same document, byte for byte
  CHECK_THAT(first.stderr_text, Catch::Matchers::Contains("slurm: 0 of 4 verifications reused") &&
                                    Catch::Matchers::Contains("; 4 submitted as job "));
  // Each point's cluster file sits in the shared folder, named by its content.
  int cluster_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    cluster_files += entry.path().filename().string().rfind("cluster-", 0) == 0;
  CHECK(cluster_files == 2);

  // An interrupted sweep: the second point's first task left no result. Only it goes to Slurm again.
  std::filesystem::remove(dir + "/result-2.json");
  const CliResult resumed = run_cli(kSweep + " --slurm " + dir);
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.stdout_text == local.stdout_text);
  CHECK_THAT(resumed.stderr_text, Catch::Matchers::Contains("slurm: 3 of 4 verifications reused") &&
                                      Catch::Matchers::Contains("; 1 submitted as job "));

  // Another sweep (a third point) over the same folder is refused: its tasks are other work.
  clustersim::test::require_one_line_error(
      run_cli("sweep " + clustersim::test::source_path("scenarios/validation/narayanan-1.7b.yaml") +
              " --vary pp --top 2 --vary-cluster nic_Gbps=100,200,400 -q --slurm " + dir),
      "error: command line: --slurm: ", "holds the tasks of another search");
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep --slurm: Slurm not reachable, a folder that cannot be written and --sbatch without --slurm are one line") {
  // No sbatch on PATH (clustersim itself is named by its absolute path): no test Slurm needed.
  const std::string dir = clustersim::test::fresh_slurm_folder("sweep-missing");
  const std::string path = std::getenv("PATH");
  setenv("PATH", "/nonexistent", 1);
  const CliResult missing = run_cli(kSweep + " -q --slurm " + dir);
  setenv("PATH", path.c_str(), 1);
  clustersim::test::require_one_line_error(missing, "error: command line: --slurm: ",
                                           "Slurm is not reachable: sbatch was not found on PATH");
  std::filesystem::remove_all(dir);
  // Both before any point is screened.
  clustersim::test::require_one_line_error(run_cli(kSweep + " -q --slurm /proc/clustersim"), "error: command line: --slurm: ",
                                           "expected a folder that can be created and written");
  clustersim::test::require_one_line_error(run_cli(kSweep + " -q --sbatch=--partition=x"), "error: command line: --sbatch: ",
                                           "expected --slurm DIR beside it");
}
