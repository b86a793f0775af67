// serve --validate's shipped set (scenarios/validation/serving/sarathi-serve.yaml): clustersim
// serve against Sarathi-Serve's published measurements (Agrawal et al., OSDI 2024; the data files
// behind Figures 2 and 9a in microsoft/sarathi-serve), each row run with the settings the
// measurement used and the catalog's A100-PCIe-80GB calibration, nothing fitted to a row.
#include <catch2/catch.hpp>

#include <cmath>

#include "simulator/serve_validation.hpp"
#include "support.hpp"

using namespace clustersim;
using test::source_path;

namespace {

const std::string kRows = source_path("scenarios/validation/serving/sarathi-serve.yaml");

std::vector<ServeValidationResult> results(const std::string& set) {
  std::vector<ServeValidationResult> out;
  for (const ServeValidationRow& row : load_serve_validation(kRows))
    if (row.set == set) out.push_back(run_serve_validation(row));
  return out;
}

}  // namespace

// Issue 19 asks for 10%; these sets do not reach it (mean |error| 11.4% and 10.9%, largest 28%), so
// the tests hold what they do reach, every row predicted below its measurement. The host's time per
// iteration is the rig's file's, calibrated on Vidur's CPU profile of the same engine, not on these
// rows; what is still missing: single-sequence attention kernels below the catalog's
// FlashAttention-2 curve (measured on many sequences at once, on the SXM card) and the PCIe card's
// clocks outside its GEMMs. A change that moves a row past these bounds, either way, shows here.
static void hold(const std::vector<ServeValidationResult>& rows, double max_error, double mean_error) {
  double sum = 0;
  for (const ServeValidationResult& r : rows) {
    INFO(r.row.name << ": published " << r.row.published << " s, predicted " << r.predicted << " s");
    CHECK(r.error < 0);
    CHECK(std::fabs(r.error) <= max_error);
    sum += std::fabs(r.error);
  }
  CHECK(sum / double(rows.size()) <= mean_error);
}

TEST_CASE("serving validation: a lone prompt's prefill, whole, against Sarathi-Serve's Figure 2a", "[serve][validate]") {
  const auto rows = results("sarathi-serve-prefill");
  REQUIRE(rows.size() == 7);
  hold(rows, 0.30, 0.12);
  // 512 to 4096 tokens, where the GEMMs (the calibrated part) dominate: within 15%.
  for (const ServeValidationResult& r : rows)
    if (r.row.name != "prefill-128" && r.row.name != "prefill-8192" && r.row.name != "prefill-16384") CHECK(std::fabs(r.error) <= 0.15);
}

TEST_CASE("serving validation: a lone prompt's prefill in chunks of 512 to 16384 against Sarathi-Serve's Figure 9a", "[serve][validate]") {
  const auto rows = results("sarathi-serve-chunked");
  REQUIRE(rows.size() == 16);
  hold(rows, 0.30, 0.12);
}

TEST_CASE("serving validation: Sarathi-Serve's decode iterations take far longer than the GPU's work", "[serve][validate]") {
  // Figure 2b's decode-only iterations take about twice what the GPU's work and Vidur's profile of
  // the engine's host time give (its kernel launches per op under eager PyTorch and its
  // paged-attention kernels' speed are not modelled): every row is predicted at 45-65% of its
  // measurement. Without the host's time they read 25-51%.
  const auto rows = results("sarathi-serve-decode");
  REQUIRE(rows.size() == 8);
  for (const ServeValidationResult& r : rows) {
    INFO(r.row.name << ": published " << r.row.published << " s, predicted " << r.predicted << " s");
    CHECK(r.error < -0.35);
    CHECK(r.error > -0.55);
  }
}

TEST_CASE("serve --validate prints a line a row and each set's mean and largest error", "[serve][validate]") {
  const auto r = test::run_cli("serve --validate " + kRows);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Catch::Contains("# set sarathi-serve-prefill: 7 rows, mean |error|") &&
                                Catch::Contains("# set sarathi-serve-chunked: 16 rows") && Catch::Contains("# set sarathi-serve-decode: 8 rows") &&
                                Catch::Contains("prompt-16383-chunk-512"));
}
