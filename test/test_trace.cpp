// `run --trace`: a Chrome/Perfetto trace that keeps to the trace-event format (checked field by
// field, plain and gzip-compressed), holds every GPU asked for (folded ones labelled with whose
// events they carry), puts each stream on its own named thread with communication at its own
// duration, and links pipeline sends to their receives.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "support.hpp"

namespace test = clustersim::test;

namespace {

// tp 8, pp 8 (3 chunks each), dp 16, order tp-dp-pp: GPU = tp + 8 dp + 128 pp. Without
// sequence parallelism its TP all-reduces of input gradients run beside the weight gradients.
const std::string kScenario = test::source_path("scenarios/gpt3-175b-a100-1024.yaml");
// A short iteration: 8 microbatches per pipeline.
const std::string kShort = " --set global_batch=128";

/// The trace's text; a .gz file decompressed with zlib.
std::string trace_text(const std::string& path) {
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) return test::read_file(path);
  gzFile in = gzopen(path.c_str(), "rb");
  REQUIRE(in != nullptr);
  std::string text;
  char buffer[1 << 16];
  for (int n; (n = gzread(in, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  gzclose(in);
  return text;
}

nlohmann::json run_trace(const std::string& args, const std::string& suffix = ".json") {
  const std::string path = test::temp_file("", suffix);
  const auto r = test::run_cli("run " + kScenario + kShort + " --trace " + path + " " + args);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(trace_text(path));
}

using Track = std::pair<int, int>;  // (pid, tid)

/// Thread names by track, from the metadata.
std::map<Track, std::string> thread_names(const nlohmann::json& trace) {
  std::map<Track, std::string> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") out[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
  return out;
}

/// Chrome's trace-event format as Perfetto reads it: every event has name, ph and pid; every
/// other than process metadata has tid; X and flow events have ts, X a non-negative dur; X slices
/// of a thread come in time order and nest (none starts inside another and ends after it); every
/// flow start "s" has one finish "f" with its id and the other way round; every thread with
/// slices is named.
void check_schema(const nlohmann::json& trace) {
  REQUIRE(trace.contains("traceEvents"));
  std::map<Track, std::vector<std::pair<double, double>>> open;  // per thread: the enclosing slices
  std::map<Track, double> last_ts;
  std::map<std::uint64_t, int> starts, finishes;
  std::set<Track> with_slices;
  std::set<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    INFO(e.dump());
    REQUIRE(e.contains("name"));
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const std::string ph = e["ph"];
    if (ph == "M") {
      if (e["name"] == "thread_name" || e["name"] == "thread_sort_index") REQUIRE(e.contains("tid"));
      continue;
    }
    REQUIRE(e.contains("tid"));
    REQUIRE(e.contains("ts"));
    const Track track{e["pid"].get<int>(), e["tid"].get<int>()};
    const double ts = e["ts"].get<double>();
    CHECK(ts >= 0);
    if (ph == "X") {
      REQUIRE(e.contains("dur"));
      const double dur = e["dur"].get<double>();
      CHECK(dur >= 0);
      CHECK(ts >= last_ts[track]);
      last_ts[track] = ts;
      auto& stack = open[track];
      while (!stack.empty() && stack.back().second <= ts + 1e-4) stack.pop_back();
      if (!stack.empty()) CHECK(ts + dur <= stack.back().second + 1e-4);
      stack.emplace_back(ts, ts + dur);
      with_slices.insert(track);
      names.insert(e["name"].get<std::string>());
    } else if (ph == "s") {
      ++starts[e["id"].get<std::uint64_t>()];
    } else if (ph == "f") {
      CHECK(e["bp"] == "e");
      ++finishes[e["id"].get<std::uint64_t>()];
    } else {
      FAIL("unexpected phase " << ph);
    }
  }
  CHECK(starts == finishes);
  for (const auto& [id, n] : starts) CHECK(n == 1);
  const auto named = thread_names(trace);
  for (const Track& t : with_slices) CHECK(named.count(t) == 1);
  // Names are a small set; microbatches, chunks and layers are arguments.
  CHECK(names.size() <= 16);
  CHECK(names.count("F") == 1);
  CHECK(names.count("B") == 1);
}

}  // namespace

TEST_CASE("the trace keeps to Chrome's trace-event format, plain and gzip-compressed") {
  const nlohmann::json plain = run_trace("--trace-ranks 0,8,128,896");
  check_schema(plain);
  const nlohmann::json gz = run_trace("--trace-ranks 0,8,128,896", ".json.gz");
  check_schema(gz);
  CHECK(gz == plain);  // the same bytes through zlib
}

TEST_CASE("every GPU asked for is traced, a folded one with its class's events, labelled so") {
  // --fold assume simulates replica 0 alone: GPU 8 (tp 0 of replica 1) folds onto GPU 0, GPU 9
  // (its tp 1) onto GPU 1; GPUs 1-7 run GPU 0's steps in lockstep as TP ranks of its unit, and
  // GPU 0 sends the unit's pipeline transfers and runs TP rank 0's gradient ring for them all.
  const nlohmann::json trace = run_trace("--fold assume --trace-ranks 0-1,8-9");
  std::map<int, std::vector<nlohmann::json>> compute;  // pid -> its compute-track slices
  std::map<std::pair<int, std::string>, std::set<int>> folded_from;  // (pid, thread) -> whose
  const auto named = thread_names(trace);
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int pid = e["pid"];
    std::string thread = named.at({pid, e["tid"].get<int>()});
    if (const auto lane = thread.find_first_of("0123456789"); lane != std::string::npos) thread.resize(lane - 1);  // "DP 2"
    folded_from[{pid, thread}].insert(e["args"].contains("folded_from") ? e["args"]["folded_from"].get<int>() : -1);
    if (thread == "compute") compute[pid].push_back(e);
  }
  CHECK(compute.size() == 4);
  // -1: its own slices. The tied embedding's gradient all-reduce between the first and the last
  // stage runs inside a replica: replica 1's is replica 0's, folded.
  using Set = std::set<int>;
  for (const auto& [pid, compute_from, pp_from, dp_from] : std::vector<std::tuple<int, Set, Set, Set>>{
           {0, {-1}, {-1}, {-1}}, {1, {-1}, {0}, {0}}, {8, {0}, {0}, {-1, 0}}, {9, {1}, {0}, {0, 8}}}) {
    INFO("GPU " << pid);
    CHECK(folded_from.at({pid, "compute"}) == compute_from);
    CHECK(folded_from.at({pid, "TP"}) == compute_from);
    CHECK(folded_from.at({pid, "PP send"}) == pp_from);
    CHECK(folded_from.at({pid, "DP"}) == dp_from);
  }
  // A folded GPU's compute is its class's, slice for slice.
  REQUIRE(compute[8].size() == compute[0].size());
  for (std::size_t i = 0; i < compute[0].size(); ++i) {
    CHECK(compute[8][i]["ts"] == compute[0][i]["ts"]);
    CHECK(compute[8][i]["dur"] == compute[0][i]["dur"]);
    CHECK(compute[8][i]["name"] == compute[0][i]["name"]);
  }
}

