// `clustersim serve --capacity` (simulator/serve_capacity.hpp): the highest arrival rate that still
// meets the SLO, against the closed form of a queue that serves one request at a time, and its
// bad input.
#include <catch2/catch.hpp>

#include <algorithm>

#include "one_line_error.hpp"
#include "simulator/serve_capacity.hpp"
#include "workloads/serving/request_stream.hpp"
#include "support.hpp"

using namespace clustersim;
using test::require_one_line_error;
using test::source_path;

namespace {

const std::string kFile = "scenarios/serving/llama3-70b-h100-tp8.yaml";

/// The shipped 8-GPU Llama 3 70B replica serving identical requests one at a time (a 1,024-token
/// prompt, one output token) that arrive almost evenly (gamma gaps of cv 0.01), with a TTFT
/// target of 1 s: a deterministic single-server queue, whose capacity is 1 / its service time.
std::vector<std::string> one_at_a_time(const std::vector<std::string>& more = {}) {
  std::vector<std::string> o = {"serving.requests.arrival=gamma", "serving.requests.cv=0.01", "serving.requests.prompt_tokens=1024",
                                "serving.requests.output_tokens=1", "serving.scheduler.max_batch_requests=1",
                                "serving.requests.duration_s=300", "serving.slo.ttft=1s", "serving.requests.rate_per_s=1"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

/// A request's time on the replica: its TTFT when it arrives to an idle one.
Seconds service_time(const ServingSpec& s) {
  ServingSpec idle = s;
  idle.requests.rate_per_s = 0.1;
  const ServeSummary m = summarize_serving(idle, simulate_serving(idle));
  REQUIRE(m.ttft.max_s == Approx(m.ttft.p50_s).epsilon(1e-9));  // no request ever waited
  return m.ttft.p50_s;
}

/// A serving file of the shipped replica on `trace`, with `slo` and extra `requests` fields.
std::string traced_file(const std::string& trace, const std::string& slo, const std::string& more = "") {
  return test::temp_file("name: traced\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                         "\nmodel: " + source_path("scenarios/models/llama3-70b.yaml") +
                         "\nserving:\n  requests: {arrival: trace, trace: " + trace + more + "}\n  parallel: {tp: 8}\n  slo: " + slo +
                         "\n  scheduler: {max_batch_requests: 1}\n");
}

}  // namespace

TEST_CASE("serve --capacity: one request at a time, evenly spaced, holds up to 1 / its service time and not past it", "[serve]") {
  const ServingSpec s = load_serving(source_path(kFile), one_at_a_time());
  const Seconds service_s = service_time(s);
  const CapacityResult r = find_capacity(s, CapacitySearch{});
  // Below 1 / S no request waits; above it the n-th waits n (S - 1/rate), past the 1-s target for
  // all but the first 1 s / (S - 1/rate) of the ~7,000 in the window. 90% of them meet it only
  // within 0.2% of 1 / S; the bisection stops within 1%.
  CHECK(r.held_per_s >= 0.99 / service_s);
  CHECK(r.held_per_s <= 1.003 / service_s);
  CHECK(r.failed_per_s > r.held_per_s);
  CHECK(r.failed_per_s <= r.held_per_s * 1.01 + 1e-12);
  CHECK_FALSE(r.saturated);
  // Served at its capacity, the replica completes a request every S.
  const std::vector<CapacityProbe> curve = probes_by_rate(r);
  CHECK(curve.back().summary.requests_per_s == Approx(1 / service_s).epsilon(0.01));
}

TEST_CASE("serve --capacity: two replicas behind round robin each take every other request, so twice the capacity", "[serve]") {
  const ServingSpec one = load_serving(source_path(kFile), one_at_a_time());
  const ServingSpec two = load_serving(source_path(kFile), one_at_a_time({"serving.replicas=2"}));
  const Seconds service_s = service_time(one);
  const CapacityResult r = find_capacity(two, CapacitySearch{});
  CHECK(r.held_per_s >= 2 * 0.99 / service_s);
  CHECK(r.held_per_s <= 2 * 1.003 / service_s);
}

TEST_CASE("serve --capacity on a trace scales its arrival times: evenly spaced requests served one at a time hold up to 1 / S", "[serve]") {
  // 400 identical requests 1 s apart. The trace's rate is 1 request/s; at rate r its gaps are 1/r.
  std::string rows = "arrival_s,prompt_tokens,output_tokens\n";
  for (int i = 0; i < 400; ++i) rows += std::to_string(i) + ",1024,1\n";
  const std::string file = traced_file(test::temp_file(rows, ".csv"), "{ttft: 60ms}");
  const ServingSpec s = load_serving(file, {});
  CHECK(stream_rate_per_s(s) == Approx(1.0).epsilon(1e-12));
  // time_scale multiplies every arrival: 0.25 is four times the rate.
  const ServingSpec quick = load_serving(file, {"serving.requests.time_scale=0.25"});
  const std::vector<Request> a = request_stream(s.requests), b = request_stream(quick.requests);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i].arrival_s == 0.25 * a[i].arrival_s);
  CHECK(stream_rate_per_s(quick) == Approx(4.0).epsilon(1e-12));
  // Past 1 / S the n-th waits n (S - 1/r), past the 60-ms target (~17 ms of slack) for 90% of
  // the 400 within 0.1% of 1 / S.
  const ServingSpec alone = load_serving(source_path(kFile), one_at_a_time());
  const Seconds service_s = service_time(alone);
  const CapacityResult r = find_capacity(s, CapacitySearch{});
  CHECK(r.held_per_s >= 0.99 / service_s);
  CHECK(r.held_per_s <= 1.002 / service_s);
  for (const CapacityProbe& p : r.probes) CHECK(p.summary.requests == 400);
}

