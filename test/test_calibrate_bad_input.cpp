// Bad calibration input, through the real binary: a calibration file for an unknown GPU or link
// type or with a row that has no source, nccl-tests output that cannot be read, a bad --iteration.
// Each is one line `file:line: field: what was expected` on stderr, exit status 2, nothing on stdout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "simulator/calibration_fit.hpp"
#include "one_line_error.hpp"
#include "support.hpp"

namespace {

using clustersim::test::CliResult;
using clustersim::test::line_of;
using clustersim::test::run_cli;
using clustersim::test::source_path;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

const std::string kTruth = "scenarios/calibration/synthetic-truth.yaml";
const std::string kScenario = "scenarios/llama3-70b-h100-1024.yaml";
const std::string kSuperpod = "scenarios/clusters/dgx-h100-superpod.yaml";
using clustersim::test::require_one_line_error;

/// The shipped calibration with one edit, given to `run --calibration`; the error must name the
/// edited file at the line of `at` and the field.
void expect_calibration_error(const std::string& from, const std::string& to, const std::string& at,
                              const std::string& field, const std::string& expected) {
  const std::string text = clustersim::test::shipped_with(kTruth, from, to);
  const std::string file = clustersim::test::temp_file(text);
  const CliResult r = run_cli("run " + source_path(kScenario) + " --calibration " + file);
  require_one_line_error(r, "error: " + file + ":" + std::to_string(line_of(text, at)) + ": " + field + ": ", expected);
  std::remove(file.c_str());
}

/// A valid synthetic nccl-tests file with one edit, given to calibrate.
void expect_nccl_tests_error(const std::string& from, const std::string& to, const std::string& at,
                             const std::string& field, const std::string& expected, const std::string& name = "all_reduce_perf.txt") {
  const std::string text = clustersim::test::shipped_with("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt", from, to);
  const std::string file = clustersim::test::temp_file(text, "-" + name);
  const CliResult r = run_cli("calibrate --cluster " + source_path(kSuperpod) + " " + file);
  const std::string where = at.empty() ? "" : ":" + std::to_string(line_of(text, at));
  require_one_line_error(r, "error: " + file + where + ": " + field + ": ", expected);
  std::remove(file.c_str());
}

const std::string kRow1G = "  1073741824     268435456     float     sum      -1";

/// The error a reader throws: its line, field and message.
void check_error(const clustersim::UserError& e, int line, const std::string& field, const std::string& expected) {
  INFO(e.what());
  CHECK(e.line() == line);
  CHECK(e.field_path() == field);
  CHECK_THAT(e.expected(), Contains(expected));
}

const std::string kGoodRow = "  1048576  262144  float  sum  -1  31.92  32.85  57.48  0  31.92  32.85  57.48  0\n";

}  // namespace

// ----- calibration files -----

TEST_CASE("a calibration file for a link type the cluster does not have is an error at that link type") {
  expect_calibration_error("  ndr:\n", "  nvlink9:\n", "nvlink9:", "link_types.nvlink9",
                           "expected a link type of cluster dgx-h100-superpod-16k (ndr, nvlink4, pcie5), got 'nvlink9'");
}

TEST_CASE("a calibration file for a GPU the catalog does not have is an error at that GPU") {
  expect_calibration_error("  H100-SXM:\n", "  Z100-SXM:\n", "Z100-SXM:", "gpus.Z100-SXM", "expected a GPU of the catalog");
}

TEST_CASE("a link efficiency without its source is an error at its row") {
  expect_calibration_error("    source: \"synthetic: chosen for the example (the shipped cluster says 0.94)\"\n", "", "  ndr:",
                           "link_types.ndr", "expected source: the measurements this efficiency was fitted to");
}

TEST_CASE("an in-training efficiency with an empty source is an error at the source") {
  expect_calibration_error("\"synthetic: chosen for the example (the catalog says 0.986)\"", "\"\"", "    source: \"\"",
                           "gpus.H100-SXM.source", "expected the measured iteration times this efficiency was fitted to, got an empty source");
}

TEST_CASE("a residual that does not name its measurement is an error at the row") {
  expect_calibration_error("gpus:\n", "residuals:\n  - {gpus: 8, measured_GBps: 360, predicted_GBps: 363, error_percent: 0.8, fitted: true}\ngpus:\n",
                           "  - {gpus: 8", "residuals[0]", "expected the measurement this residual is of");
}

TEST_CASE("an efficiency above 1 in a calibration file is an error at the value") {
  expect_calibration_error("bandwidth_efficiency: 0.80", "bandwidth_efficiency: 1.2", "bandwidth_efficiency: 1.2",
                           "link_types.nvlink4.bandwidth_efficiency", "expected a number from 0.001 to 1");
}

// ----- nccl-tests output -----

