// `clustersim compare` end to end: schedules side by side on a 16-stage GPT-3 run with real
// communication, rows for schedules that cannot run, the SVG timeline, and bad input.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <regex>

#include "support.hpp"
#include "workloads/plan_iteration.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;
using clustersim::test::temp_file;

namespace {

const std::string kScenario = source_path("scenarios/gpt3-175b-h100-pp16.yaml");

nlohmann::json compare_json(const std::string& schedules, const std::string& sets = "") {
  return test::cli_json("compare " + kScenario + " --schedules " + schedules + " " + sets);
}

Seconds total(const std::vector<Segment>& segments) {
  Seconds t = 0;
  for (const Segment& s : segments) t += s.duration_s;
  return t;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("on a 16-stage run zb-v and dualpipev beat 1f1b by what their bubbles predict") {
  // With the TP backward blocking, a pass costs the same under every schedule; the asynchronous
  // one hides more under 1F1B's whole backward than under a split one (the next test).
  const nlohmann::json j = compare_json("1f1b,zb-v,dualpipev", "--set parallel.overlap_tp_backward=false");
  REQUIRE(j["rows"].size() == 3);
  const auto& one_f = j["rows"][0];
  const auto& zbv = j["rows"][1];
  const auto& dpv = j["rows"][2];
  for (const auto& row : j["rows"]) REQUIRE(row["feasible"].get<bool>());
  const double t1 = one_f["iteration_s"], tz = zbv["iteration_s"], td = dpv["iteration_s"];

  // The prediction: the pure schedules replayed (their bubbles are checked against the published
  // formulas in test_schedules_zero_bubble) with this run's own pass times. F, B and W come from
  // the plan's compute and are scaled so one 1F1B microbatch takes what the engine measured on a
  // middle rank, communication included.
  const ScenarioSpec s = load_scenario(kScenario);
  const IterationPlan plan = plan_iteration(s);
  const int p = s.layout.pp, m = s.microbatches();
  const StagePlan& middle = plan.stages[p / 2];
  const Seconds f = total(middle.forward), b_in = total(middle.backward_input), w = total(middle.backward_weight);
  const auto& busy = one_f["stages"][p / 2];
  const double measured_per_microbatch = (t1 - busy["time_s"]["bubble"].get<double>()) / m;  // upper bound on busy
  INFO("1f1b " << t1 << " s, zb-v " << tz << " s, dualpipev " << td << " s; F " << f << " B " << b_in << " W " << w);
  const double scale = measured_per_microbatch / (f + b_in + w);
  const ScheduleShape one{p, m, 1, 0}, two{p, m, 2, 0};
  const Seconds r1 = replay(*find_schedule("1f1b"), one, f * scale, (b_in + w) * scale).makespan_s;
  const Seconds rz = replay(*find_schedule("zb-v"), two, f * scale, (b_in + w) * scale, w * scale).makespan_s;
  const Seconds rd = replay(*find_schedule("dualpipev"), two, f * scale, (b_in + w) * scale, w * scale).makespan_s;
  INFO("replayed: 1f1b " << r1 << " zb-v " << rz << " dualpipev " << rd);
  CHECK(tz < t1);
  CHECK(td < t1);
  // ZB-V wins back 1F1B's bubble less its own: within 10% of the replayed saving.
  CHECK((t1 - tz) == Approx(r1 - rz).epsilon(0.10));
  // DualPipeV wins its bubble saving and, beyond it, at most the TP communication that its F&B
  // units hide under the other microbatch's compute (all of 1F1B's exposed TP time, at the most).
  const double tp_hidden_at_most = busy["time_s"]["tp_exposed"].get<double>();
  CHECK((t1 - td) > 0.9 * (r1 - rd));
  CHECK((t1 - td) < 1.1 * (r1 - rd) + tp_hidden_at_most);
  // Bubbles: ZB-V's is a fraction of 1F1B's.
  CHECK(zbv["bubble_fraction"].get<double>() < 0.5 * one_f["bubble_fraction"].get<double>());
}

TEST_CASE("the asynchronous TP backward helps 1f1b more than zb-v, whose weight gradients run apart") {
  // 1F1B's whole backward hides each input-gradient reduction under its weight-gradient GEMM; ZB-V
  // defers most weight gradients, so its reductions stay exposed. Both hide SP's re-gathers under
  // the input-gradient GEMMs.
  const nlohmann::json async = compare_json("1f1b,zb-v"), blocking = compare_json("1f1b,zb-v", "--set parallel.overlap_tp_backward=false");
  const double gain_1f1b = blocking["rows"][0]["iteration_s"].get<double>() - async["rows"][0]["iteration_s"].get<double>();
  const double gain_zbv = blocking["rows"][1]["iteration_s"].get<double>() - async["rows"][1]["iteration_s"].get<double>();
  INFO("1f1b gains " << gain_1f1b << " s, zb-v " << gain_zbv << " s");
  CHECK(gain_zbv > 0);
  CHECK(gain_1f1b > 1.5 * gain_zbv);
}

TEST_CASE("dualpipe holds every stage twice and pays for it in weights") {
  const nlohmann::json j = compare_json("1f1b,dualpipe");
  // A middle rank of 1F1B holds one stage; DualPipe's holds the same amount twice over (stage r and
  // stage p-1-r), so its peak total rises by at least one stage's weights, gradients and state.
  const double one_stage_total = j["rows"][0]["stages"][8]["memory_bytes"]["total"].get<double>() -
                                 j["rows"][0]["stages"][8]["memory_bytes"]["activations"].get<double>();
  CHECK(j["rows"][1]["stages"][8]["memory_bytes"]["total"].get<double>() >
        j["rows"][0]["stages"][8]["memory_bytes"]["total"].get<double>() + 0.9 * one_stage_total);
  // Both send every microbatch across the same 15 boundaries.
  CHECK(j["rows"][1]["pp_bytes"].get<double>() == Approx(j["rows"][0]["pp_bytes"].get<double>()));
}

TEST_CASE("a schedule that cannot run the scenario gets a row saying why") {
  // 12 microbatches (global batch 48 over dp 4): DualPipe needs at least 2p = 32.
  const auto r = run_cli("compare " + kScenario + " --schedules 1f1b,dualpipe --set global_batch=48");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Catch::Contains("dualpipe       infeasible: ") && Catch::Contains("12 microbatches"));
  CHECK_THAT(r.stdout_text, Catch::Matches("(.|\n)*  1f1b +1 +[0-9.]+(.|\n)*"));
}

TEST_CASE("the svg is the report's timeline: a box per pass, a time axis, chunks, and a row for a schedule that cannot run") {
  const std::string svg_path = temp_file("", ".svg"), html_path = temp_file("", ".html");
  // 12 microbatches (global batch 48 over dp 4): DualPipe needs at least 2p = 32.
  const auto r = run_cli("compare " + kScenario + " --schedules 1f1b,zb-v,dualpipe --set global_batch=48 --svg " + svg_path +
                         " --report " + html_path);
  REQUIRE(r.exit_code == 0);
  const std::string svg = test::read_file(svg_path);
  CHECK(svg.rfind("<svg xmlns=", 0) == 0);
  CHECK(count_of(svg, "<style>") == 1);  // a file of its own: its styles inside it
  CHECK(count_of(svg, "class=\"run-title\" x=\"4\" y=\"") == 3);
  // 1f1b has 16 stages, zb-v 32, each microbatch forwarded once on each; zb-v splits every backward
  // into B input and W.
  CHECK(count_of(svg, "<title>F microbatch ") == 12 * 16 + 12 * 32);
  CHECK(count_of(svg, "<title>B microbatch ") == 12 * 16);
  CHECK(count_of(svg, "<title>B input microbatch ") == 12 * 32);
  CHECK(count_of(svg, "<title>W microbatch ") == 12 * 32);
  // zb-v's second chunk (half its stages) is drawn with a pattern over the colour.
  CHECK(count_of(svg, "fill=\"url(#chunk1)\" pointer-events") == 3 * 12 * 16);
  // A time axis in ms or s above and below, and F, B and W in three distinct colours of the report's.
  CHECK(std::regex_search(svg, std::regex("class=\"tick\"[^>]*>[0-9.]+ (ms|s)<")));
  for (const char* fill : {"#0072B2", "#D55E00", "#009E73"}) CHECK(count_of(svg, std::string("fill=\"") + fill + "\"><title>") > 0);
  // dualpipe's row says why it could not run, as the report's does; the report holds the same picture.
  CHECK(count_of(svg, "<g class=\"infeasible\" data-run=\"dualpipe\">") == 1);
  const std::string html = test::read_file(html_path);
  const std::string timeline = html.substr(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\""));
  CHECK(svg.find(timeline.substr(timeline.find("<defs>"), 2000)) != std::string::npos);
}