TEST_CASE("serve --capacity: a looser attainment admits a higher rate, and every probe's verdict is its SLO fraction", "[serve]") {
  const ServingSpec s = load_serving(source_path(kFile), {"serving.requests.duration_s=60"});
  CapacitySearch strict, loose;
  strict.attainment = 0.99;
  loose.attainment = 0.5;
  const CapacityResult a = find_capacity(s, strict), b = find_capacity(s, loose);
  REQUIRE(a.held_per_s > 0);
  CHECK(b.held_per_s > a.held_per_s);
  for (const CapacityProbe& p : a.probes) CHECK(p.held == (p.summary.slo_met_fraction >= 0.99));
  for (const CapacityProbe& p : probes_by_rate(a))
    if (p.rate_per_s > a.held_per_s) CHECK(p.rate_per_s >= a.failed_per_s);
}

TEST_CASE("serve --capacity: an SLO that queueing cannot break (TTFT 1,000 s in a 300-s window) is reported unbounded, not a rate", "[serve]") {
  const ServingSpec s = load_serving(source_path(kFile), one_at_a_time({"serving.slo.ttft=1000s"}));
  const CapacityResult r = find_capacity(s, CapacitySearch{});
  CHECK(r.saturated);
  CHECK(r.failed_per_s == 0);
  CHECK(r.probes.back().summary.requests_per_s < 0.5 * r.held_per_s);
  CHECK(r.probes.back().summary.requests_per_s < 1.1 * r.probes[r.probes.size() - 2].summary.requests_per_s);
  const auto out = test::run_cli("serve " + source_path(kFile) + " --capacity --set serving.slo.ttft=1000s --set serving.slo.tpot=1s");
  REQUIRE(out.exit_code == 0);
  CHECK_THAT(out.stdout_text, Catch::Contains("capacity: not bounded by this SLO"));
}

