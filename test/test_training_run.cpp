// `clustersim run` end to end on the shipped GPT-3 scenario: the report adds up, is deterministic,
// writes JSON and a trace, and refuses a layout that does not fit in memory.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"

using clustersim::test::run_cli;
using clustersim::test::source_path;
using clustersim::test::temp_file;

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

const std::string kScenario = source_path("scenarios/gpt3-175b-a100-1024.yaml");

}  // namespace

TEST_CASE("every pipeline stage's time adds up to the iteration") {
  const std::string json = temp_file("", ".json");
  const auto r = run_cli("run " + kScenario + " --json " + json);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = read_json(json);
  const double iteration = report["iteration_s"].get<double>();
  CHECK(iteration > 0);
  REQUIRE(report["stages"].size() == 8);
  for (const auto& stage : report["stages"]) {
    double sum = 0;
    for (const auto& [name, seconds] : stage["time_s"].items()) sum += seconds.get<double>();
    CHECK(sum == Approx(iteration).epsilon(1e-6));
  }
  // Tokens per second is the batch's tokens over the iteration: 1536 sequences of 2048.
  CHECK(report["tokens_per_s"].get<double>() == Approx(1536.0 * 2048 / iteration).epsilon(1e-9));
}

TEST_CASE("a run prints the same bytes every time") {
  const auto a = run_cli("run " + kScenario), b = run_cli("run " + kScenario);
  REQUIRE(a.exit_code == 0);
  CHECK(a.stdout_text == b.stdout_text);
}

TEST_CASE("the trace has one process per kept GPU and complete events") {
  const std::string trace = temp_file("", ".json");
  REQUIRE(run_cli("run " + kScenario + " --set global_batch=128 --trace " + trace + " --trace-ranks 0-15").exit_code == 0);
  const nlohmann::json t = read_json(trace);
  std::set<int> pids;
  for (const auto& e : t["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["ph"] == "X") CHECK(e["dur"].get<double>() >= 0);
  }
  // Pipeline ranks sit 128 GPUs apart (tp 8 x dp 16): 0-15 is rank 0 of replicas 0 and 1, each
  // GPU traced (replica 1 with replica 0's events, folded onto it).
  CHECK(pids.size() == 16);
  CHECK(*pids.begin() == 0);
  CHECK(*pids.rbegin() == 15);
}

TEST_CASE("a layout that does not fit in memory names the stage and the shortfall") {
  const auto r = run_cli("run " + kScenario + " --set recompute=none --set microbatch=4 --set global_batch=1536");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains("pipeline stage 0 needs") && Catch::Contains("GiB more than"));
  CHECK(run_cli("run " + kScenario + " --set recompute=none --set microbatch=4 --allow-oom").exit_code == 0);
}
