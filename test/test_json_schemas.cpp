// Every --json document against the schema shipped for it (simulator/schemas/), read from the
// command's real output; and the schema checker itself (json_schema.hpp) on documents that break
// each keyword it implements.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "json_schema.hpp"
#include "support.hpp"

using namespace clustersim;
using clustersim::test::schema_problems;
using clustersim::test::source_path;

namespace {

const std::string kScenario = source_path("scenarios/validation/korthikanti-22b-full.yaml");  // 8 A100s, < 1 s
const std::string kA100 = source_path("scenarios/clusters/dgx-a100-superpod.yaml");

nlohmann::json schema_of(const std::string& command) {
  return nlohmann::json::parse(test::read_file(source_path("simulator/schemas/" + command + ".schema.json")));
}

/// The command's --json document, checked against its schema; returned for further checks.
nlohmann::json conforming(const std::string& command, const std::string& args) {
  const nlohmann::json j = test::cli_json(command + " " + args);
  const auto problems = schema_problems(schema_of(command), j);
  for (const std::string& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  CHECK(j.at("command") == command);
  return j;
}

std::set<std::string> keys(const nlohmann::json& object) {
  std::set<std::string> out;
  for (const auto& [k, _] : object.items()) out.insert(k);
  return out;
}

}  // namespace

TEST_CASE("run --json conforms to run.schema.json", "[json]") {
  const auto j = conforming("run", kScenario + " --set global_batch=8");
  CHECK(j.at("config").at("global_batch") == 8);  // the configuration after --set
}

TEST_CASE("compare --json conforms, and its stages carry run's field names", "[json]") {
  // korthikanti-22b-full has pp 1: dualpipe cannot run it, so both kinds of row are checked.
  const auto c = conforming("compare", kScenario + " --schedules 1f1b,dualpipe --set global_batch=8");
  REQUIRE(c.at("rows").size() == 2);
  CHECK(c.at("rows")[0].at("feasible") == true);
  CHECK(c.at("rows")[1].at("feasible") == false);
  const auto r = test::cli_json("run " + kScenario + " --set global_batch=8");
  // One name for one concept: a stage's fields, and the scenario's configuration, are the same in both.
  CHECK(keys(c.at("rows")[0].at("stages")[0]) == keys(r.at("stages")[0]));
  CHECK(keys(c.at("rows")[0].at("stages")[0].at("time_s")) == keys(r.at("stages")[0].at("time_s")));
  for (const auto& [k, v] : c.at("config").items())
    if (r.at("config").contains(k) && k != "fold") CHECK(r.at("config").at(k) == v);
  CHECK(c.at("rows")[0].at("iteration_s") == r.at("iteration_s"));
}

TEST_CASE("collective --json conforms to collective.schema.json", "[json]") {
  conforming("collective", "--cluster " + kA100 + " --gpus 8 -b 1M -e 4M");
  // --algo nccl adds the best-choice fields.
  conforming("collective", "--cluster " + kA100 + " --gpus 8 -b 1M -e 1M --algo nccl");
}

TEST_CASE("topology --json conforms to topology.schema.json", "[json]") { conforming("topology", kA100); }

TEST_CASE("list --json conforms and lists what the text lists", "[json]") {
  const auto j = conforming("list", "");
  const auto text = test::run_cli("list").stdout_text;
  REQUIRE(!j.at("schedules").empty());
  for (const auto& s : j.at("schedules")) CHECK(text.find(s.at("name").get<std::string>()) != std::string::npos);
  REQUIRE(!j.at("gpus").empty());  // the shipped catalog, found from the build tree
  // Serving's named choices: the table the serving reader checks values against.
  REQUIRE(!j.at("serving").empty());
  for (const auto& c : j.at("serving"))
    CHECK(text.find(c.at("key").get<std::string>() + ": " + c.at("name").get<std::string>()) != std::string::npos);
}

TEST_CASE("validate --json conforms, and its error is the published figure's", "[json]") {
  const auto j = conforming("validate", "--only korthikanti-22b-full");
  REQUIRE(j.at("rows").size() == 1);
  const auto& row = j.at("rows")[0];
  CHECK(row.at("published_iteration_s") == 1.42);  // scenarios/validation/published.yaml
  const double predicted = row.at("iteration_s");
  CHECK(row.at("error_pct").get<double>() == Approx(100 * (predicted - 1.42) / 1.42));
  CHECK(j.at("sets").at(0).at("rows_predicted") == 1);
}

TEST_CASE("calibrate --json conforms to calibrate.schema.json", "[json]") {
  const auto j = conforming("calibrate", "--cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + " " +
                                             source_path("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt"));
  CHECK(!j.at("nccl_tests_residuals").empty());
}

TEST_CASE("bench --json conforms to bench.schema.json", "[json]") {
  const auto j = conforming("bench", "--cluster " + kA100 + " --gpus 8 --size 1M --repeat 1");
  REQUIRE(j.at("rows").size() == 1);
  CHECK(j.at("rows")[0].at("gpus") == 8);
}

TEST_CASE("search --json conforms to search.schema.json", "[json]") {
  const auto j = conforming("search", source_path("scenarios/validation/narayanan-1.7b.yaml") + " --vary pp --top 2 -j 2 -q");
  CHECK(j.at("rows").size() == 2);
}

TEST_CASE("sweep --json conforms to sweep.schema.json", "[json]") {
  const auto j = conforming("sweep", source_path("scenarios/validation/narayanan-1.7b.yaml") +
                                         " --vary pp --top 1 -j 2 -q --vary-cluster oversubscription.1=1,2");
  CHECK(j.at("points").size() == 2);
}

TEST_CASE("goodput --json conforms to goodput.schema.json, its Monte-Carlo with --trials", "[json]") {
  // --fold assume: the 16K-GPU step replica 0 alone (a second; every replica, as by default, is half a minute).
  const auto j = conforming("goodput", source_path("scenarios/llama3-405b-h100-16k-goodput.yaml") + " --days 54 --trials 100 --fold assume");
  CHECK(j.contains("monte_carlo"));
  CHECK(j.at("fold") == "assume");
}

TEST_CASE("serve --json conforms to serve.schema.json, with an SLO, disaggregation, speculation, host time, data-parallel attention and --capacity", "[json]") {
  const auto j = conforming("serve", source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") + " --set serving.requests.duration_s=5");
  CHECK(j.at("summary").contains("goodput_requests_per_s"));
  CHECK(j.at("requests").size() == j.at("summary").at("requests"));
  const auto d = conforming("serve", source_path("scenarios/serving/llama3-70b-h100-disagg.yaml") + " --set serving.requests.duration_s=3");
  CHECK(d.at("summary").contains("kv_transfer_mean_s"));
  const auto sp = conforming("serve", source_path("scenarios/serving/llama3-70b-h100-speculative.yaml") + " --set serving.requests.duration_s=5");
  CHECK(sp.at("summary").contains("tokens_per_decode_step"));
  const auto h = conforming("serve", source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") +
                                         " --set serving.requests.duration_s=2 --set serving.host.iteration=2ms --set serving.host.overlap=true");
  CHECK(h.at("config").at("host").at("iteration_s") == Approx(2e-3));
  CHECK(h.at("config").at("host").at("overlap") == true);
  const auto dp = conforming("serve", source_path("scenarios/serving/deepseek-v3-h100-dp-attention.yaml") + " --set serving.requests.duration_s=5");
  CHECK(dp.at("config").at("parallel").at("dp_attention") == 16);
  const auto cap = conforming("serve", source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") + " --capacity --set serving.requests.duration_s=30");
  CHECK(cap.at("capacity").at("probes").size() >= 3);
  CHECK_FALSE(cap.contains("requests"));
  const auto vary = conforming("serve", source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") +
                                            " --capacity --vary serving.parallel.tp=1,8 --set serving.requests.duration_s=10");
  CHECK(vary.at("capacity").at("variants").size() == 2);
  const auto runs = conforming("serve", source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") +
                                            " --vary serving.parallel.tp=1,8 --set serving.requests.duration_s=5");
  CHECK(runs.at("variants").size() == 2);
}

TEST_CASE("schema --json conforms to schema.schema.json and lists every key of the reference", "[json]") {
  const nlohmann::json j = conforming("schema", "");
  CHECK(j.at("keys").size() > 150);
  for (const auto& k : j.at("keys")) CHECK(k.at("required").get<bool>() == k.at("default").is_null());
}

TEST_CASE("every shipped schema uses only the keywords the checker implements", "[json]") {
  for (const char* command : {"run", "compare", "collective", "topology", "list", "validate", "calibrate", "bench", "search", "sweep", "goodput", "serve", "schema"}) {
    INFO(command);
    const nlohmann::json schema = schema_of(command);
    CHECK(schema.at("properties").at("schema_version").at("enum") == nlohmann::json::array({2}));
    // A document with every field missing reports each required field (and those of the anyOf
    // branch that requires fewest, where the schema has branches), and nothing about keywords.
    const auto problems = schema_problems(schema, nlohmann::json::object());
    std::size_t fewest = 0;
    if (schema.contains("anyOf")) {
      fewest = schema.at("anyOf")[0].at("required").size();
      for (const auto& branch : schema.at("anyOf")) fewest = std::min(fewest, branch.at("required").size());
    }
    CHECK(problems.size() == schema.at("required").size() + fewest);
    for (const std::string& p : problems) CHECK(p.find("expected the field") != std::string::npos);
  }
}

TEST_CASE("the schema checker reports each keyword's violation at its path", "[json]") {
  const nlohmann::json schema = nlohmann::json::parse(R"({
    "type": "object", "required": ["rows", "kind"],
    "properties": {
      "kind": {"type": "string", "enum": ["a", "b"]},
      "rows": {"type": "array", "items": {"type": "object", "required": ["n"],
               "properties": {"n": {"type": "integer", "minimum": 1}, "x": {"type": ["number", "null"]}}}}}})");
  CHECK(schema_problems(schema, nlohmann::json::parse(R"({"kind": "a", "rows": [{"n": 1, "x": null}, {"n": 2.0, "x": 0.5}]})")).empty());
  using V = std::vector<std::string>;
  CHECK(schema_problems(schema, nlohmann::json::parse(R"({"kind": "c", "rows": []})")) ==
        V{"/kind: expected one of [\"a\",\"b\"], got \"c\""});
  CHECK(schema_problems(schema, nlohmann::json::parse(R"({"kind": "a"})")) == V{"/: expected the field 'rows'"});
  CHECK(schema_problems(schema, nlohmann::json::parse(R"({"kind": "a", "rows": [{"n": 0}, {"n": 1.5}, {"x": "y"}]})")) ==
        V{"/rows/0/n: expected a number >= 1, got 0", "/rows/1/n: expected integer, got 1.5",
          "/rows/2: expected the field 'n'", "/rows/2/x: expected number or null, got \"y\""});
  CHECK(schema_problems(schema, nlohmann::json::array()) == V{"/: expected object, got []"});
  const nlohmann::json either = nlohmann::json::parse(R"({"anyOf": [{"required": ["a", "b"]}, {"required": ["c"]}]})");
  CHECK(schema_problems(either, nlohmann::json::parse(R"({"a": 1, "b": 2})")).empty());
  CHECK(schema_problems(either, nlohmann::json::parse(R"({"c": 1})")).empty());
  CHECK(schema_problems(either, nlohmann::json::parse(R"({"a": 1})")) ==
        V{"/: expected the field 'b' (in the anyOf branch nearest to conforming)"});
  CHECK(schema_problems(nlohmann::json::parse(R"({"type": "object", "additionalProperties": false})"), nlohmann::json::object()) ==
        V{"/: the schema uses 'additionalProperties', which this checker does not implement"});
}

TEST_CASE("a --json to a folder that does not exist is one line, exit 2, before anything runs", "[json]") {
  const std::string bad = "/no/such/folder/out.json";
  const std::string line = "error: " + bad + ": --json: cannot write: the directory '/no/such/folder' does not exist\n";
  for (const std::string& args : std::vector<std::string>{
           "run " + kScenario, "compare " + kScenario + " --schedules 1f1b", "collective --cluster " + kA100 + " --gpus 8",
           "topology " + kA100, "list", "validate --only korthikanti-22b-full",
        "calibrate --cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + " " +
            source_path("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt"),
        "bench --cluster " + kA100 + " --gpus 8 --size 1M --repeat 1"}) {
    const auto r = test::run_cli(args + " --json " + bad);
    INFO(args);
    CHECK(r.exit_code == 2);
    CHECK(r.stdout_text.empty());
    CHECK(r.stderr_text == line);
  }
}