TEST_CASE("compare prints the same bytes every time") {
  const std::string args = "compare " + kScenario + " --schedules interleaved,zb-h2,dualpipe";
  const auto a = run_cli(args), b = run_cli(args);
  REQUIRE(a.exit_code == 0);
  CHECK(a.stdout_text == b.stdout_text);
}

TEST_CASE("compare -j 2 simulates two schedules at a time and prints what -j 1 prints, in the order asked") {
  const std::string args = "compare " + kScenario + " --schedules zb-h2,interleaved,dualpipe";
  const auto one = run_cli(args + " -j 1"), two = run_cli(args + " -j 2");
  REQUIRE(one.exit_code == 0);
  CHECK(one.stdout_text == two.stdout_text);
  CHECK(two.stdout_text.find("zb-h2") < two.stdout_text.find("interleaved"));
  const auto bad = run_cli(args + " -j 0");
  CHECK(bad.exit_code == 2);
  CHECK(bad.stdout_text.empty());
  CHECK(bad.stderr_text == "error: command line: -j: expected an integer from 1 to 256, got 0\n");
}

TEST_CASE("an unknown schedule name in compare is an error that lists the known ones") {
  const auto r = run_cli("compare " + kScenario + " --schedules 1f1b,zb-h3");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::StartsWith("error: command line: --schedules: expected pipeline schedules from: ") &&
                                Catch::Contains("got 'zb-h3'"));
  CHECK(count_of(r.stderr_text, "\n") == 1);
}

