// The validation set: every row of Narayanan Table 1 and Korthikanti Table 5 has a scenario that
// loads, and `clustersim validate` prints predicted against published with the error.
#include <catch2/catch.hpp>

#include <regex>

#include "one_line_error.hpp"
#include "support.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;

TEST_CASE("every validation row names a scenario that loads with the published layout") {
  const YamlField root = YamlField::load_file(test::source_path("scenarios/validation/published.yaml"));
  const YamlField rows = root.child("rows");
  // Narayanan et al. Table 1 has 10 rows; Korthikanti et al. Table 5 has 4 models x 2 modes.
  REQUIRE(rows.size() == 18);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ScenarioSpec s =
        load_scenario(test::source_path("scenarios/validation/" + rows.element(i).child("scenario").as_string()));
    CHECK(s.gpus() == s.layout.tp * s.layout.pp * s.layout.dp);
    CHECK(s.cluster.name == "dgx-a100-superpod");
    // Table 5 ran Megatron-LM of 2022, whose TP backward reductions run beside the weight gradients.
    CHECK(s.overlap_tp_backward == (s.name.rfind("korthikanti", 0) == 0));
    // Neither fused gradient accumulation: it came in 2022-02, and fp16 gradients kept it off
    // until 2022-09.
    CHECK_FALSE(s.gradient_accumulation_fusion);
    CHECK(s.precision == "fp16");
  }
}

TEST_CASE("table 1 rows run the microbatch, interleaving and gradient overlap of the authors' script") {
  // Megatron-LM examples/sc21/run_table_1.sh: --micro-batch-size, layers per virtual stage (v is the
  // stage's layers over it), and --DDP-impl (torch overlaps the all-reduce, local runs it after).
  struct Knobs {
    const char* row;
    int microbatch, virtual_stages;
    bool torch_ddp;
  };
  for (const Knobs& k : std::vector<Knobs>{{"1.7b", 16, 1, true},
                                           {"3.6b", 16, 1, true},
                                           {"7.5b", 16, 1, true},
                                           {"18.4b", 8, 1, true},
                                           {"39.1b", 4, 1, false},
                                           {"76.1b", 2, 60 / 4 / 5, false},
                                           {"145.6b", 2, 80 / 8 / 5, false},
                                           {"310.1b", 1, 96 / 16 / 3, false},
                                           {"529.6b", 1, 105 / 35 / 1, false},
                                           {"1t", 1, 1, false}}) {
    INFO(k.row);
    const ScenarioSpec s = load_scenario(test::source_path(std::string("scenarios/validation/narayanan-") + k.row + ".yaml"));
    CHECK(s.microbatch == k.microbatch);
    CHECK(s.virtual_stages == k.virtual_stages);
    CHECK(s.schedule_name == (k.virtual_stages > 1 ? "interleaved" : "1f1b"));
    CHECK(s.overlap_grad_reduce == k.torch_ddp);
    CHECK_FALSE(s.overlap_p2p_comm);
    CHECK_FALSE(s.overlap_tp_backward);  // Megatron-LM of 2021 all-reduced the TP backward blocking
    CHECK(s.precision == "fp16");
  }
}

TEST_CASE("validate prints the row with its error and the mean and max") {
  const auto r = test::run_cli("validate --rows " + test::source_path("scenarios/validation/published.yaml") +
                               " --only korthikanti-22b-full");
  REQUIRE(r.exit_code == 0);
  // 8 GPUs, published 1.42 s; the error is (predicted - published) / published.
  const std::regex row(R"(korthikanti-22b-full\s+8\s+1\.420\s+([0-9.]+)\s+([-+][0-9.]+))");
  std::smatch m;
  REQUIRE(std::regex_search(r.stdout_text, m, row));
  const double predicted = std::stod(m[1]), error = std::stod(m[2]);
  CHECK(error == Approx(100 * (predicted - 1.42) / 1.42).margin(0.1));
  CHECK_THAT(r.stdout_text, Catch::Contains("mean |error|") && Catch::Contains("over 1 rows"));
  // Unlike run, validate folds replicas without proof unless asked, and says so first.
  CHECK(r.stdout_text.rfind("# replicas: assume (replica 0 simulated for all, unproven; --fold exact replays every GPU)\n", 0) == 0);
  const auto exact = test::run_cli("validate --rows " + test::source_path("scenarios/validation/published.yaml") +
                                   " --only korthikanti-22b-full --fold exact");
  CHECK(exact.stdout_text.rfind("# replicas: exact (every GPU's traffic on the fabric)\n", 0) == 0);
}

