// The Llama 3 paper's Table 4 as a validation set (scenarios/validation/llama3-herd-h100/): Meta's
// framework on Meta's RoCE cluster, which nothing in the project was fitted to. Every row loads with
// the layout the table states, on the cluster the paper describes; its iteration time is the printed
// MFU converted exactly; and the set meets the issue's bar.
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <regex>

#include "support.hpp"
#include "topologies/tier_oversubscription.hpp"
#include "workloads/model_math.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;

namespace {

const std::string kRows = "scenarios/validation/llama3-herd-h100/published.yaml";

/// Table 4 (Llama Team 2024, arXiv:2407.21783) as printed.
struct TableRow {
  const char* name;
  int gpus, tp, cp, pp, dp;
  long seq_len;
  int sequences_per_dp_rank;
};
const std::array<TableRow, 3> kTable = {{
    {"llama3-405b-8k-8192", 8192, 8, 1, 16, 64, 8192, 32},
    {"llama3-405b-8k-16384", 16384, 8, 1, 16, 128, 8192, 16},
    {"llama3-405b-128k-16384", 16384, 8, 16, 16, 8, 131072, 16},
}};

}  // namespace

TEST_CASE("Llama 3 Table 4 rows load with the table's layout on Meta's RoCE cluster, [TP, CP, PP, DP] innermost first") {
  const YamlField rows = YamlField::load_file(test::source_path(kRows)).child("rows");
  REQUIRE(rows.size() == kTable.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TableRow& want = kTable[i];
    const YamlField r = rows.element(i);
    INFO(want.name);
    CHECK(r.child("name").as_string() == want.name);
    CHECK_THAT(r.child("source").as_string(), Catch::Contains("arXiv:2407.21783") && Catch::Contains("Table 4"));
    const ScenarioSpec s =
        load_scenario(test::source_path("scenarios/validation/llama3-herd-h100/" + r.child("scenario").as_string()));
    CHECK(s.name == want.name);
    CHECK(s.cluster.name == "meta-llama3-roce-24k");
    CHECK(s.gpu.name == "H100-SXM");
    CHECK(s.gpus() == want.gpus);
    CHECK(s.layout.tp == want.tp);
    CHECK(s.layout.cp == want.cp);
    CHECK(s.layout.pp == want.pp);
    CHECK(s.layout.dp == want.dp);
    CHECK(s.model.seq_len == want.seq_len);
    CHECK(s.global_batch == long(want.sequences_per_dp_rank) * want.dp);
    CHECK(s.global_batch * s.model.seq_len == 16L * 1024 * 1024);  // "16M" tokens a batch, every row
    CHECK(s.layout.order == std::array<Dim, 4>{Dim::tp, Dim::cp, Dim::pp, Dim::dp});
    CHECK(s.cp_all_gather == (want.cp > 1));  // section 3.3.2: K and V all-gathered
    CHECK(s.precision == "bf16");
    CHECK(std::string(s.gradient_reduce_dtype()) == "fp32");  // section 3.3.2, "Numerical stability"
    CHECK(s.stage_layers.front() + 1 == s.stage_layers[1]);  // the first and last stage give a layer up
    CHECK(s.stage_layers.back() + 1 == s.stage_layers[1]);
  }
}

TEST_CASE("a Llama 3 row's iteration time is its printed MFU converted with run's own FLOPs per token and peak") {
  const YamlField rows = YamlField::load_file(test::source_path(kRows)).child("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const YamlField r = rows.element(i);
    INFO(r.child("name").as_string());
    const ScenarioSpec s =
        load_scenario(test::source_path("scenarios/validation/llama3-herd-h100/" + r.child("scenario").as_string()));
    const double tokens = double(s.global_batch) * s.model.seq_len;
    const double want = tokens * model_flops_per_token(s.model) /
                        (s.gpus() * r.child("published_mfu").as_number() * *s.gpu.peak_flops("bf16"));
    CHECK(r.child("published_iter_s").as_number() == Approx(want).epsilon(1e-4));
  }
}

TEST_CASE("Meta's RoCE cluster: 16 GPUs a ToR, pods of 3,072 GPUs without oversubscription, 7:1 between pods") {
  // Llama Team 2024, section 3.3.1: two 8-GPU servers a rack under one ToR, 192 racks a pod with full
  // bisection, 8 pods joined at 1:7.
  const Cluster& c = test::shipped_cluster("scenarios/clusters/meta-llama3-roce-24k.yaml");
  CHECK(c.gpu_count() == 24576);
  const auto tiers = tier_oversubscription(c);
  REQUIRE(tiers.size() == 3);
  CHECK(tiers[0].switches == 24576 / 16);
  CHECK(tiers[0].ratio() == Approx(1.0));
  CHECK(tiers[1].switches == 8 * 16);  // 16 cluster switches a pod, each with one link from every ToR
  CHECK(tiers[1].ratio() == Approx(192.0 / 27.0));
  CHECK(tiers[1].worst_switch_ratio == Approx(192.0 / 27.0));
  CHECK(tiers[2].up_Bps == 0);
}

TEST_CASE("Llama 3 405B on 8K and 16K H100s: every row fits and runs, within 5% mean and 10% max") {
  const auto r = test::run_cli("validate --rows " + test::source_path(kRows));
  REQUIRE(r.exit_code == 0);
  const std::regex re(
      R"(# set llama3-herd-h100: ([0-9]+) rows, 8192 to 16384 GPUs, mean \|error\| ([0-9.]+)%, max \|error\| ([0-9.]+)%)");
  std::smatch m;
  INFO(r.stdout_text);
  REQUIRE(std::regex_search(r.stdout_text, m, re));
  CHECK(std::stoi(m[1]) == 3);
  CHECK(std::stod(m[2]) <= 5.0);
  CHECK(std::stod(m[3]) <= 10.0);
}
