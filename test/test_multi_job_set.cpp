// Several jobs: placement through --set JOB.placement, per-job stage tables, and a job's scenario
// options that have no meaning among jobs.
#include <catch2/catch.hpp>

#include <fstream>

#include "one_line_error.hpp"
#include "support.hpp"
#include "workloads/jobs.hpp"

using namespace clustersim;

namespace {

/// Two 2-GPU jobs of Megatron's 1.7B on four one-GPU nodes (two leaves of two), placed as written.
std::string jobs_file(const std::string& a, const std::string& b, const std::string& job_parallel = "{tp: 1, pp: 1, dp: 2}",
                      const std::string& job_extra = "") {
  const std::string job = test::small_megatron_scenario("multi-job-set", test::kSmallFatTreeYaml, job_parallel, job_extra);
  const std::string dir = job.substr(0, job.rfind('/'));
  std::ofstream(dir + "/jobs.yaml") << "name: two\ncluster: clusters/cluster.yaml\njobs:\n"
                                    << "  - {name: a, scenario: scenario.yaml, set: [gpus=2], placement: " << a << "}\n"
                                    << "  - {name: b, scenario: scenario.yaml, set: [gpus=2], placement: " << b << "}\n";
  return dir + "/jobs.yaml";
}

}  // namespace

TEST_CASE("run --set JOB.placement places a job as the file would") {
  const std::string path = jobs_file("contiguous", "contiguous");
  CHECK(load_jobs_scenario(path).jobs[1].nodes == std::vector<int>{2, 3});
  CHECK(load_jobs_scenario(path, {"a.placement=scattered", "b.placement=scattered"}).jobs[1].nodes ==
        load_jobs_scenario(jobs_file("scattered", "scattered")).jobs[1].nodes);
  const JobsScenario listed = load_jobs_scenario(path, {"a.placement=nodes:3,1", "b.placement=nodes:0,2"});
  CHECK(listed.jobs[0].nodes == std::vector<int>{3, 1});  // in rank order, as written
  CHECK(listed.jobs[1].nodes == std::vector<int>{0, 2});
}

TEST_CASE("bad --set JOB.placement is one line, exit 2") {
  const std::string path = jobs_file("contiguous", "contiguous");
  test::require_one_line_error(test::run_cli("run " + path + " --set a.placement=packed"), "error: command line: --set: ",
                               "expected JOB.placement=contiguous, scattered, rail-aligned or nodes:LIST");
  test::require_one_line_error(test::run_cli("run " + path + " --set a.placement=nodes:"), "error: command line: --set: ",
                               "nodes:LIST");
  test::require_one_line_error(test::run_cli("run " + path + " --set a.placement=nodes:2-1"), "error: command line: --set: ",
                               "expected a range from low to high");
  // Overlapping explicit placements, one of them from the command line: at the command line.
  test::require_one_line_error(test::run_cli("run " + path + " --set a.placement=nodes:0-1 --set b.placement=nodes:1-2"),
                               "error: command line: --set: ", "node 1 is also in");
}

TEST_CASE("run on a jobs scenario breaks each job down per stage, alone and together") {
  const nlohmann::json j = test::cli_json("run " + jobs_file("scattered", "scattered", "{tp: 1, pp: 2, dp: 1}"));
  for (const nlohmann::json& job : j["jobs"]) {
    REQUIRE(job["stages"].size() == 2);
    for (const nlohmann::json& st : job["stages"]) {
      // Sharing the fabric moves waits, never the compute.
      CHECK(st["alone_s"]["compute"] == st["together_s"]["compute"]);
      double alone = 0, together = 0;
      for (const auto& [k, v] : st["alone_s"].items()) alone += v.get<double>();
      for (const auto& [k, v] : st["together_s"].items()) together += v.get<double>();
      // A stage's parts add up to its job's iteration, alone and together.
      CHECK(alone == Approx(job["alone_s"].get<double>()).epsilon(1e-9));
      CHECK(together == Approx(job["together_s"].get<double>()).epsilon(1e-9));
    }
  }
  const auto r = test::run_cli("run " + jobs_file("scattered", "scattered", "{tp: 1, pp: 2, dp: 1}"));
  CHECK_THAT(r.stdout_text, Catch::Matchers::Contains("# stages of job a") && Catch::Matchers::Contains("# stages of job b"));
}

TEST_CASE("a job with flapping links or its own stage_gpus is one line at the job") {
  const std::string flap = jobs_file("contiguous", "contiguous", "{tp: 1, pp: 1, dp: 2}",
                                     "variability:\n  flapping_links: [{link: leaf0-spine0, down_s: 1, period_s: 60}]\n");
  const int line = test::line_of(test::read_file(flap), "name: a");
  test::require_one_line_error(test::run_cli("run " + flap), "error: " + flap + ":" + std::to_string(line) + ": jobs[0]: ",
                               "expected no variability.flapping_links in a job");
}
