// `--report FILE.html`: the page's content checked against the run it draws (a row per stream, the
// breakdown's bars adding up to the iteration, chunks as the interleaved table places them, round
// time ticks), compare's schedules on one time scale with a row for one that cannot run, the same
// bytes on a rerun, and the page opened in headless Chromium (Debian's `chromium`): no console
// message (the page has no script, so any is an error), every section present, a picture drawn.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "simulator/report_html.hpp"
#include "simulator/report_timeline.hpp"
#include "simulator/svg_draw.hpp"
#include "simulator/training_run.hpp"
#include "browser_check.hpp"
#include "html_text.hpp"
#include "support.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::count_of;
using clustersim::test::run_cli;
using clustersim::test::section;
using clustersim::test::source_path;
using clustersim::test::temp_file;
using clustersim::test::browser_problems;
using clustersim::test::have_chromium;

namespace {

const std::string kScenario = source_path("scenarios/gpt3-175b-h100-pp16.yaml");
// 16 microbatches per pipeline (64 / dp 4): p, enough for 1F1B and interleaving, fewer than
// DualPipe-V's 2p. Kept small so a run takes a second.
const std::string kSmall = " --set global_batch=64";
const std::vector<std::string> kSections{"summary", "timeline", "breakdown", "memory", "links", "collectives"};

/// Each `<g class="bar" ...>` of a section: (run, stage) -> the data-value of its parts, summed.
std::map<std::pair<std::string, int>, double> bar_sums(const std::string& html) {
  std::map<std::pair<std::string, int>, double> out;
  const std::regex group("<g class=\"bar\" data-run=\"([^\"]*)\" data-stage=\"([0-9]+)\"[^>]*>([^]*?)</g>");
  const std::regex part("data-value=\"([^\"]+)\"");
  for (auto g = std::sregex_iterator(html.begin(), html.end(), group); g != std::sregex_iterator(); ++g) {
    const std::string body = (*g)[3];
    double sum = 0;
    for (auto p = std::sregex_iterator(body.begin(), body.end(), part); p != std::sregex_iterator(); ++p)
      sum += std::stod((*p)[1]);
    out[{(*g)[1], std::stoi((*g)[2])}] = sum;
  }
  return out;
}

/// A tick label in seconds: "250 ms" -> 0.25, "1.5 s" -> 1.5.
double tick_s(const std::string& label) {
  const auto space = label.find(' ');
  const double v = std::stod(label.substr(0, space));
  const std::string unit = label.substr(space + 1);
  REQUIRE((unit == "s" || unit == "ms"));
  return unit == "ms" ? v / 1e3 : v;
}

}  // namespace

TEST_CASE("time ticks are 1, 2 or 5 times a power of ten, in ms under a second apart and in s above") {
  // 23.4 s over at most 8 intervals: 2.93 s is the least step, 5 s the next round one; 0 to 25 s.
  const std::vector<TimeTick> slow = time_ticks(23.4);
  REQUIRE(slow.size() == 6);
  CHECK(slow.front().label == "0 s");
  CHECK(slow[1].label == "5 s");
  CHECK(slow.back().label == "25 s");
  CHECK(slow.back().at_s == Approx(25));
  // 0.85 s: 0.106 s, so 0.2 s steps, in ms: 0, 200, ..., 1000 ms.
  const std::vector<TimeTick> fast = time_ticks(0.85);
  REQUIRE(fast.size() == 6);
  CHECK(fast[1].label == "200 ms");
  CHECK(fast.back().label == "1000 ms");
  // 3.2 ms: 0.4 ms, so 0.5 ms steps, one decimal: 0.0, 0.5, ..., 3.5 ms.
  const std::vector<TimeTick> tiny = time_ticks(3.2e-3);
  REQUIRE(tiny.size() == 8);
  CHECK(tiny[1].label == "0.5 ms");
  CHECK(tiny[3].label == "1.5 ms");
  // 1 s exactly: 0.125 s, so 0.2 s: the last tick is the span itself.
  CHECK(time_ticks(1.0).back().label == "1000 ms");
  CHECK(time_ticks(0).size() == 1);
}