TEST_CASE("an nccl-tests row whose busbw is not a number names the line and the column") {
  expect_nccl_tests_error(kRow1G + "  5282.58  203.26  355.71", kRow1G + "  5282.58  203.26  3S5.71", "3S5.71", "busbw",
                          "expected a number from 0 to 1e+06 (out-of-place, GB/s), got '3S5.71'");
}

TEST_CASE("an nccl-tests row with missing columns names the line") {
  expect_nccl_tests_error(kRow1G + "  5282.58", "  1073741824  5282.58", "  1073741824  5282.58", "row",
                          "expected nccl-tests' 13 columns");
}

TEST_CASE("an nccl-tests row that failed its data check is not a measurement") {
  expect_nccl_tests_error(kRow1G + "  5282.58  203.26  355.71    N/A", kRow1G + "  5282.58  203.26  355.71      3",
                          "355.71      3", "#wrong", "expected 0 wrong elements");
}

TEST_CASE("nccl-tests output without its op, in the header or the file name, is an error") {
  expect_nccl_tests_error("# Collective test starting: all_reduce_perf\n", "", "# SYNTHETIC", "op",
                          "expected nccl-tests' '# Collective test starting: NAME_perf' line or the op in the file name",
                          "perf.txt");
}

TEST_CASE("an nccl-tests op that is not simulated is named") {
  expect_nccl_tests_error("starting: all_reduce_perf", "starting: hypercube_perf", "hypercube_perf", "op",
                          "expected one of all_reduce_perf, all_gather_perf");
}

TEST_CASE("nccl-tests output without device lines needs --gpus") {
  std::string text = clustersim::test::shipped_with("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt", "", "");
  std::string kept;
  for (std::size_t at = 0, next; at < text.size(); at = next + 1) {
    next = text.find('\n', at);
    const std::string line = text.substr(at, next - at);
    if (line.rfind("#  Rank", 0) != 0) kept += line + "\n";
  }
  const std::string file = clustersim::test::temp_file(kept, "-all_reduce_perf.txt");
  require_one_line_error(run_cli("calibrate --cluster " + source_path(kSuperpod) + " " + file), "error: " + file + ":1: ranks: ",
                         "or --gpus");
  std::remove(file.c_str());
}

TEST_CASE("nccl-tests output on more GPUs than the cluster has is an error") {
  const std::string file = clustersim::test::temp_file(
      clustersim::test::shipped_with("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt", "", ""), "-all_reduce_perf.txt");
  require_one_line_error(run_cli("calibrate --cluster " + source_path("scenarios/clusters/mi300x-cluster.yaml") +
                                 " --gpus 200 " + file),
                         "error: command line: --gpus: ", "expected an integer from 2 to 128");
  std::remove(file.c_str());
}

// ----- the command line -----

TEST_CASE("calibrate without any measurement says what it needs") {
  require_one_line_error(run_cli("calibrate --cluster " + source_path(kSuperpod)), "error: command line: nccl_tests: ",
                         "expected nccl-tests output files and/or --iteration SCENARIO=SECONDS");
}

TEST_CASE("a measured iteration without its time is an error on the command line") {
  require_one_line_error(run_cli("calibrate --cluster " + source_path(kSuperpod) + " --iteration " + source_path(kScenario)),
                         "error: command line: --iteration: ", "expected SCENARIO=SECONDS");
}

TEST_CASE("a measured iteration time that is not a positive number is an error") {
  require_one_line_error(run_cli("calibrate --cluster " + source_path(kSuperpod) + " --iteration " + source_path(kScenario) + "=-3"),
                         "error: command line: --iteration: ", "expected a number from 1e-06 to 1e+07, got '-3'");
}

// ----- the readers, column by column -----

TEST_CASE("each column of an nccl-tests row is checked for what nccl-tests prints there") {
  using clustersim::parse_nccl_tests;
  struct Bad {
    std::string row, field, expected;
  };
  const std::vector<Bad> cases = {
      {"  1048576  26x144  float  sum  -1  31.92  32.85  57.48  0  31.92  32.85  57.48  0", "count", "expected an integer (elements)"},
      {"  1048576  262144  4  sum  -1  31.92  32.85  57.48  0  31.92  32.85  57.48  0", "type", "expected a data type name"},
      {"  1048576  262144  float  0  -1  31.92  32.85  57.48  0  31.92  32.85  57.48  0", "redop", "expected a reduction name"},
      {"  1048576  262144  float  sum  -2  31.92  32.85  57.48  0  31.92  32.85  57.48  0", "root", "expected an integer of at least -1"},
      {"  1048576  262144  float  sum  -1  -31.92  32.85  57.48  0  31.92  32.85  57.48  0", "time", "(out-of-place, us)"},
      {"  1048576  262144  float  sum  -1  31.92  32.85  57.48  0  31.92  32.85  nan  0", "busbw", "(in-place, GB/s)"},
      {"  -1048576  262144  float  sum  -1  31.92  32.85  57.48  0  31.92  32.85  57.48  0", "size", "expected an integer of at least 0"},
  };
  for (const Bad& b : cases) {
    INFO(b.row);
    check_error(clustersim::test::error_of([&] { parse_nccl_tests(kGoodRow + b.row + "\n", "all_reduce_perf.txt", 8); }), 2,
                b.field, b.expected);
  }
}

