// Every `clustersim bench` mode writes what it printed as --json (checked against
// simulator/schemas/bench.schema.json, the branch of its mode) and --csv (the same rows), and reads
// --set; bench's --gpus is one count as on every command, its list --gpu-counts.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "json_schema.hpp"
#include "one_line_error.hpp"
#include "support.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;

namespace {

const std::string kA100 = source_path("scenarios/clusters/dgx-a100-superpod.yaml");  // 384 nodes of 8 A100s
const std::string kSmall = source_path("scenarios/validation/korthikanti-22b-full.yaml");  // 8 A100s, < 1 s
const std::string kGoodput = source_path("scenarios/llama3-405b-h100-16k-goodput.yaml");

/// The --json document of `bench <args>`, checked against the shipped schema and its mode.
nlohmann::json bench_json(const std::string& args, const std::string& mode) {
  const nlohmann::json schema = nlohmann::json::parse(test::read_file(source_path("simulator/schemas/bench.schema.json")));
  const nlohmann::json j = test::cli_json("bench " + args);
  const auto problems = test::schema_problems(schema, j);
  for (const std::string& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  CHECK(j.at("command") == "bench");
  CHECK(j.at("mode") == mode);
  return j;
}

/// The header line of `bench <args> --csv -` and its number of lines.
std::pair<std::string, std::size_t> bench_csv(const std::string& args) {
  const auto r = run_cli("bench " + args + " --csv -");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  std::size_t lines = 0;
  for (char c : r.stdout_text) lines += c == '\n';
  return {r.stdout_text.substr(0, r.stdout_text.find('\n')), lines};
}

}  // namespace

TEST_CASE("bench --fabric-only writes its row as JSON and CSV, and builds the cluster --set gives", "[bench]") {
  const auto j = bench_json("--fabric-only --cluster " + kA100, "fabric");
  REQUIRE(j.at("rows").size() == 1);
  CHECK(j.at("rows")[0].at("gpus") == 384 * 8);
  // Two routes per GPU (test_fabric_multi_plane's count): to the next node and across the cluster.
  CHECK(j.at("rows")[0].at("routes") == 2 * 384 * 8);
  // --set cluster.fabric.nodes: the fabric built is the one set, 2 units of 20 nodes of 8.
  const auto small = bench_json("--fabric-only --cluster " + kA100 + " --set cluster.fabric.nodes=40", "fabric");
  CHECK(small.at("rows")[0].at("gpus") == 40 * 8);
  CHECK(small.at("config").at("cluster_overrides") == nlohmann::json::array({"cluster.fabric.nodes=40"}));
  const auto [header, lines] = bench_csv("--fabric-only --cluster " + kA100);
  CHECK(header.rfind("cluster,fabric,routing,gpus,switches,links,build_s", 0) == 0);
  CHECK(lines == 2);
}

TEST_CASE("bench --scenarios writes a row per scenario, its iteration the one run simulates", "[bench]") {
  const auto j = bench_json("--scenarios " + kSmall + " --set global_batch=8", "scenarios");
  REQUIRE(j.at("rows").size() == 1);
  const auto run = test::cli_json("run " + kSmall + " --set global_batch=8");
  CHECK(j.at("rows")[0].at("iteration_s").get<double>() == Approx(run.at("iteration_s").get<double>()).epsilon(1e-12));
  CHECK(j.at("rows")[0].at("gpus") == 8);
  CHECK(j.at("config").at("overrides") == nlohmann::json::array({"global_batch=8"}));
  CHECK(bench_csv("--scenarios " + kSmall).second == 2);
}

TEST_CASE("bench --search writes a row per scenario with its configurations and rates", "[bench]") {
  const auto j = bench_json("--search " + source_path("scenarios/validation/narayanan-1.7b.yaml") + " --repeat 1", "search");
  REQUIRE(j.at("rows").size() == 1);
  const auto& row = j.at("rows")[0];
  CHECK(row.at("valid").get<long>() <= row.at("configurations").get<long>());
  CHECK(row.at("configurations_per_cpu_s").get<double>() ==
        Approx(row.at("configurations").get<double>() / row.at("cpu_s").get<double>()));
}

TEST_CASE("bench --sweep writes a row per cluster point and the whole sweep's time", "[bench]") {
  const auto j = bench_json("--sweep " + source_path("scenarios/validation/narayanan-1.7b.yaml") + " --repeat 1", "sweep");
  CHECK(j.at("rows").size() == 4);  // nic_Gbps 200, 400 x oversubscription 1, 2
  CHECK(j.at("totals").at("points") == 4);
  CHECK(j.at("totals").at("wall_per_point_s").get<double>() == Approx(j.at("totals").at("wall_s").get<double>() / 4));
}

TEST_CASE("bench --goodput writes its row, and --set reaches the scenario", "[bench]") {
  const auto j = bench_json("--goodput " + kGoodput + " --trials 20 --repeat 1", "goodput");
  REQUIRE(j.at("rows").size() == 1);
  const double goodput = j.at("rows")[0].at("goodput_fraction");
  CHECK(goodput > 0);
  CHECK(goodput < 1);
  // Checkpoints ten times as often cost more writing but lose less work: the figure changes.
  const auto often = bench_json("--goodput " + kGoodput + " --trials 20 --repeat 1 --set reliability.checkpoint.interval_s=60", "goodput");
  CHECK(often.at("rows")[0].at("goodput_fraction") != goodput);
}

TEST_CASE("bench --serve writes a row per case (the capacity search too), and --set reaches every serving file", "[bench]") {
  const auto j = bench_json("--serve --repeat 1 --set serving.requests.duration_s=0.5", "serve");
  REQUIRE(j.at("rows").size() == 4);
  // Half a second of arrivals: about 5 requests at 10/s, about 5,000 at 10,000/s (Poisson).
  CHECK(j.at("rows")[0].at("requests").get<long>() < 25);
  for (int fleet : {1, 2}) {
    CHECK(j.at("rows")[fleet].at("requests").get<long>() > 4500);
    CHECK(j.at("rows")[fleet].at("requests").get<long>() < 5500);
  }
  // The capacity search's row counts the requests of all its rates: more than one window's.
  CHECK(j.at("rows")[3].at("requests").get<long>() > j.at("rows")[0].at("requests").get<long>());
}

TEST_CASE("bench's --gpus is one count as everywhere, and its list is --gpu-counts", "[bench]") {
  const auto one = bench_json("--cluster " + kA100 + " --gpus 8 --size 1M --repeat 1", "collective");
  REQUIRE(one.at("rows").size() == 1);
  CHECK(one.at("rows")[0].at("gpus") == 8);
  const auto two = bench_json("--cluster " + kA100 + " --gpu-counts 8,16 --size 1M --repeat 1", "collective");
  REQUIRE(two.at("rows").size() == 2);
  CHECK(two.at("rows")[1].at("gpus") == 16);
  // A ring all-reduce of 1 MiB inside one node at a slower NVLink is slower: --set reaches the cluster.
  const auto slow = bench_json("--cluster " + kA100 + " --gpus 8 --size 1M --repeat 1 --set cluster.node.scale_up.bandwidth_GBps=100",
                               "collective");
  CHECK(slow.at("rows")[0].at("time_us").get<double>() > one.at("rows")[0].at("time_us").get<double>());
}

TEST_CASE("bench's new options take bad values as one line, exit 2", "[bench]") {
  using test::require_one_line_error;
  const std::string cl = "error: command line: ";
  require_one_line_error(run_cli("bench --cluster " + kA100 + " --gpus 8,16"), cl + "--gpus: ",
                         "expected one GPU count, as on every command; bench's list of counts is --gpu-counts 8,16");
  require_one_line_error(run_cli("bench --cluster " + kA100 + " --gpus 8 --gpu-counts 8,16"), cl + "--gpus: ",
                         "expected either --gpus N (one count) or --gpu-counts A,B,... (a list)");
  require_one_line_error(run_cli("bench --cluster " + kA100 + " --gpu-counts 8,x"), cl + "--gpu-counts: ", "expected an integer");
  require_one_line_error(run_cli("bench --fabric-only --search " + kSmall), cl + "bench: ",
                         "expected one of --scenarios, --fabric-only, --search, --sweep, --goodput and --serve");
  require_one_line_error(run_cli("bench --cluster " + kA100 + " --gpus 8 --set parallel.tp=2"), cl + "--set: ",
                         "expected cluster.PATH=VALUE");
  require_one_line_error(run_cli("bench --fabric-only --cluster " + kA100 + " --set cluster.fabric.nodes=many"), "error: ",
                         "fabric.nodes");
  require_one_line_error(run_cli("bench --scenarios " + kSmall + " --set parallel.tp=x"), "error: ", "parallel.tp");
  require_one_line_error(run_cli("bench --serve --set serving.requests.duration_s=-1"), "error: ", "duration_s");
  // An option the chosen bench does not read is refused, never silently dropped.
  require_one_line_error(run_cli("bench --scenarios " + kSmall + " --repeat 3"), cl + "--repeat: ",
                         "expected it only with the collective bench, --search, --sweep, --goodput or --serve: --scenarios does not read it");
  require_one_line_error(run_cli("bench --cluster " + kA100 + " --gpus 8 --fold exact"), cl + "--fold: ",
                         "expected it only with --scenarios: the collective bench does not read it");
  require_one_line_error(run_cli("bench --serve --trials 3"), cl + "--trials: ", "expected it only with --goodput: --serve does not read it");
  require_one_line_error(run_cli("bench --fabric-only --cluster " + kA100 + " --size 1G"), cl + "--size: ",
                         "expected it only with the collective bench: --fabric-only does not read it");
  require_one_line_error(run_cli("bench --search " + kSmall + " --cluster " + kA100), cl + "--cluster: ",
                         "expected it only with the collective bench or --fabric-only: --search does not read it");
  // Output paths are checked before anything is timed, in every mode.
  require_one_line_error(run_cli("bench --scenarios " + kSmall + " --json /no/such/folder/b.json"), "error: /no/such/folder/b.json: --json: ",
                         "does not exist");
  require_one_line_error(run_cli("bench --fabric-only --cluster " + kA100 + " --csv /no/such/folder/b.csv"),
                         "error: /no/such/folder/b.csv: --csv: ", "does not exist");
}