TEST_CASE("a run's report has a row per stream of each rank, chunks as interleaving places them, and bars that add up") {
  const ScenarioSpec s = load_scenario(kScenario, {"global_batch=64", "schedule=interleaved", "parallel.virtual_stages=2"});
  const RunReport r = run_training(s, false, nullptr, FoldMode::assume, Solver::fluid, Placements{}, true);
  const int p = s.layout.pp;
  ReportPage page;
  page.title = "test";
  page.gpu = s.gpu.name;
  page.hbm_bytes = s.gpu.hbm_bytes;
  page.runs.push_back(report_run(r, "interleaved"));
  const std::string html = report_html(page);
  for (const std::string& id : kSections) CHECK(count_of(html, std::string("<section id=\"") + id + "\"") == 1);
  // A row per distinct collective the run lists, each with what ran it.
  REQUIRE(!r.iteration.collectives.empty());
  CHECK(count_of(html, "<tr data-what=") == r.iteration.collectives.size());
  for (const CollectiveRun& c : r.iteration.collectives)
    CHECK(count_of(html, fmt::format("<td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>", c.algorithm, c.protocol, c.channels)) > 0);

  // Streams: every non-compute event of the run's events, by the rank whose GPU it names.
  std::set<std::string> streams;
  std::map<std::pair<int, std::string>, std::size_t> spans;
  for (const TraceEvent& e : r.iteration.events) {
    if (e.stream == "compute") continue;
    streams.insert(e.stream);
    for (int k = 0; k < p; ++k)
      if (r.rank_gpus[static_cast<std::size_t>(k)] == e.gpu) ++spans[{k, e.stream}];
  }
  REQUIRE(streams.count("pp") == 1);  // pipeline sends and the gradient reduction exist in this run
  REQUIRE(streams.count("dp") == 1);
  const std::string timeline = section(html, "timeline");
  CHECK(count_of(timeline, "<g class=\"row\"") == static_cast<std::size_t>(p) * (1 + streams.size()));
  for (int k = 0; k < p; ++k) {
    const std::string head = "<g class=\"row\" data-run=\"interleaved\" data-rank=\"" + std::to_string(k) + "\" data-stream=\"";
    CHECK(count_of(timeline, head + "compute\"") == 1);
    for (const std::string& st : streams) {
      const auto at = timeline.find(head + st + "\"");
      REQUIRE(at != std::string::npos);
      const std::string row = timeline.substr(at, timeline.find("</g>", at) - at);
      CHECK(count_of(row, "<rect") == spans[{k, st}]);
    }
  }
  // Interleaving gives rank k the model stages k and k + p: chunk = stage / p.
  const std::vector<int> chunks = pass_chunks(r.iteration.passes);
  std::size_t second_chunk = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    CHECK(chunks[i] == r.iteration.passes[i].stage / p);
    second_chunk += chunks[i] == 1;
  }
  CHECK(second_chunk == r.iteration.passes.size() / 2);
  CHECK(count_of(timeline, "fill=\"url(#chunk1)\" pointer-events") == second_chunk);
  CHECK(count_of(timeline, " chunk 1 (stage ") == second_chunk);

  // Time axis: from 0 in round steps to the first tick past the iteration, above and below.
  std::vector<double> ticks;
  const std::regex tick("<text class=\"tick\"[^>]*>([^<]+)</text>");
  for (auto t = std::sregex_iterator(timeline.begin(), timeline.end(), tick); t != std::sregex_iterator(); ++t)
    ticks.push_back(tick_s((*t)[1]));
  REQUIRE(ticks.size() >= 6);
  REQUIRE(ticks.size() % 2 == 0);
  const std::size_t n = ticks.size() / 2;
  const double step = ticks[1] - ticks[0];
  CHECK(ticks[0] == 0);
  for (std::size_t i = 0; i < n; ++i) CHECK(ticks[i] == Approx(i * step));
  CHECK(ticks[n - 1] >= r.iteration_s);
  CHECK(ticks[n - 2] < r.iteration_s);

  // The breakdown's parts add up to the iteration on every stage, memory's to the stage's total.
  const auto time_bars = bar_sums(section(html, "breakdown"));
  REQUIRE(time_bars.size() == static_cast<std::size_t>(p));
  for (const auto& [key, sum] : time_bars) CHECK(sum == Approx(r.iteration_s).epsilon(1e-9));
  const auto memory_bars = bar_sums(section(html, "memory"));
  REQUIRE(memory_bars.size() == static_cast<std::size_t>(p));
  for (const auto& [key, sum] : memory_bars)
    CHECK(sum == Approx(static_cast<double>(r.stages[static_cast<std::size_t>(key.second)].memory.total)).epsilon(1e-12));

  // Link tiers: one row per tier; bytes over capacity x time is the mean utilization.
  const std::string links = section(html, "links");
  REQUIRE_FALSE(r.link_tiers.empty());
  for (const LinkTierLoad& t : r.link_tiers) CHECK(count_of(links, "<tr data-tier=\"" + t.tier + "\"") >= 1);
}