TEST_CASE("nccl-tests output without rows, or on a GPU count its Rank lines contradict, is an error") {
  using clustersim::parse_nccl_tests;
  check_error(clustersim::test::error_of([] { parse_nccl_tests("# Collective test starting: all_reduce_perf\n#\n", "x.txt", 8); }), 2,
              "rows", "expected at least one result row");
  const std::string two_ranks = "#  Rank  0 Group  0 Pid 1 on a device  0 [0x18] GPU\n#  Rank  1 Group  0 Pid 2 on a device  1 [0x2a] GPU\n";
  check_error(clustersim::test::error_of([&] { parse_nccl_tests(two_ranks + kGoodRow, "all_reduce_perf.txt", 8); }), 0, "--gpus",
              "expected 2 GPUs, as the file's '#  Rank' lines list, got 8");
  check_error(clustersim::test::error_of([&] { parse_nccl_tests(kGoodRow, "all_reduce_perf.txt", 1); }), 1, "ranks",
              "expected a measurement on at least 2 GPUs");
}

TEST_CASE("nccl-tests output on more GPUs than the cluster, or without any bandwidth, cannot be fitted") {
  const clustersim::ClusterSpec cluster = clustersim::load_cluster_spec(source_path("scenarios/clusters/mi300x-cluster.yaml"));
  const auto big = clustersim::parse_nccl_tests(kGoodRow, "all_reduce_perf.txt", 256);
  check_error(clustersim::test::error_of([&] { clustersim::fit_link_efficiencies(cluster, {big}); }), 0, "ranks",
              "expected at most the 128 GPUs of cluster");
  const auto idle = clustersim::parse_nccl_tests(
      "  1048576  262144  float  sum  -1  31.92  0  0  0  31.92  0  0  0\n", "all_reduce_perf.txt", 8);
  check_error(clustersim::test::error_of([&] { clustersim::fit_link_efficiencies(cluster, {idle}); }), 0, "busbw",
              "expected a measured bus bandwidth above 0");
}

TEST_CASE("a calibration file's rows are checked where they are written") {
  using clustersim::YamlField;
  auto parse = [](const std::string& text) { clustersim::parse_calibration(YamlField::load_string(text, "c.yaml")); };
  const std::string head = "name: x\nfitted_on: y\n";
  const std::string link = "link_types:\n  nvlink4: {bandwidth_efficiency: 0.8, source: s}\n";
  check_error(clustersim::test::error_of([&] { parse(head); }), 1, "",
              "expected link_types or gpus: a calibration file that calibrates something");
  check_error(clustersim::test::error_of([&] { parse(head + "link_types: [nvlink4]\n"); }), 3, "link_types",
              "expected a mapping of link type names");
  check_error(clustersim::test::error_of([&] {
                parse(head + link + "residuals:\n  - {nccl_tests: a.txt:3, scenario: s.yaml, gpus: 8, measured_s: 1, predicted_s: 1, error_percent: 0, fitted: true}\n");
              }),
              6, "residuals[0]", "one of them");
  check_error(clustersim::test::error_of([&] {
                parse(head + link + "residuals:\n  - {scenario: s.yaml, op: all_reduce, gpus: 8, measured_s: 1, predicted_s: 1, error_percent: 0, fitted: true}\n");
              }),
              6, "residuals[0].op", "expected op only on an nccl_tests residual");
}

TEST_CASE("calibrate with nothing to write says so instead of writing an empty calibration") {
  // A 16-GPU all-reduce on DGX H100 is NVLink-bound in the model: it constrains no link type.
  const std::string file = clustersim::test::temp_file(
      clustersim::test::shipped_with("scenarios/calibration/all_gather_perf-16gpu.synthetic.txt", "", ""), "-all_gather_perf.txt");
  const std::string out = clustersim::test::temp_file("", ".yaml");
  // All-gather across nodes does constrain the NICs, so this one writes; the all-reduce below does not.
  CHECK(run_cli("calibrate --cluster " + source_path(kSuperpod) + " " + file + " --out " + out).exit_code == 0);
  std::remove(file.c_str());
  const std::string cluster = source_path(kSuperpod);
  const std::string made = clustersim::test::temp_file("", "-all_reduce_perf.txt");
  REQUIRE(run_cli("collective --cluster " + cluster + " --gpus 16 -b 256M -e 1G --nccl-tests " + made).exit_code == 0);
  require_one_line_error(run_cli("calibrate --cluster " + cluster + " " + made + " --out " + out),
                         "error: " + out + ": --out: ", "nothing to write");
  std::remove(made.c_str());
  std::remove(out.c_str());
}
