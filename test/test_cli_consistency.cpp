// One CLI a script can trust: `--version`, and --json documents that say what they are (schema and
// clustersim version), echo the configuration that was simulated, and with `--json -` (or
// /dev/stdout) are the whole of stdout.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::cli_json;
using clustersim::test::run_cli;
using clustersim::test::source_path;
using Catch::Matchers::Contains;

namespace {

// 8 A100s, one iteration: a run takes well under a second.
const std::string kScenario = source_path("scenarios/validation/korthikanti-22b-full.yaml");
const std::string kCluster = source_path("scenarios/clusters/dgx-a100-superpod.yaml");

/// The version in CMakeLists.txt's project() line, read here rather than written into the test.
std::string project_version() {
  const std::string text = test::read_file(source_path("CMakeLists.txt"));
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(R"(project\(clustersim VERSION ([0-9]+\.[0-9]+\.[0-9]+))")));
  return m[1];
}

/// The header every --json document starts with.
void check_header(const nlohmann::json& j, const std::string& command) {
  CHECK(j.at("schema_version") == 2);
  CHECK(j.at("clustersim_version") == project_version());
  CHECK(j.at("command") == command);
}

/// stdout parsed as one JSON document (anything else in it, such as the text table, fails).
nlohmann::json stdout_json(const std::string& args) {
  const auto r = run_cli(args);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  INFO(r.stdout_text);
  REQUIRE(nlohmann::json::accept(r.stdout_text));
  return nlohmann::json::parse(r.stdout_text);
}

}  // namespace

TEST_CASE("clustersim --version prints the project's version on one line and exits 0", "[cli]") {
  const auto r = run_cli("--version");
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == "clustersim " + project_version() + "\n");
  CHECK(r.stderr_text.empty());
}

TEST_CASE("run --json carries the schema version and the configuration as resolved after --set", "[cli]") {
  const auto j = cli_json("run " + kScenario + " --set global_batch=8 --set microbatch=2 --fold exact");
  check_header(j, "run");
  // What load_scenario resolves from the same file and overrides, field by field.
  const ScenarioSpec s = load_scenario(kScenario, {"global_batch=8", "microbatch=2"});
  const auto& c = j.at("config");
  CHECK(c.at("scenario") == s.name);
  CHECK(c.at("file") == kScenario);
  CHECK(c.at("model") == s.model.name);
  CHECK(c.at("cluster") == s.cluster.name);
  CHECK(c.at("gpu") == s.gpu.name);
  CHECK(c.at("gpus") == 8);
  CHECK(c.at("tp") == 8);
  CHECK(c.at("pp") == 1);
  CHECK(c.at("dp") == 1);
  CHECK(c.at("cp") == 1);
  CHECK(c.at("ep") == 1);
  CHECK(c.at("schedule") == "1f1b");
  CHECK(c.at("global_batch") == 8);
  CHECK(c.at("microbatch") == 2);
  CHECK(c.at("microbatches") == 8 / (2 * 1));  // global batch / (microbatch x dp)
  CHECK(c.at("precision") == "fp16");
  CHECK(c.at("recompute") == "full");
  CHECK(c.at("fold") == "exact");
  CHECK(c.at("solver") == "fluid");
  // The fields run printed before schema_version are still there.
  CHECK(j.at("scenario") == s.name);
  CHECK(j.at("iteration_s").get<double>() > 0);
}

TEST_CASE("run --json - and --json /dev/stdout write only the JSON document to stdout", "[cli]") {
  const auto file = cli_json("run " + kScenario);
  for (const std::string path : {"-", "/dev/stdout"}) {
    INFO(path);
    const auto j = stdout_json("run " + kScenario + " --json " + path);
    check_header(j, "run");
    CHECK(j == file);  // the same document as written to a file (the run is deterministic)
  }
}

TEST_CASE("run --json - on bad input leaves stdout empty and exits 2", "[cli]") {
  const auto r = run_cli("run " + kScenario + " --set global_batch=0 --json -");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK_THAT(r.stderr_text, Contains("global_batch"));
}

TEST_CASE("compare --json - carries the header, the scenario as configured, and nothing else on stdout", "[cli]") {
  const auto j = stdout_json("compare " + kScenario + " --schedules 1f1b,gpipe --set global_batch=8 --json -");
  check_header(j, "compare");
  CHECK(j.at("scenario") == "korthikanti-22b-full");  // the scenario's name, as run writes it
  CHECK(j.at("config").at("global_batch") == 8);
  CHECK(j.at("config").at("file") == kScenario);
  CHECK(j.at("config").at("schedules") == nlohmann::json::array({"1f1b", "gpipe"}));
  REQUIRE(j.at("rows").size() == 2);
  CHECK(j.at("rows")[1].at("schedule") == "gpipe");
}

