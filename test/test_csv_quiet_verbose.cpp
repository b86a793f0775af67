// --csv (a table as CSV, the same fields and values as --json's rows), -q (no text report) and -v
// (diagnostics on stderr through spdlog, never on stdout).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;
using Catch::Matchers::Contains;

namespace {

const std::string kScenario = source_path("scenarios/validation/korthikanti-22b-full.yaml");  // 8 A100s, < 1 s
const std::string kA100 = source_path("scenarios/clusters/dgx-a100-superpod.yaml");

using Table = std::vector<std::vector<std::string>>;

/// RFC 4180 read back: quoted cells may hold commas, doubled quotes and line breaks.
Table parse_csv(const std::string& text) {
  Table rows(1);
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') cell += '"', ++i;
      else if (c == '"') quoted = false;
      else cell += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',' || c == '\n') {
      rows.back().push_back(cell);
      cell.clear();
      if (c == '\n') rows.emplace_back();
    } else {
      cell += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

std::size_t column(const Table& t, const std::string& name) {
  for (std::size_t c = 0; c < t[0].size(); ++c)
    if (t[0][c] == name) return c;
  FAIL("no column " << name);
  return 0;
}

test::CliResult ok(const std::string& args) {
  const auto r = run_cli(args);
  INFO(args << "\n" << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("collective --csv - is the table's rows with the JSON rows' names and values, alone on stdout", "[csv]") {
  const std::string args = "collective --cluster " + kA100 + " --gpus 8 -b 1M -e 4M";
  const Table t = parse_csv(ok(args + " --csv -").stdout_text);
  const auto j = test::cli_json(args);
  REQUIRE(t.size() == j.at("rows").size() + 1);  // the header, then one line per size
  for (std::size_t i = 0; i < j.at("rows").size(); ++i) {
    const auto& row = j.at("rows")[i];
    CHECK(std::stoll(t[i + 1][column(t, "size_bytes")]) == row.at("size_bytes").get<long long>());
    CHECK(std::stod(t[i + 1][column(t, "busbw_GBps")]) == row.at("busbw_GBps").get<double>());
    CHECK(t[i + 1][column(t, "algorithm")] == row.at("algorithm").get<std::string>());
  }
}

TEST_CASE("run --csv writes one line per stage, nested fields named with dots", "[csv]") {
  const std::string file = test::temp_file("", ".csv");
  const auto r = ok("run " + kScenario + " --csv " + file);
  CHECK_THAT(r.stdout_text, Contains("iteration"));  // the text report still goes to stdout
  const Table t = parse_csv(test::read_file(file));
  const auto j = test::cli_json("run " + kScenario);
  REQUIRE(t.size() == j.at("stages").size() + 1);
  CHECK(std::stod(t[1][column(t, "time_s.bubble")]) == j.at("stages")[0].at("time_s").at("bubble").get<double>());
  CHECK(std::stod(t[1][column(t, "memory_bytes.total")]) == j.at("stages")[0].at("memory_bytes").at("total").get<double>());
}

TEST_CASE("compare --csv quotes a cell with commas or quotes, and reads back as JSON's", "[csv]") {
  // dualpipe cannot run pp 1: its row's why is a sentence with commas.
  const std::string args = "compare " + kScenario + " --schedules 1f1b,dualpipe --set global_batch=8";
  const Table t = parse_csv(ok(args + " --csv -").stdout_text);
  const auto j = test::cli_json(args);
  REQUIRE(t.size() == 3);
  CHECK(t[2][column(t, "schedule")] == "dualpipe");
  CHECK(t[2][column(t, "feasible")] == "false");
  CHECK(t[2][column(t, "why")] == j.at("rows")[1].at("why").get<std::string>());
  CHECK(t[2][column(t, "iteration_s")].empty());  // not in an infeasible row
}

TEST_CASE("validate and bench take --csv too", "[csv]") {
  const Table v = parse_csv(ok("validate --only korthikanti-22b-full --csv -").stdout_text);
  REQUIRE(v.size() == 2);
  CHECK(std::stod(v[1][column(v, "published_iteration_s")]) == 1.42);
  const Table b = parse_csv(ok("bench --cluster " + kA100 + " --gpus 8 --size 1M --repeat 1 --csv -").stdout_text);
  REQUIRE(b.size() == 2);
  CHECK(b[1][column(b, "gpus")] == "8");
}

TEST_CASE("a --csv and --json both to stdout, or --csv to a folder that does not exist, is one line, exit 2", "[csv]") {
  auto r = run_cli("run " + kScenario + " --json - --csv -");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text == "error: command line: --csv: expected a file: --json already writes to stdout\n");
  r = run_cli("collective --cluster " + kA100 + " --gpus 8 -b 1M -e 1M --csv /no/such/folder/x.csv");
  CHECK(r.exit_code == 2);
  CHECK(r.stderr_text == "error: /no/such/folder/x.csv: --csv: cannot write: the directory '/no/such/folder' does not exist\n");
}

TEST_CASE("quiet (-q) leaves the text report out of stdout and still writes the files", "[cli]") {
  const std::string file = test::temp_file("", ".json");
  const auto r = ok("run " + kScenario + " -q --json " + file);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text.empty());
  CHECK(nlohmann::json::parse(test::read_file(file)).at("command") == "run");
  CHECK(ok("-q list").stdout_text.empty());
  CHECK(ok("topology " + kA100 + " --quiet").stdout_text.empty());
}

TEST_CASE("verbose (-v) logs what was read, and each step of compare, to stderr only", "[cli]") {
  const auto plain = ok("run " + kScenario);
  CHECK(plain.stderr_text.empty());
  const auto v = ok("run " + kScenario + " -v");
  CHECK(v.stdout_text == plain.stdout_text);
  CHECK_THAT(v.stderr_text, Contains("clustersim: scenario korthikanti-22b-full (") &&
                                Contains("8 GPUs as tp 8 x cp 1 x pp 1 x dp 1"));
  const auto c = ok("-v compare " + kScenario + " --schedules 1f1b,gpipe --set global_batch=8");
  CHECK_THAT(c.stderr_text, Contains("clustersim: compare: schedule 1 of 2: 1f1b\nclustersim: compare: schedule 2 of 2: gpipe\n"));
  const auto vv = ok("run " + kScenario + " -vv --set global_batch=8");
  CHECK_THAT(vv.stderr_text, Contains("clustersim: --set global_batch=8"));
}

TEST_CASE("topology --csv - is one row of the JSON document's figures, tiers as columns by name", "[csv]") {
  const std::string args = "topology --cluster " + kA100;
  const Table t = parse_csv(ok(args + " --csv -").stdout_text);
  const auto j = test::cli_json(args);
  REQUIRE(t.size() == 2);
  CHECK(std::stol(t[1][column(t, "gpus")]) == j.at("gpus").get<long>());
  CHECK(std::stod(t[1][column(t, "bisection_Bps")]) == j.at("bisection_Bps").get<double>());
  CHECK(std::stod(t[1][column(t, "oversubscription.leaf.ratio")]) == j["oversubscription_per_tier"][0]["ratio"].get<double>());
  CHECK(std::stol(t[1][column(t, "links_per_type.hdr")]) == j["links_per_type"]["hdr"].get<long>());
}

TEST_CASE("list --csv - has a row for everything the JSON lists, with its kind", "[csv]") {
  const Table t = parse_csv(ok("list --csv -").stdout_text);
  const auto j = test::cli_json("list");
  std::size_t listed = 0;
  for (const char* kind : {"commands", "algorithms", "protocols", "fabrics", "solvers", "schedules", "serving", "gpus"}) listed += j.at(kind).size();
  REQUIRE(t.size() == listed + 1);
  CHECK(t[0] == std::vector<std::string>{"kind", "name", "description"});
  std::size_t fabrics = 0;
  for (const auto& row : t) fabrics += row[0] == "fabrics";
  CHECK(fabrics == j.at("fabrics").size());
}

TEST_CASE("calibrate --csv writes both residual tables as one, a row per input row", "[csv]") {
  const std::string args = "calibrate --cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + " " +
                           source_path("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt");
  const Table t = parse_csv(ok(args + " --csv -").stdout_text);
  const auto j = test::cli_json(args);
  REQUIRE(t.size() == j.at("nccl_tests_residuals").size() + j.at("iteration_residuals").size() + 1);
  REQUIRE(t.size() > 2);
  for (std::size_t i = 0; i < j.at("nccl_tests_residuals").size(); ++i) {
    CHECK(t[i + 1][column(t, "table")] == "nccl_tests_residuals");
    CHECK(std::stod(t[i + 1][column(t, "busbw_GBps")]) == j["nccl_tests_residuals"][i]["busbw_GBps"].get<double>());
  }
}