TEST_CASE("dualpipe with an odd stage count is an error at the schedule field") {
  // 96 layers on pp 3: tp 8 x pp 3 x dp 1 = 24 GPUs.
  const auto r = run_cli("run " + kScenario +
                         " --set schedule=dualpipe --set gpus=24 --set parallel.pp=3 --set parallel.dp=1 --set global_batch=64");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains("gpt3-175b-h100-pp16.yaml:") && Catch::Contains(": schedule: dualpipe cannot run pp = 3") &&
                                Catch::Contains("even"));
  CHECK(count_of(r.stderr_text, "\n") == 1);
}

TEST_CASE("dualpipe with too few microbatches is an error at the schedule field") {
  const auto r = run_cli("run " + kScenario + " --set schedule=dualpipe --set global_batch=48");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": schedule: dualpipe cannot run pp = 16, 12 microbatches"));
  CHECK(count_of(r.stderr_text, "\n") == 1);
}

TEST_CASE("zb-v on layers that do not split into two chunks per rank is an error at the schedule field") {
  // 96 layers on pp 32 is 3 per rank, which zb-v cannot cut into 2 chunks (64 stages).
  const auto r = run_cli("run " + kScenario + " --set schedule=zb-v --set parallel.pp=32 --set parallel.dp=2");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": schedule: zb-v splits the model into 64 stages") &&
                                Catch::Contains("96 layers"));
  CHECK(count_of(r.stderr_text, "\n") == 1);
}

TEST_CASE("list names every registered pipeline schedule") {
  const auto r = run_cli("list");
  REQUIRE(r.exit_code == 0);
  REQUIRE(all_schedules().size() == 9);
  for (const Schedule* s : all_schedules()) CHECK_THAT(r.stdout_text, Catch::Contains("  " + s->name() + " "));
}

TEST_CASE("a schedule with a fixed chunk count sets virtual_stages when the scenario leaves it out") {
  CHECK(load_scenario(kScenario, {"schedule=zb-v"}).virtual_stages == 2);
  CHECK(load_scenario(kScenario, {"schedule=dualpipe"}).virtual_stages == 2);
  CHECK(load_scenario(kScenario, {"schedule=zb-h1"}).virtual_stages == 1);
  // Given explicitly, it must agree.
  const auto r = run_cli("run " + kScenario + " --set schedule=zb-v --set parallel.virtual_stages=3");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains("zb-v runs 2 chunks per rank (got 3)"));
}