TEST_CASE("collective --json - carries the header and the resolved options, defaults filled in", "[cli]") {
  const auto j = stdout_json("collective --cluster " + kCluster + " --gpus 8 -b 1M -e 4M --json -");
  check_header(j, "collective");
  const auto& c = j.at("config");
  CHECK(c.at("cluster_file") == kCluster);
  CHECK(c.at("gpus") == 8);
  CHECK(c.at("op") == "all_reduce");  // the default
  CHECK(c.at("type") == "float");
  CHECK(c.at("min_bytes") == 1 << 20);
  CHECK(c.at("max_bytes") == 4 << 20);
  CHECK(c.at("step_factor") == 2.0);
  CHECK(c.at("solver") == "fluid");
  // 1M, 2M, 4M: three rows, as the sizes say.
  CHECK(j.at("rows").size() == 3);
}

TEST_CASE("topology --json - carries the header and nothing else on stdout", "[cli]") {
  const auto j = stdout_json("topology " + kCluster + " --json -");
  check_header(j, "topology");
  CHECK(j.at("config").at("cluster_file") == kCluster);
  CHECK(j.at("gpus").get<int>() > 0);
}

namespace {

/// Runs the CLI with a fresh empty folder as its working directory, then comes back and removes it.
test::CliResult run_cli_elsewhere(const std::string& args) {
  namespace fs = std::filesystem;
  const fs::path before = fs::current_path();
  const fs::path here = fs::temp_directory_path() / ("clustersim-elsewhere-" + std::to_string(::getpid()));
  fs::create_directories(here);
  fs::current_path(here);
  const bool empty = !fs::exists("scenarios");
  const test::CliResult r = run_cli(args);
  fs::current_path(before);
  fs::remove_all(here);
  REQUIRE(empty);
  return r;
}

}  // namespace

TEST_CASE("validate, bench and list find the shipped scenarios from any directory", "[cli]") {
  SECTION("validate reads the shipped validation sets") {
    const auto r = run_cli_elsewhere("validate --only korthikanti-22b-full");
    INFO(r.stderr_text);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.stdout_text, Contains("korthikanti-22b-full"));
  }
  SECTION("bench times its default cluster, the shipped 16K-GPU SuperPOD") {
    const auto r = run_cli_elsewhere("bench --gpus 8 --repeat 1 --size 1M");
    INFO(r.stderr_text);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.stdout_text, Contains("dgx-h100-superpod-16k (16384 GPUs)"));
  }
  SECTION("list lists the shipped GPU catalog") {
    const auto r = run_cli_elsewhere("list");
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.stdout_text, Contains("GPUs (") && Contains("A100-SXM-80GB"));
  }
}

TEST_CASE("the shared options are on every command where they make sense, spelt alike", "[cli]") {
  // Commands that read a scenario: --set, --catalog, --json, --csv; those that
  // read a cluster alone: --cluster, --set, --json, --csv; the rest --json and --csv. -q and -v are
  // every command's (main.cpp) and are checked by test_csv_quiet_verbose.
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands{
      {"run", {"--set", "--catalog", "--json", "--csv", "--report"}},
      {"compare", {"--set", "--catalog", "--json", "--csv", "--report"}},
      {"search", {"--set", "--catalog", "--json", "--csv", "--report", "--gpus"}},
      {"sweep", {"--set", "--catalog", "--json", "--csv", "--report"}},
      {"goodput", {"--set", "--catalog", "--json", "--csv"}},
      {"serve", {"--set", "--catalog", "--json", "--csv"}},
      {"collective", {"--cluster", "--set", "--json", "--csv", "--report", "--gpus"}},
      {"topology", {"--cluster", "--set", "--json", "--csv", "--report"}},
      {"calibrate", {"--cluster", "--set", "--json", "--csv", "--gpus"}},
      {"bench", {"--cluster", "--set", "--json", "--csv", "--gpus"}},
      {"validate", {"--json", "--csv"}},
      {"list", {"--catalog", "--json", "--csv"}},
      {"schema", {"--json", "--csv"}}};
  for (const auto& [command, options] : commands) {
    const auto r = run_cli(command + " --help");
    REQUIRE(r.exit_code == 0);
    for (const std::string& option : options) {
      INFO(command << " " << option);
      CHECK(std::regex_search(r.stdout_text, std::regex("[\\s,]" + option + "[ ,=]")));
    }
  }
}

TEST_CASE("every command that takes --gpus takes one GPU count: a list is an error naming --gpus", "[cli]") {
  for (const std::string& command : {"collective --cluster " + kCluster, "search " + kScenario, "bench --cluster " + kCluster,
                                     "calibrate --cluster " + kCluster + " " + source_path("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt")}) {
    const auto r = run_cli(command + " --gpus 8,16");
    INFO(command << ": " << r.stderr_text);
    CHECK(r.exit_code == 2);
    CHECK(r.stderr_text.rfind("error: command line: --gpus: expected ", 0) == 0);
  }
}
