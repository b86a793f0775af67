// `run JOBS.yaml --trace` and `--report`. The trace is one trace of the jobs running together: each
// job's GPUs are processes named after the job, each job's slices end at its own together time, and
// every pipeline arrow joins a send and a receive of one job (each job numbers its arrows alike, so
// a shared id would draw an arrow from one job into the other). The report draws each job alone and
// together: bars that add up to each run's iteration, and link tiers that carry, together, the sum
// of what each job carried alone.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "browser_check.hpp"
#include "html_text.hpp"
#include "one_line_error.hpp"
#include "support.hpp"

namespace test = clustersim::test;

namespace {

/// Two jobs of Megatron's 1.7B, each on 2 GPUs as pp 2 (pipeline transfers to draw), scattered
/// over the small fat tree's four one-GPU nodes: a on nodes 0 and 2, b on 1 and 3.
std::string two_pipelines() {
  const std::string job = test::small_megatron_scenario("multi-job-trace", test::kSmallFatTreeYaml, "{tp: 1, pp: 2, dp: 1}");
  const std::string dir = job.substr(0, job.rfind('/'));
  std::ofstream(dir + "/jobs.yaml") << "name: two-pipelines\ncluster: clusters/cluster.yaml\njobs:\n"
                                    << "  - {name: a, scenario: scenario.yaml, set: [gpus=2], placement: scattered}\n"
                                    << "  - {name: b, scenario: scenario.yaml, set: [gpus=2], placement: scattered}\n";
  return dir + "/jobs.yaml";
}

struct Traced {
  nlohmann::json trace, report;
};

Traced run_traced(const std::string& jobs, const std::string& extra = "") {
  const std::string trace = test::temp_file("", ".json");
  Traced out;
  out.report = test::cli_json("run " + jobs + " --trace " + trace + extra);
  std::ifstream in(trace);
  out.trace = nlohmann::json::parse(in);
  return out;
}

/// Process names by pid.
std::map<int, std::string> processes(const nlohmann::json& trace) {
  std::map<int, std::string> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") out[e["pid"].get<int>()] = e["args"]["name"];
  return out;
}

}  // namespace

TEST_CASE("a jobs run's trace names each GPU's job and ends each job's slices at its together time") {
  const Traced t = run_traced(two_pipelines());
  const auto named = processes(t.trace);
  std::map<std::string, std::set<int>> gpus_of;  // job -> its traced GPUs
  for (const auto& job : t.report["jobs"]) {
    INFO(job.dump());
    for (int node : job["nodes"]) {  // one GPU per node
      REQUIRE(named.count(node) == 1);
      CHECK(named.at(node).find("(job " + job["job"].get<std::string>() + ", pipeline rank ") != std::string::npos);
      gpus_of[job["job"]].insert(node);
    }
  }
  CHECK(named.size() == 4);
  CHECK(gpus_of["a"] == std::set<int>{0, 2});
  CHECK(gpus_of["b"] == std::set<int>{1, 3});
  std::map<int, double> end_us;
  for (const auto& e : t.trace["traceEvents"])
    if (e["ph"] == "X") end_us[e["pid"]] = std::max(end_us[e["pid"]], e["ts"].get<double>() + e["dur"].get<double>());
  for (const auto& job : t.report["jobs"]) {
    double last = 0;
    for (int gpu : gpus_of[job["job"]]) last = std::max(last, end_us[gpu]);
    CHECK(last == Approx(1e6 * job["together_s"].get<double>()).margin(0.01));
  }
  // Every arrow starts and finishes once, on two GPUs of one job.
  std::map<std::uint64_t, int> start_pid, finish_pid;
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["ph"] == "s") CHECK(start_pid.emplace(e["id"].get<std::uint64_t>(), e["pid"].get<int>()).second);
    if (e["ph"] == "f") CHECK(finish_pid.emplace(e["id"].get<std::uint64_t>(), e["pid"].get<int>()).second);
  }
  REQUIRE(start_pid.size() == 2 * 2 * 16);  // each job's 16 microbatches go forward once and back
  REQUIRE(finish_pid.size() == start_pid.size());
  for (const auto& [id, from] : start_pid) {
    INFO("arrow " << id);
    REQUIRE(finish_pid.count(id) == 1);
    const int to = finish_pid.at(id);
    CHECK(from != to);
    CHECK(from % 2 == to % 2);  // a's GPUs are even, b's odd
  }
}

