// A jobs scenario's bad input: one line naming file:line: field, exit 2, before anything runs.
#include <catch2/catch.hpp>

#include <fstream>

#include "one_line_error.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

/// A folder with a 4-node cluster of one-GPU nodes (two leaves of two), a 2-GPU job scenario, and
/// `jobs` as jobs.yaml after the name and cluster lines. Returns jobs.yaml's path.
std::string jobs_file(const std::string& jobs) {
  const std::string job = test::small_megatron_scenario("multi-job-bad", test::kSmallFatTreeYaml, "{tp: 1, pp: 1, dp: 2}");
  const std::string dir = job.substr(0, job.rfind('/'));
  std::ofstream(dir + "/jobs.yaml") << "name: bad\ncluster: clusters/cluster.yaml\n" << jobs;
  return dir + "/jobs.yaml";
}

const std::string kJob = "scenario: scenario.yaml, set: [gpus=2]";

void expect_error(const std::string& jobs, const std::string& needle, const std::string& field, const std::string& expected,
                  const std::string& options = "") {
  const std::string path = jobs_file(jobs);
  const int line = test::line_of(test::read_file(path), needle);
  test::require_one_line_error(test::run_cli("run " + path + options), "error: " + path + ":" + std::to_string(line) + ": " + field + ":",
                               expected);
}

}  // namespace

TEST_CASE("a job larger than its explicit placement is one line at the placement") {
  expect_error("jobs:\n  - {name: a, " + kJob + ", placement: {nodes: [3]}}\n", "nodes: [3]", "jobs[0].placement",
               "expected at least 2 nodes for the job's GPUs, got 1");
}

TEST_CASE("overlapping explicit placements are one line at the second") {
  expect_error("jobs:\n  - {name: a, " + kJob + ", placement: {nodes: [0, 1]}}\n"
               "  - {name: b, " + kJob + ", placement: {nodes: [1, 2]}}\n",
               "nodes: [1, 2]", "jobs[1].placement", "node 1 is also in jobs[0].placement");
}

TEST_CASE("jobs that together need more nodes than the cluster has are one line at jobs") {
  expect_error("jobs:\n  - {name: a, " + kJob + "}\n  - {name: b, " + kJob + "}\n  - {name: c, " + kJob + "}\n", "jobs:",
               "jobs", "expected jobs that fit the cluster's 4 nodes together; they need 6");
}

TEST_CASE("a policy that finds too few free nodes is one line at its placement") {
  // Scattered a takes nodes 0 and 2: no two consecutive nodes are left for contiguous b.
  expect_error("jobs:\n  - {name: a, " + kJob + ", placement: scattered}\n  - {name: b, " + kJob + ", placement: contiguous}\n",
               "placement: contiguous", "jobs[1].placement", "expected 2 consecutive free nodes for contiguous");
}

TEST_CASE("an unknown placement, a duplicate job name and a job's own cluster are one line each") {
  expect_error("jobs:\n  - {name: a, " + kJob + ", placement: packed}\n", "packed", "jobs[0].placement", "expected one of");
  expect_error("jobs:\n  - {name: a, " + kJob + "}\n  - {name: a, scenario: scenario.yaml}\n", "name: a, scenario: scenario.yaml}",
               "jobs[1].name", "expected a name no other job has");
  expect_error("jobs:\n  - {name: a, " + kJob + ", cluster: x.yaml}\n", "cluster: x.yaml", "jobs[0].cluster",
               "expected no cluster of the job's own");
}

TEST_CASE("a bad entry of a job's set: is one line at that entry") {
  expect_error("jobs:\n  - name: a\n    scenario: scenario.yaml\n    set:\n      - gpus=2\n      - parallel.nope=3\n",
               "parallel.nope=3", "jobs[0].set[1]", "unknown scenario field 'parallel.nope'");
}

TEST_CASE("background on a link the cluster lacks is one line at its link") {
  expect_error("jobs:\n  - {name: a, " + kJob + "}\nbackground:\n  - {link: leaf0-spine9, rate_GBps: 1}\n", "leaf0-spine9",
               "background[0].link", "expected a link of the cluster named A-B");
}