TEST_CASE("serve --capacity: a target no lone request meets has no capacity, and a window too short for a request raises the rate", "[serve]") {
  // A 1-ms TTFT against a ~40-ms prefill: every rate fails, down to windows with no request.
  const ServingSpec s = load_serving(source_path(kFile), one_at_a_time({"serving.slo.ttft=1ms"}));
  const CapacityResult r = find_capacity(s, CapacitySearch{});
  CHECK(r.held_per_s == 0);
  CHECK(r.probes.back().summary.requests == 0);
  for (const CapacityProbe& p : r.probes) CHECK_FALSE(p.held);
  const auto text = test::run_cli("serve " + source_path(kFile) + " --capacity --set serving.slo.ttft=1ms");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Catch::Contains("capacity: none: the SLO is not met by 90% of requests at any rate tried"));
  // A 20-ms window at 1 request/s holds none; the search doubles until it holds some.
  const ServingSpec brief = load_serving(source_path(kFile), one_at_a_time({"serving.requests.duration_s=0.02"}));
  const CapacityResult b = find_capacity(brief, CapacitySearch{});
  REQUIRE(b.probes.size() >= 2);
  CHECK(b.probes.front().summary.requests == 0);
  CHECK(b.held_per_s > 0);
}

TEST_CASE("serve --capacity prints the curve it walked and the bracket, and --json holds the same probes by rate", "[serve]") {
  const std::string args = "serve " + source_path(kFile) + " --capacity --set serving.requests.duration_s=60";
  const auto text = test::run_cli(args);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Catch::Contains("TTFT p99") && Catch::Contains("capacity: ") && Catch::Contains(" did not; "));
  const nlohmann::json j = test::cli_json(args);
  const nlohmann::json& c = j["capacity"];
  CHECK(c["attainment"] == 0.9);
  REQUIRE(c["probes"].size() >= 3);
  double last = 0, highest_held = 0;
  for (const auto& p : c["probes"]) {
    CHECK(p["rate_per_s"].get<double>() > last);
    last = p["rate_per_s"].get<double>();
    if (p["held"].get<bool>() && last < c["failed_per_s"].get<double>()) highest_held = last;
  }
  CHECK(c["held_per_s"].get<double>() == highest_held);
  CHECK(c["held_per_gpu_per_s"].get<double>() == Approx(highest_held / 8));
  // Deterministic: the same search twice gives the same document.
  CHECK(test::cli_json(args)["capacity"] == c);
  // Its cost is serve's own at the capacity rate: the fleet's year over the tokens it then serves.
  const nlohmann::json at = test::cli_json("serve " + source_path(kFile) + " --set serving.requests.duration_s=60 --set serving.requests.rate_per_s=" +
                                           nlohmann::json(c["held_per_s"].get<double>()).dump());
  REQUIRE(c["cost_at_capacity"]["priced"] == true);
  CHECK(c["cost_at_capacity"]["usd_per_million_output_tokens"].get<double>() ==
        Approx(at["cost"]["usd_per_million_output_tokens"].get<double>()).epsilon(1e-12));
  CHECK_THAT(text.stdout_text, Catch::Contains("cost at capacity: $"));
}

TEST_CASE("serve --capacity --vary ranks each combination by capacity per GPU, each the search --set would give it", "[serve]") {
  // Replicas served one request at a time: one and two replicas hold 1 / S and 2 / S, the same per
  // GPU; the tp 1 replica does not fit Llama 3 70B and is listed as such, last.
  std::string args = "serve " + source_path(kFile) + " --capacity --vary serving.replicas=1,2 --vary serving.parallel.tp=8,1";
  for (const std::string& o : one_at_a_time()) args += " --set " + o;
  const nlohmann::json j = test::cli_json(args);
  const nlohmann::json& v = j["capacity"]["variants"];
  REQUIRE(v.size() == 4);
  const auto settings = [](const nlohmann::json& row) { return row["settings"].get<std::vector<std::string>>(); };
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(settings(v[i])[1] == "serving.parallel.tp=8");
    CHECK_FALSE(v[i].contains("error"));
  }
  for (std::size_t i = 2; i < 4; ++i) {
    CHECK(settings(v[i])[1] == "serving.parallel.tp=1");
    CHECK_THAT(v[i]["error"].get<std::string>(), Catch::Contains("serving.parallel: expected llama3-70b to fit"));
  }
  const ServingSpec one = load_serving(source_path(kFile), one_at_a_time());
  const double capacity_1 = 1 / service_time(one);
  const auto held = [&](const std::string& replicas) {
    for (const auto& row : v)
      if (settings(row)[0] == replicas && !row.contains("error")) return row["held_per_s"].get<double>();
    FAIL("no row for " << replicas);
    return 0.0;
  };
  CHECK(held("serving.replicas=1") == Approx(capacity_1).epsilon(0.01));
  CHECK(held("serving.replicas=2") == Approx(2 * capacity_1).epsilon(0.01));
  CHECK(v[0]["held_per_gpu_per_s"].get<double>() >= v[1]["held_per_gpu_per_s"].get<double>());
  // Each point is exactly the search its settings give through --set.
  const nlohmann::json two = test::cli_json(args.substr(0, args.find(" --vary")) + args.substr(args.find(" --set")) +
                                            " --set serving.replicas=2 --set serving.parallel.tp=8");
  CHECK(two["capacity"]["held_per_s"].get<double>() == held("serving.replicas=2"));
  const auto text = test::run_cli(args);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Catch::Contains("serving.replicas=1 serving.parallel.tp=1  does not run: serving.parallel:"));
}