TEST_CASE("a jobs run's --trace-ranks keeps those GPUs of the cluster, and names a GPU beyond it in one line") {
  const std::string jobs = two_pipelines();
  const Traced t = run_traced(jobs, " --trace-ranks 1,3");
  const auto named = processes(t.trace);
  REQUIRE(named.size() == 2);
  CHECK(named.at(1).find("job b") != std::string::npos);
  CHECK(named.at(3).find("job b") != std::string::npos);
  const std::string trace = test::temp_file("", ".json");
  test::require_one_line_error(test::run_cli("run " + jobs + " --trace " + trace + " --trace-ranks 0-4"),
                               "error: command line: --trace-ranks:", "expected an integer from 0 to 3");
  test::require_one_line_error(test::run_cli("run " + jobs + " --trace-ranks 0"), "error: command line: --trace-ranks:",
                               "expected --trace as well");
}

TEST_CASE("a jobs run's report draws each job alone and together, its links carrying every job's bytes together") {
  const std::string jobs = two_pipelines(), page = test::temp_file("", ".html");
  const nlohmann::json report = test::cli_json("run " + jobs + " --report " + page);
  const std::string html = test::read_file(page);
  for (const char* id : {"summary", "timeline", "breakdown", "memory", "links", "topology"})
    CHECK(test::count_of(html, std::string("<section id=\"") + id + "\"") == 1);
  // Each run's stage bars add up to its iteration: a and b, alone and together.
  const std::regex bar("<g class=\"bar\" data-run=\"([^\"]*)\" data-stage=\"([0-9]+)\" data-total=\"([^\"]+)\"");
  const std::string breakdown = test::section(html, "breakdown");
  std::map<std::string, double> total_s;
  for (auto b = std::sregex_iterator(breakdown.begin(), breakdown.end(), bar); b != std::sregex_iterator(); ++b)
    total_s[(*b)[1]] = std::stod((*b)[3]);
  REQUIRE(total_s.size() == 4);
  for (const auto& job : report["jobs"]) {
    const std::string name = job["job"];
    CHECK(total_s.at(name + " alone") == Approx(job["alone_s"].get<double>()).epsilon(1e-9));
    CHECK(total_s.at(name + " together") == Approx(job["together_s"].get<double>()).epsilon(1e-9));
  }
  // Link tables in page order: a alone, a together, b alone, b together; GB per tier.
  const std::string links = test::section(html, "links");
  const std::regex row("<tr data-tier=\"([^\"]+)\"><td>[^<]*</td><td>[^<]*</td><td class=\"num\">[0-9]+</td><td class=\"num\">([0-9.]+)</td>");
  std::vector<std::map<std::string, double>> tables;
  for (auto r = std::sregex_iterator(links.begin(), links.end(), row); r != std::sregex_iterator(); ++r) {
    if (tables.empty() || tables.back().count((*r)[1])) tables.emplace_back();
    tables.back()[(*r)[1]] = std::stod((*r)[2]);
  }
  REQUIRE(tables.size() == 4);
  double fabric_gb = 0;
  for (const auto& [tier, gb] : tables[0]) {
    INFO(tier);
    CHECK(tables[1].at(tier) == Approx(tables[0].at(tier) + tables[2].at(tier)).margin(0.11));  // each {:.1f}
    CHECK(tables[3].at(tier) == tables[1].at(tier));
    fabric_gb += gb;
  }
  CHECK(fabric_gb > 0);  // the pipeline transfers cross the fabric
  if (test::have_chromium()) {
    const std::vector<std::string> problems = test::browser_problems(
        page, {"summary", "timeline", "breakdown", "memory", "links", "topology"}, test::blank_screenshot_bytes());
    for (const std::string& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
  }
}