TEST_CASE("a GPU's streams are named threads and the exposed TP waits add up to the report's") {
  const std::string json = test::temp_file("", ".json");
  const nlohmann::json trace = run_trace("--trace-ranks 0 --json " + json);
  const nlohmann::json report = nlohmann::json::parse(test::read_file(json));
  const auto named = thread_names(trace);
  std::set<std::string> threads;
  for (const auto& [track, name] : named)
    if (track.first == 0) threads.insert(name);
  for (const char* want : {"compute", "TP", "PP send", "PP recv", "DP"}) CHECK(threads.count(want) == 1);
  double waited_us = 0, exposed_us = 0;
  int tp_slices = 0, hidden = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0) continue;
    const std::string thread = named.at({0, e["tid"].get<int>()});
    const double dur = e["dur"];
    if (thread == "compute") {
      CHECK(dur > 0);  // no zero-length slice stands for a hidden collective
      if (e["name"] == "wait" && e["cat"] == "tp") waited_us += dur;
    }
    if (thread.rfind("TP", 0) == 0) {
      ++tp_slices;
      CHECK(e["cat"] == "tp");
      CHECK(e["name"] == "all-reduce");
      CHECK(e["args"]["group"] == "0-7");  // GPU 0's TP group
      CHECK(e["args"]["peers"] == 7);
      CHECK(e["args"]["bytes"].get<double>() > 0);
      const double exposed = e["args"]["exposed_us"];
      exposed_us += exposed;
      CHECK(dur >= exposed - 1e-3);
      hidden += dur > exposed + 1;  // runs beside compute for more than a microsecond
    }
  }
  CHECK(tp_slices > 0);
  CHECK(hidden > 0);  // the input-gradient all-reduces under the weight gradients
  // GPU 0 is the reported replica's rank 0: its compute stream waited what the breakdown says.
  const double tp_exposed_s = report["stages"][0]["time_s"]["tp_exposed"];
  // Each slice is printed to the nanosecond: allow that rounding per slice.
  CHECK(waited_us == Approx(tp_exposed_s * 1e6).margin(1e-3 * tp_slices));
  CHECK(exposed_us == Approx(tp_exposed_s * 1e6).margin(1e-3 * tp_slices));
}