TEST_CASE("serve --vary without --capacity runs each combination once: each row is serve's own summary with those --set", "[serve]") {
  const std::string base = "serve " + source_path(kFile) + " --set serving.requests.duration_s=30";
  const nlohmann::json j = test::cli_json(base + " --vary serving.requests.rate_per_s=4,24 --vary serving.parallel.tp=8,1");
  const nlohmann::json& v = j["variants"];
  REQUIRE(v.size() == 4);
  // In --vary's order, the last key fastest; tp 1 does not fit.
  CHECK(v[0]["settings"] == nlohmann::json::array({"serving.requests.rate_per_s=4", "serving.parallel.tp=8"}));
  CHECK(v[1]["settings"] == nlohmann::json::array({"serving.requests.rate_per_s=4", "serving.parallel.tp=1"}));
  CHECK_THAT(v[1]["error"].get<std::string>(), Catch::Contains("serving.parallel: expected llama3-70b to fit"));
  for (int i : {0, 2}) {
    const nlohmann::json one = test::cli_json(base + " --set " + v[i]["settings"][0].get<std::string>() + " --set serving.parallel.tp=8");
    CHECK(v[i]["summary"]["ttft"] == one["summary"]["ttft"]);
    CHECK(v[i]["summary"]["tpot"] == one["summary"]["tpot"]);
    CHECK(v[i]["summary"]["output_tokens_per_s"] == one["summary"]["output_tokens_per_s"]);
    CHECK(v[i]["summary"]["slo_met_fraction"] == one["summary"]["slo_met_fraction"]);
    CHECK(v[i]["cost"]["usd_per_million_output_tokens"] == one["cost"]["usd_per_million_output_tokens"]);
  }
  // Past the knee (15.4 requests/s, the capacity test above) TTFT climbs and the SLO share falls.
  CHECK(v[2]["summary"]["ttft"]["p99_s"].get<double>() > 3 * v[0]["summary"]["ttft"]["p99_s"].get<double>());
  CHECK(v[2]["summary"]["slo_met_fraction"].get<double>() < v[0]["summary"]["slo_met_fraction"].get<double>());
  const auto text = test::run_cli(base + " --vary serving.requests.rate_per_s=4,24");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Catch::Contains("# clustersim serve --vary:") && Catch::Contains("serving.requests.rate_per_s=24"));
}