TEST_CASE("compare --report draws every schedule on one time scale, says why one could not run, and reruns byte for byte") {
  const std::string a = temp_file("", ".html"), b = temp_file("", ".html");
  const std::string args = "compare " + kScenario + kSmall + " --schedules 1f1b,interleaved,dualpipev --report ";
  const auto first = run_cli(args + a);
  REQUIRE(first.exit_code == 0);
  REQUIRE(run_cli(args + b).exit_code == 0);
  const std::string html = test::read_file(a);
  CHECK(html == test::read_file(b));
  // DualPipe-V needs 2p = 32 microbatches; the table says why, and so does the report.
  REQUIRE(first.stdout_text.find("dualpipev      infeasible") != std::string::npos);
  const std::string timeline = section(html, "timeline");
  CHECK(count_of(timeline, "<g class=\"infeasible\" data-run=\"dualpipev\"") == 1);
  CHECK(count_of(timeline, "could not run: ") == 1);
  CHECK(count_of(section(html, "summary"), "could not run: ") == 1);
  // Each feasible schedule's collectives crossed from its child process; the infeasible one says why.
  const std::string collectives = section(html, "collectives");
  CHECK(count_of(collectives, "<table class=\"collectives\">") == 2);
  CHECK(count_of(collectives, "<tr data-what=\"gradients\">") >= 2);
  CHECK(count_of(collectives, "could not run: ") == 1);
  // One scale: each run's outline is its iteration time at the same pixels per second.
  const std::regex title("<text class=\"run-title\"[^>]*>([^<]+): [0-9.]+ m?s</text>\n<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\"");
  std::vector<double> px_per_s;
  const std::regex seconds("<td class=\"num\">([0-9.]+) s</td>");
  std::vector<double> iteration_s;
  const std::string summary = section(html, "summary");
  for (auto m = std::sregex_iterator(summary.begin(), summary.end(), seconds); m != std::sregex_iterator(); ++m)
    iteration_s.push_back(std::stod((*m)[1]));
  std::vector<double> widths;
  for (auto m = std::sregex_iterator(timeline.begin(), timeline.end(), title); m != std::sregex_iterator(); ++m)
    widths.push_back(std::stod((*m)[2]));
  REQUIRE(widths.size() == 2);
  REQUIRE(iteration_s.size() == 2);
  // The summary's times are rounded to 1 ms: the ratio agrees to that.
  CHECK(widths[0] / iteration_s[0] == Approx(widths[1] / iteration_s[1]).epsilon(2e-3 / std::min(iteration_s[0], iteration_s[1])));
  // Each feasible schedule's breakdown and memory bars; none for the one that could not run.
  CHECK(count_of(section(html, "breakdown"), "<g class=\"bar\" data-run=\"1f1b (v 1)\"") == 16);
  CHECK(count_of(section(html, "breakdown"), "<g class=\"bar\" data-run=\"interleaved (v 2)\"") == 16);
  CHECK(count_of(section(html, "breakdown"), "<g class=\"bar\" data-run=\"dualpipev\"") == 0);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST_CASE("run --report draws the cluster at the level asked, and at the finest readable one otherwise") {
  const std::string html = temp_file("", ".html");
  REQUIRE(run_cli("run " + kScenario + kSmall + " --report " + html + " --topology-level spine").exit_code == 0);
  const std::string page = test::read_file(html);
  const std::string picture = section(page, "topology");
  CHECK(count_of(picture, "<svg ") == 1);
  CHECK(count_of(picture, "at the spine level") == 1);
  CHECK(count_of(picture, "the job runs on its first 512 of") == 1);
  REQUIRE(run_cli("run " + kScenario + kSmall + " --report " + html).exit_code == 0);
  CHECK(count_of(section(test::read_file(html), "topology"), "(the finest with at most 40 boxes;") == 1);
  const auto bad = run_cli("run " + kScenario + " --topology-level spine");
  CHECK(bad.exit_code == 2);
  CHECK(bad.stderr_text ==
        "error: command line: --topology-level: expected --report as well: it sets the level of the report's cluster picture\n");
}

TEST_CASE("run --report and collective --report write the same bytes when rerun") {
  const std::string a = temp_file("", ".html"), b = temp_file("", ".html");
  for (const std::string& args :
       {"run " + kScenario + kSmall + " --set schedule=zb-v --set parallel.virtual_stages=2 --report ",
        "collective --cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + " --gpus 16 -b 1K -e 1G -f 8 --report "}) {
    REQUIRE(run_cli(args + a).exit_code == 0);
    REQUIRE(run_cli(args + b).exit_code == 0);
    const std::string first = test::read_file(a);
    CHECK(first.size() > 1000);
    CHECK(first == test::read_file(b));
  }
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST_CASE("compare's and collective's pages open in headless Chromium without a console message, every section drawn") {
  if (!have_chromium()) {
    WARN("chromium is not installed (Debian: apt-get install chromium): the browser check is skipped");
    SUCCEED();
    return;
  }
  // compare's page holds everything run's does, and a schedule that could not run.
  const std::string compare = temp_file("", ".html"), collective = temp_file("", ".html");
  REQUIRE(run_cli("compare " + kScenario + kSmall + " --schedules interleaved,dualpipev --report " + compare).exit_code == 0);
  REQUIRE(run_cli("collective --cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                  " --gpus 16 -b 1K -e 1G -f 8 --report " + collective)
              .exit_code == 0);
  // The blank page's screenshot: what "nothing drawn" weighs at this window size.
  const std::size_t blank_bytes = test::blank_screenshot_bytes();
  REQUIRE(blank_bytes > 0);
  // compare's page also draws the cluster; topology's page is the 16K-GPU SuperPOD's picture.
  std::vector<std::string> with_topology = kSections;
  with_topology.push_back("topology");
  const std::string topology = temp_file("", ".html");
  REQUIRE(run_cli("topology --cluster " + source_path("scenarios/clusters/dgx-h100-superpod-16k.yaml") + " --level leaf --report " +
                  topology)
              .exit_code == 0);
  for (const auto& [page, sections] : {std::pair{compare, with_topology},
                                       std::pair{collective, std::vector<std::string>{"summary", "bandwidth", "links"}},
                                       std::pair{topology, std::vector<std::string>{"summary", "topology", "oversubscription"}}}) {
    const std::vector<std::string> problems = browser_problems(page, sections, blank_bytes);
    for (const std::string& p : problems) UNSCOPED_INFO(page << ": " << p);
    CHECK(problems.empty());
  }
  for (const std::string& f : {compare, collective, topology}) std::remove(f.c_str());
}

TEST_CASE("the browser check fails a page with a script error, a console message and a missing section") {
  if (!have_chromium()) {
    WARN("chromium is not installed (Debian: apt-get install chromium): the browser check is skipped");
    SUCCEED();
    return;
  }
  const std::string page = temp_file(
      "<!DOCTYPE html><html><body><section id=\"summary\"><svg><rect width=\"10\" height=\"10\"/></svg></section>"
      "<script>no_such_function();</script><script>console.error('broken');</script></body></html>\n",
      ".html");
  const std::vector<std::string> problems = browser_problems(page, {"summary", "timeline"}, 0);
  std::string all;
  for (const std::string& p : problems) all += p + "\n";
  INFO(all);
  CHECK(count_of(all, "console: ") == 2);
  CHECK(all.find("no_such_function is not defined") != std::string::npos);
  CHECK(all.find("missing section timeline") != std::string::npos);
  CHECK(all.find("missing section summary") == std::string::npos);
  std::remove(page.c_str());
}

TEST_CASE("collective --report draws a point per size at its busbw and a ring's bytes on the NIC tier") {
  const std::string html_path = temp_file("", ".html");
  const nlohmann::json j = test::cli_json("collective --cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                                          " --gpus 16 --op all_reduce --algo ring --proto Simple -b 1M -e 64M -f 4 --report " +
                                          html_path);
  const std::string html = test::read_file(html_path);
  for (const char* id : {"summary", "bandwidth", "links"}) CHECK(count_of(html, std::string("<section id=\"") + id + "\"") == 1);
  const auto& rows = j["rows"];
  REQUIRE(rows.size() == 4);  // 1, 4, 16, 64 MiB
  const std::regex point("data-size=\"([0-9]+)\" data-busbw=\"([^\"]+)\"");
  std::size_t k = 0;
  for (auto m = std::sregex_iterator(html.begin(), html.end(), point); m != std::sregex_iterator(); ++m, ++k) {
    REQUIRE(k < rows.size());
    CHECK(std::stoull((*m)[1]) == rows[k]["size_bytes"].get<unsigned long long>());
    CHECK(std::stod((*m)[2]) == Approx(rows[k]["busbw_GBps"].get<double>()).epsilon(1e-15));
  }
  CHECK(k == rows.size());
  // Two nodes, one ring per channel crossing between them twice, each crossing up one NIC link and
  // down another on the rail's leaf: 4 NIC-link traversals of 2(n-1)/n of the buffer, all channels together.
  const double size = 64.0 * (1 << 20), n = 16;
  const std::regex nic("<tr data-tier=\"NIC - leaf\"><td>[^<]*</td><td>[^<]*</td><td class=\"num\">[0-9]+</td><td class=\"num\">([0-9.]+)</td>");
  std::smatch m;
  REQUIRE(std::regex_search(html, m, nic));
  CHECK(std::stod(m[1]) == Approx(4 * 2 * (n - 1) / n * size / 1e9).margin(0.05));  // printed to 0.1 GB
  std::remove(html_path.c_str());
}
