// A run on a GPU whose catalog entry lacks a calibration it falls back on says so, in its text and
// its JSON, with the catalog's reason; `clustersim list` marks what each GPU lacks.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "support.hpp"

using clustersim::test::cli_json;
using clustersim::test::run_cli;
using clustersim::test::source_path;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// The line of `text` that starts with `prefix`; none fails the test.
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  FAIL("no line starts with '" << prefix << "' in:\n" << text);
  return "";
}

const std::string kH800 = "scenarios/deepseek-v3-h800-2048.yaml";      // H800: no in-training efficiency
const std::string kA100 = "scenarios/validation/korthikanti-22b-full.yaml";  // A100: every calibration

}  // namespace

TEST_CASE("run on a GPU without an in-training efficiency prints the uncalibrated marker with its reason") {
  const auto r = run_cli("run --fold assume " + source_path(kH800));
  REQUIRE(r.exit_code == 0);
  const std::string line = line_starting(r.stdout_text, "uncalibrated: ");
  CHECK_THAT(line, StartsWith("uncalibrated: H800-SXM in_training_efficiency (DeepSeek's training profile"));
  CHECK_THAT(line, Contains("; using 1, kernels at their benchmark speed)"));
}

TEST_CASE("run on the A100 prints no uncalibrated marker") {
  const auto r = run_cli("run --fold assume " + source_path(kA100));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, !Contains("uncalibrated"));
}

TEST_CASE("run's JSON lists each uncalibrated parameter, and none on the A100") {
  const auto h800 = cli_json("run --fold assume " + source_path(kH800));
  REQUIRE(h800["uncalibrated"].size() == 1);
  CHECK(h800["uncalibrated"][0]["gpu"] == "H800-SXM");
  CHECK(h800["uncalibrated"][0]["parameter"] == "in_training_efficiency");
  CHECK(h800["uncalibrated"][0]["using"] == "1, kernels at their benchmark speed");
  CHECK_THAT(h800["uncalibrated"][0]["reason"].get<std::string>(), Contains("112 of 132 SMs"));
  const auto a100 = cli_json("run --fold assume " + source_path(kA100));
  REQUIRE(a100["uncalibrated"].is_array());
  CHECK(a100["uncalibrated"].empty());
}

TEST_CASE("an MX-format run marks the bf16 GEMM curve it runs on") {
  const auto r = run_cli("run --fold assume " + source_path("scenarios/llama3-70b-mi355x-mxfp8.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Contains("uncalibrated: MI355X mxfp8 GEMM curve (no mxfp8 GEMM sweep in the catalog; using "
                                     "the bf16 gemm_efficiency at the mxfp8 peak)"));
}

TEST_CASE("an FP8 run on the H100 uses calibrated curves only and prints no marker") {
  const auto r = run_cli("run --fold assume " + source_path("scenarios/gpt3-175b-h100-pp16.yaml") + " --set precision=fp8");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, !Contains("uncalibrated"));
}

TEST_CASE("list marks the calibrations each GPU lacks") {
  const auto r = run_cli("list --catalog " + source_path("scenarios/gpus.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(line_starting(r.stdout_text, "  H200-SXM "),
             Contains("; uncalibrated: score_matmul_efficiency, in_training_efficiency"));
  CHECK_THAT(line_starting(r.stdout_text, "  GB200 "), Contains("uncalibrated: gemm_efficiency, fp8_gemm_efficiency,"));
  CHECK_THAT(line_starting(r.stdout_text, "  A100-SXM-80GB "), !Contains("uncalibrated"));
}

TEST_CASE("list with a missing catalog is one line naming the option, exit 2, nothing on stdout") {
  const auto r = run_cli("list --catalog /nonexistent/gpus.yaml");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK_THAT(r.stderr_text, StartsWith("error: /nonexistent/gpus.yaml: --catalog: cannot open file"));
  CHECK(r.stderr_text.find('\n') == r.stderr_text.size() - 1);
}

TEST_CASE("list with a bad catalog entry is one line at the field, exit 2, nothing on stdout") {
  const std::string catalog = clustersim::test::temp_file(clustersim::test::shipped_with(
      "scenarios/gpus.yaml", "      in_training_efficiency: no per-layer or in-training kernel measurement on MI355X was found",
      "      in_training_efency: typo"));
  const auto r = run_cli("list --catalog " + catalog);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK_THAT(r.stderr_text, Contains("gpus[7].uncalibrated.in_training_efency: unknown calibration parameter"));
  CHECK(r.stderr_text.find('\n') == r.stderr_text.size() - 1);
}