TEST_CASE("serve --capacity: its bad input is one line, exit 2", "[serve]") {
  const std::string file = source_path(kFile);
  const std::string no_slo = test::temp_file("name: no-slo\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                                             "\nmodel: " + source_path("scenarios/models/llama3-70b.yaml") +
                                             "\nserving:\n  parallel: {tp: 8}\n  requests: {arrival: poisson, rate_per_s: 1, duration_s: 1, "
                                             "prompt_tokens: 100, output_tokens: 10}\n");
  require_one_line_error(test::run_cli("serve " + no_slo + " --capacity"), "error: " + no_slo + ":4: serving.slo:",
                         "the file needs slo:");
  // ... which a --vary combination may supply.
  const auto with_slo = test::run_cli("serve " + no_slo + " --capacity --vary serving.slo.ttft=1s,2s --set serving.requests.duration_s=20");
  CHECK(with_slo.exit_code == 0);
  CHECK_THAT(with_slo.stdout_text, Catch::Contains("serving.slo.ttft=2s"));
  // A trace of requests that all arrive at once has no rate to scale.
  const std::string trace = test::temp_file("arrival_s,prompt_tokens,output_tokens\n0.1,100,10\n0.1,200,10\n", ".csv");
  require_one_line_error(test::run_cli("serve " + traced_file(trace, "{ttft: 1s}") + " --capacity"), "error: " + trace + ": arrival_s:",
                         "expected arrivals spread over time for --capacity");
  // time_scale belongs to traces, in (0, 1e6].
  require_one_line_error(test::run_cli("serve " + file + " --set serving.requests.time_scale=2"), "error: " + file + ":",
                         "serving.requests.time_scale: expected time_scale only with arrival: trace");
  const std::string scaled = traced_file(trace, "{ttft: 1s}", ", time_scale: 0");
  require_one_line_error(test::run_cli("serve " + scaled), "error: " + scaled + ":5: serving.requests.time_scale:", "expected a number");
  require_one_line_error(test::run_cli("serve " + file + " --attainment 0.5"), "error: command line: --attainment:", "expected only with --capacity");
  require_one_line_error(test::run_cli("serve " + file + " --rate-tolerance 0.1"), "error: command line: --rate-tolerance:",
                         "expected only with --capacity");
  require_one_line_error(test::run_cli("serve " + file + " --capacity --attainment 1.5"), "error: command line: --attainment:", "1.5");
  require_one_line_error(test::run_cli("serve " + file + " --capacity --rate-tolerance 0"), "error: command line: --rate-tolerance:", "0");
  require_one_line_error(test::run_cli("serve " + file + " --capacity --csv -"), "error: command line: --csv:", "expected no --csv with --capacity");
  require_one_line_error(test::run_cli("serve " + file + " --capacity --trace t.json"), "error: command line: --trace:",
                         "expected no --trace with --capacity");
  require_one_line_error(test::run_cli("serve " + file + " --vary serving.parallel.tp=4,8 --csv -"), "error: command line: --csv:",
                         "expected no --csv with --vary");
  const std::string rows = source_path("scenarios/validation/serving/sarathi-serve.yaml");
  require_one_line_error(test::run_cli("serve --validate " + rows + " --capacity"), "error: command line: --capacity:", "expected a serving file");
  require_one_line_error(test::run_cli("serve --validate " + rows + " --vary serving.parallel.tp=1,2"), "error: command line: --vary:",
                         "expected a serving file");
  for (const char* bad : {"serving.parallel.tp", "=4,8", "serving.parallel.tp=", "serving.parallel.tp=4,,8"})
    require_one_line_error(test::run_cli("serve " + file + " --capacity --vary '" + bad + "'"), "error: command line: --vary:",
                           "expected KEY=V1,V2,...");
  require_one_line_error(test::run_cli("serve " + file + " --capacity --vary a=1,2,3,4,5,6,7,8 --vary b=1,2,3,4,5,6,7,8 --vary c=1,2,3,4,5"),
                         "error: command line: --vary:", "expected at most 256 combinations");
  // No point loads: the first one's own error, as serve would print it.
  require_one_line_error(test::run_cli("serve " + file + " --capacity --vary serving.parallel.tp=1"), "error: " + file + ":",
                         "serving.parallel: expected llama3-70b to fit");
  require_one_line_error(test::run_cli("serve " + file + " --capacity --vary serving.no_such_key=1,2"), "error: command line: --vary: ", "unknown serving field 'serving.no_such_key'");
}