TEST_CASE("over every row of both tables the mean error is at most 5% and the largest at most 10%") {
  // The issue's bar, on the A100 calibration fixed in scenarios/gpus.yaml before comparing: kernel
  // benchmarks and Korthikanti's per-layer Table 4, none of the iteration times compared here.
  const auto r = test::run_cli("validate --rows " + test::source_path("scenarios/validation/published.yaml"));
  REQUIRE(r.exit_code == 0);
  const std::regex summary(R"(mean \|error\| ([0-9.]+)%, max \|error\| ([0-9.]+)% over ([0-9]+) rows)");
  std::smatch m;
  REQUIRE(std::regex_search(r.stdout_text, m, summary));
  INFO(r.stdout_text);
  CHECK(std::stoi(m[3]) == 18);
  CHECK(std::stod(m[1]) <= 5.0);
  CHECK(std::stod(m[2]) <= 10.0);
  // Each table is a set with its own figures. Table 5 meets the bar alone; Table 1 alone meets the
  // 10% max but not the 5% mean (5.2%: its pipelined rows run 4% to 9% fast, README), so only its
  // max is asserted here.
  for (const char* set : {"narayanan-table1", "korthikanti-table5"}) {
    INFO(set);
    const std::regex line(std::string("# set ") + set +
                          R"(: ([0-9]+) rows, [0-9]+ to [0-9]+ GPUs, mean \|error\| ([0-9.]+)%, max \|error\| ([0-9.]+)%)");
    std::smatch s;
    REQUIRE(std::regex_search(r.stdout_text, s, line));
    const bool table5 = std::string(set) == "korthikanti-table5";
    CHECK(std::stoi(s[1]) == (table5 ? 8 : 10));
    if (table5) CHECK(std::stod(s[2]) <= 5.0);
    CHECK(std::stod(s[3]) <= 10.0);
  }
}

TEST_CASE("validate --fold runs every row as run --fold does, and its JSON says which") {
  // Narayanan's 3.6B row: 32 data-parallel replicas of tp 2, whose gradient rings meet once every
  // GPU's traffic is on the fabric (3.5842 s whole, 3.5836 s with replica 0 alone).
  const std::string row = "narayanan-3.6b";
  const std::string rows = test::source_path("scenarios/validation/published.yaml");
  double exact_s = 0;
  for (const std::string fold : {"exact", "none"}) {
    INFO("--fold " << fold);
    const nlohmann::json v = test::cli_json("validate --rows " + rows + " --only " + row + " --fold " + fold);
    CHECK(v["config"]["fold"] == fold);
    const nlohmann::json r = test::cli_json("run " + test::source_path("scenarios/validation/" + row + ".yaml") + " --fold " + fold);
    CHECK(v["rows"][0]["iteration_s"].get<double>() == r["iteration_s"].get<double>());
    if (fold == "exact") exact_s = v["rows"][0]["iteration_s"].get<double>();
  }
  const nlohmann::json assumed = test::cli_json("validate --rows " + rows + " --only " + row);
  CHECK(assumed["config"]["fold"] == "assume");
  CHECK(assumed["rows"][0]["iteration_s"].get<double>() < exact_s);
  test::require_one_line_error(test::run_cli("validate --rows " + rows + " --only " + row + " --fold some"),
                               "error: command line: --fold: ", "expected exact, none, all or assume, got 'some'");
}
