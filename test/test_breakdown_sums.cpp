// The invariants of an iteration's result (simulator/breakdown_check.hpp): every shipped scenario
// that runs in about a second (not the 16K-GPU Llama runs, 5 to 20 s) reports, per pipeline stage, columns that add up to the iteration time within
// 1e-9 and none below zero, read from `clustersim run --json` as a user gets them; and the check
// itself clamps rounding, and rejects a negative time, a span past the iteration and a breakdown
// that does not add up.
#include <catch2/catch.hpp>

#include <cmath>

#include "simulator/breakdown_check.hpp"
#include "topologies/invariant.hpp"
#include "support.hpp"

using namespace clustersim;
using Catch::Matchers::Contains;

namespace {

void check_scenario_adds_up(const std::string& scenario, const std::string& options = "") {
  const nlohmann::json j = test::cli_json("run " + test::source_path(scenario) + " " + options);
  const double iteration = j.at("iteration_s").get<double>();
  REQUIRE(iteration > 0);
  REQUIRE(!j.at("stages").empty());
  for (const auto& stage : j.at("stages")) {
    double total = 0;
    int columns = 0;
    for (const auto& [column, seconds] : stage.at("time_s").items()) {
      INFO(scenario << " stage " << stage.at("stage") << " " << column);
      CHECK(seconds.get<double>() >= 0);
      total += seconds.get<double>();
      ++columns;
    }
    CHECK(columns == 11);
    INFO(scenario << " stage " << stage.at("stage") << ": columns add up to " << total << " s of " << iteration << " s");
    CHECK(std::fabs(total - iteration) <= 1e-9 * iteration);
  }
}

/// Two ranks of a 10 s iteration, each adding up.
IterationResult made_up() {
  IterationResult r;
  r.iteration_s = 10;
  RankBreakdown a;
  a.compute_s = 6;
  a.tp_s = 1;
  a.bubble_s = 2;
  a.optimizer_s = 0.5;
  a.other_idle_s = 0.5;
  RankBreakdown b = a;
  b.bubble_s = 1.5;
  b.pp_exposed_s = 0.5;
  r.ranks = {a, b};
  r.passes = {{0, PassKind::forward, 0, 0, 0.0, 3.0}};
  r.events = {{0, "compute", "f", 0.0, 3.0}};
  return r;
}

std::string violation(IterationResult r) {
  try {
    check_breakdown(r);
  } catch (const InvariantViolation& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GPT-3 175B on 1024 A100s: every stage's breakdown adds up to the iteration") {
  check_scenario_adds_up("scenarios/gpt3-175b-a100-1024.yaml");
}

TEST_CASE("GPT-3 175B on 512 H100s under zb-v: every stage's breakdown adds up to the iteration") {
  check_scenario_adds_up("scenarios/gpt3-175b-h100-pp16.yaml", "--set schedule=zb-v");
}

TEST_CASE("GPT-3 175B on 512 H100s under dualpipev: every stage's breakdown adds up to the iteration") {
  check_scenario_adds_up("scenarios/gpt3-175b-h100-pp16.yaml", "--set schedule=dualpipev");
}

TEST_CASE("DeepSeek-V3 on 2048 H800s (DualPipe, EP): every stage's breakdown adds up to the iteration") {
  check_scenario_adds_up("scenarios/deepseek-v3-h800-2048.yaml", "--fold assume");  // exact: test_ep_in_place
}

TEST_CASE("Llama 3 70B on 1024 H100s: every stage's breakdown adds up to the iteration") {
  check_scenario_adds_up("scenarios/llama3-70b-h100-1024.yaml");
}

TEST_CASE("Llama 3 70B on MI355X in MXFP8: every stage's breakdown adds up to the iteration") {
  check_scenario_adds_up("scenarios/llama3-70b-mi355x-mxfp8.yaml");
}

TEST_CASE("LLaVA on Llama 3 70B: every stage's breakdown adds up to the iteration") {
  check_scenario_adds_up("scenarios/vlm-llava-llama3-70b-h100-1024.yaml");
}

TEST_CASE("Llama 3 70B on 128 GPUs of a 4:1 fat tree, every replica replayed: every stage's breakdown adds up") {
  check_scenario_adds_up("scenarios/procurement/llama3-70b-1024.yaml",
                         "--set cluster=" + test::source_path("scenarios/procurement/h100-fat-tree-4to1.yaml") +
                             " --set gpus=128 --set parallel.dp=4 --set global_batch=128 --fold none");
}

TEST_CASE("the breakdown check clamps rounding below zero and passes what adds up") {
  IterationResult r = made_up();
  r.ranks[1].dp_exposed_s = -1e-15;  // a difference of equal times, rounded
  r.events[0].start_s = -2e-14;
  REQUIRE_NOTHROW(check_breakdown(r));
  CHECK(r.ranks[1].dp_exposed_s == 0.0);
  CHECK(r.events[0].start_s == 0.0);
  CHECK(breakdown_total(r.ranks[0]) == 10.0);
}

TEST_CASE("the breakdown check rejects a negative time beyond rounding, naming the rank and column") {
  IterationResult r = made_up();
  r.ranks[1].dp_exposed_s = -1e-6;  // still adds up, but below zero
  r.ranks[1].bubble_s += 1e-6;
  CHECK_THAT(violation(r), Contains("invariant `no negative durations or timestamps` broken: pipeline rank 1's dp time is -9.99999"));
}

TEST_CASE("the breakdown check rejects a breakdown that does not add up to the iteration") {
  IterationResult r = made_up();
  r.ranks[0].compute_s += 1e-7;  // 1e-8 of the iteration: far beyond rounding
  CHECK_THAT(violation(r), Contains("invariant `the breakdown adds up to the iteration` broken: pipeline rank 0's breakdown adds up to 10.0000001"));
  r = made_up();
  r.ranks[1].other_idle_s = 0;
  CHECK_THAT(violation(r), Contains("pipeline rank 1's breakdown adds up to 9.5 s, the iteration takes 10 s"));
}

TEST_CASE("the breakdown check rejects a pass or event outside the iteration") {
  IterationResult r = made_up();
  r.passes[0].end_s = 10.5;
  CHECK_THAT(violation(r), Contains("a pass runs from 0 s to 10.5 s in an iteration of 10 s"));
  r = made_up();
  r.events[0].end_s = 1;
  r.events[0].start_s = 2;
  CHECK_THAT(violation(r), Contains("a trace event runs from 2 s to 1 s"));
}

TEST_CASE("a time that is not finite is never clamped") {
  CHECK_THROWS_AS(non_negative_time(std::nan(""), 1, "x"), InvariantViolation);
  CHECK_THROWS_AS(non_negative_time(HUGE_VAL, 1, "x"), InvariantViolation);
  CHECK_THROWS_AS(non_negative_time(-1e-11, 1, "x"), InvariantViolation);
  CHECK(non_negative_time(-1e-13, 1, "x") == 0.0);
  CHECK(non_negative_time(3.5, 1, "x") == 3.5);
}