TEST_CASE("pipeline sends point to their receives on the peer GPU") {
  // Pipeline ranks 0 and 1 of replica 0: GPUs 0 and 128.
  const nlohmann::json trace = run_trace("--trace-ranks 0,128");
  const auto named = thread_names(trace);
  std::map<std::uint64_t, nlohmann::json> out, in;
  std::map<std::pair<int, double>, nlohmann::json> slices;  // (pid, ts) -> a PP slice
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s") out[e["id"]] = e;
    if (e["ph"] == "f") in[e["id"]] = e;
  }
  REQUIRE(!out.empty());
  for (const auto& [id, s] : out) {
    REQUIRE(in.count(id) == 1);
    const nlohmann::json& f = in[id];
    CHECK(named.at({s["pid"].get<int>(), s["tid"].get<int>()}).rfind("PP send", 0) == 0);
    CHECK(named.at({f["pid"].get<int>(), f["tid"].get<int>()}).rfind("PP recv", 0) == 0);
    CHECK(s["pid"] != f["pid"]);
    CHECK(s["ts"] == f["ts"]);  // one transfer: its send and its receive are the same span
  }
  // Every send names its peer (the same TP rank and replica of another pipeline rank: interleaved,
  // rank 0 also sends back to rank 7 and rank 1 on to rank 2), microbatch, stage and bytes: 1/8 of
  // a 2048 x 12288 bf16 activation.
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "send") {
      const int peer = e["args"]["peer"], pid = e["pid"];
      CHECK(peer % 128 == pid % 128);
      CHECK(peer != pid);
      CHECK(e["args"].contains("microbatch"));
      CHECK(e["args"].contains("stage"));
      CHECK(e["args"]["bytes"] == 2048 * 12288 * 2 / 8);
    }
}

TEST_CASE("a trace selection that keeps no GPU, or a .gz name that is not .json.gz, is one line and exit 2") {
  const std::string path = test::temp_file("", ".json");
  auto r = test::run_cli("run " + kScenario + " --trace " + path + " --trace-ranks ''");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text == "error: command line: --trace-ranks: expected GPU ranges like 0-7,64, got ''\n");
  r = test::run_cli("run " + kScenario + " --trace /tmp/clustersim-trace.gz");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text == "error: command line: --trace: expected FILE.json.gz for a compressed trace, got '/tmp/clustersim-trace.gz'\n");
}

TEST_CASE("a gradient collective's slice names the algorithm and protocol it ran") {
  // NCCL's tuner picks per size (test_gradient_algorithm times each pick); the trace says which.
  const nlohmann::json trace = run_trace("--trace-ranks 0");
  const auto named = thread_names(trace);
  const std::regex ran(R"(^(gradient bucket|gradients|updated parameters|gradient sync between stage copies) )"
                       R"(\((ring|tree|nvls|nvls_tree|pat|collnet_direct|collnet_chain), (LL|LL128|Simple)\)$)");
  int slices = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 0 || named.at({0, e["tid"].get<int>()}) != "DP") continue;
    ++slices;
    const std::string label = e["args"]["label"];
    INFO(label);
    CHECK(std::regex_match(label, ran));
  }
  CHECK(slices > 0);
}
