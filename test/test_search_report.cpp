// `search --report` and `sweep --report`: the page holds what the command's --json holds (each
// verified configuration, each cluster point, the Pareto front), search's page draws its fastest
// configuration's iteration as run's page does, and both open in headless Chromium without a
// console message, every section drawn.
#include <catch2/catch.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "browser_check.hpp"
#include "html_text.hpp"
#include "one_line_error.hpp"
#include "support.hpp"

using namespace clustersim;
using clustersim::test::count_of;
using clustersim::test::run_cli;
using clustersim::test::section;
using clustersim::test::source_path;
using clustersim::test::temp_file;

namespace {

const std::string kScenario = source_path("scenarios/validation/narayanan-1.7b.yaml");

/// Runs `args` with --report and --json to fresh files; returns (page, document).
std::pair<std::string, nlohmann::json> report_and_json(const std::string& args) {
  const std::string html = temp_file("", ".html"), json = temp_file("", ".json");
  const auto r = run_cli(args + " --report " + html + " --json " + json);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  auto out = std::make_pair(test::read_file(html), nlohmann::json::parse(test::read_file(json)));
  std::remove(html.c_str());
  std::remove(json.c_str());
  return out;
}

void check_in_browser(const std::string& html, const std::vector<std::string>& sections) {
  if (!test::have_chromium()) {
    WARN("chromium is not installed (Debian: apt-get install chromium): the browser check is skipped");
    return;
  }
  const std::string page = temp_file(html, ".html");
  const std::size_t blank = test::blank_screenshot_bytes();
  REQUIRE(blank > 0);
  const auto problems = test::browser_problems(page, sections, blank);
  for (const std::string& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  std::remove(page.c_str());
}

}  // namespace

TEST_CASE("search --report lists every verified configuration, marks the front and draws the fastest's iteration", "[report]") {
  const auto [html, j] = report_and_json("search " + kScenario + " --vary pp,microbatch --top 3 -j 2 -q");
  const std::string table = section(html, "configurations");
  REQUIRE(j.at("rows").size() == 3);
  CHECK(count_of(table, "<tr data-config=") == 3);
  for (const auto& row : j.at("rows")) {
    INFO(row.dump());
    // Each row, in the JSON's order (search's ranking), with the engine's figure as the text prints it.
    const std::string config = row.at("configuration").get<std::string>();
    CHECK(count_of(table, "<tr data-config=\"" + config + "\"") == 1);
  }
  CHECK(count_of(table, "<td>front</td>") == j.at("pareto").size());
  // The fastest verified configuration's iteration, drawn as run --report draws one: its timeline
  // has one compute row per pipeline rank.
  const std::string fastest = j.at("rows")[0].at("configuration");
  CHECK(count_of(html, "<h2 class=\"fastest\">The fastest configuration, " + fastest + "</h2>") == 1);
  const int pp = j.at("rows")[0].at("pp");
  CHECK(count_of(section(html, "timeline"), "data-stream=\"compute\"") == static_cast<std::size_t>(pp));
  CHECK(count_of(section(html, "breakdown"), "<g class=\"bar\"") == static_cast<std::size_t>(pp));
  CHECK(count_of(html, "<svg") >= 4);  // the front, the timeline, breakdown, memory (and the cluster)
  check_in_browser(html, {"search", "configurations", "pareto", "summary", "timeline", "breakdown", "memory", "links", "topology"});
}

TEST_CASE("sweep --report lists every cluster point with its best configuration and draws the front", "[report]") {
  const auto [html, j] =
      report_and_json("sweep " + kScenario + " --vary pp --top 1 -j 2 -q --vary-cluster oversubscription.1=1,2");
  const std::string points = section(html, "points");
  REQUIRE(j.at("points").size() == 2);
  for (const auto& p : j.at("points")) {
    const std::string point = p.at("point");
    INFO(point);
    const auto at = points.find("<tr data-point=\"" + point + "\"");
    REQUIRE(at != std::string::npos);
    CHECK(count_of(points, "<tr data-point=\"" + point + "\"") == 1);
    const std::string row = points.substr(at, points.find("</tr>", at) - at);
    CHECK(count_of(row, "<td>" + p.at("best").at("configuration").get<std::string>() + "</td>") == 1);
  }
  CHECK(count_of(points, "<td>front</td>") == j.at("pareto").size());
  CHECK(count_of(section(html, "pareto"), "<svg") == 1);
  CHECK(count_of(section(html, "configurations"), "<h3>") == 2);
  check_in_browser(html, {"sweep", "points", "pareto", "configurations"});
}

TEST_CASE("search --report and sweep --report to a folder that does not exist are one line, exit 2, before anything runs", "[report]") {
  test::require_one_line_error(run_cli("search " + kScenario + " --vary pp --top 1 --report /no/such/folder/s.html"),
                               "error: /no/such/folder/s.html: --report: ", "does not exist");
  test::require_one_line_error(
      run_cli("sweep " + kScenario + " --vary pp --top 1 --vary-cluster oversubscription.1=1 --report /tmp"), "error: /tmp: --report: ",
      "got a directory");
}