TEST_CASE("a negative or over-capacity background rate is one line at its rate") {
  expect_error("jobs:\n  - {name: a, " + kJob + "}\nbackground:\n  - {link: leaf0-spine0, rate_GBps: -1}\n", "rate_GBps: -1",
               "background[0].rate_GBps", "expected a number from 0 to");
  // The small fat tree's fabric links run at 400 Gb/s x 0.5: 25 GB/s.
  expect_error("jobs:\n  - {name: a, " + kJob + "}\nbackground:\n  - {link: leaf0-spine0, rate_GBps: 25}\n", "rate_GBps: 25",
               "background[0].rate_GBps", "expected a rate below the 25.000 GB/s that leaf0-spine0 carries, got 25.000 GB/s");
}

TEST_CASE("a single-job option on a jobs scenario is one line naming it") {
  const std::string path = jobs_file("jobs:\n  - {name: a, " + kJob + "}\n");
  test::require_one_line_error(test::run_cli("run " + path + " --fold exact"), "error: command line: --fold:",
                               "expected a single-job scenario for this option");
  test::require_one_line_error(test::run_cli("run " + path + " --set c.gpus=2"), "error: command line: --set:",
                               "expected cluster.FIELD=VALUE, JOB.FIELD=VALUE");
}

TEST_CASE("a jobs run's trace and report options are checked before it runs, one line each") {
  const std::string path = jobs_file("jobs:\n  - {name: a, " + kJob + "}\n");
  const std::string nowhere = "/nonexistent-clustersim-dir/out";
  test::require_one_line_error(test::run_cli("run " + path + " --report " + nowhere + ".html"),
                               "error: " + nowhere + ".html: --report:", "does not exist");
  test::require_one_line_error(test::run_cli("run " + path + " --trace " + nowhere + ".json"),
                               "error: " + nowhere + ".json: --trace:", "does not exist");
  test::require_one_line_error(test::run_cli("run " + path + " --topology-level leaf"), "error: command line: --topology-level:",
                               "expected --report as well");
  test::require_one_line_error(test::run_cli("run " + path + " --report /tmp/x.html --topology-level rack"),
                               "error: command line: --topology-level:", "expected node, leaf or spine, got 'rack'");
}

TEST_CASE("a job's set: entry for the shared cluster is one line at that entry") {
  expect_error("jobs:\n  - name: a\n    scenario: scenario.yaml\n    set:\n      - gpus=2\n      - cluster.fabric.nodes=8\n",
               "cluster.fabric.nodes=8", "jobs[0].set[1]", "expected a field of the job's scenario: the jobs share the cluster");
}

TEST_CASE("jobs whose calibrations give the shared links different efficiencies are one line at the second job") {
  const std::string path = jobs_file("jobs:\n  - {name: a, " + kJob + "}\n"
                                     "  - {name: b, scenario: scenario.yaml, set: [gpus=2, calibration=cal.yaml]}\n");
  const std::string dir = path.substr(0, path.rfind('/'));
  std::ofstream(dir + "/cal.yaml") << "name: cal\nfitted_on: small-fat-tree\nlink_types:\n"
                                      "  net: {bandwidth_efficiency: 0.9, source: \"test\"}\n";
  const int line = test::line_of(test::read_file(path), "{name: b,");
  test::require_one_line_error(test::run_cli("run " + path), "error: " + path + ":" + std::to_string(line) + ": jobs[1]:",
                               "expected the links calibrated as for job a (the jobs share them); link type net");
}

TEST_CASE("iterations outside 1-100, written or set, is one line at the field") {
  expect_error("iterations: 0\njobs:\n  - {name: a, " + kJob + "}\n", "iterations: 0", "iterations", "expected an integer from 1 to 100");
  expect_error("iterations: many\njobs:\n  - {name: a, " + kJob + "}\n", "iterations: many", "iterations",
               "expected an integer, got 'many'");
  const std::string path = jobs_file("jobs:\n  - {name: a, " + kJob + "}\n");
  const test::CliResult r = test::run_cli("run " + path + " --set iterations=101");
  test::require_one_line_error(r, "error: " + path, "iterations: expected an integer from 1 to 100");
}
