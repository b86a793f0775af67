// Options issue 17 asked for on the commands that lacked them: goodput's --csv (the breakdown it
// prints, closed form and Monte-Carlo) and calibrate's --set (a cluster field changed before the fit).
#include <catch2/catch.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "one_line_error.hpp"
#include "support.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;

namespace {

const std::string kGoodput = source_path("scenarios/llama3-405b-h100-16k-goodput.yaml");
const std::string kSuperpod = source_path("scenarios/clusters/dgx-h100-superpod.yaml");
const std::string kAllReduce = source_path("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt");

}  // namespace

TEST_CASE("goodput --csv writes the breakdown it prints, closed form then Monte-Carlo, as --json has them", "[csv]") {
  const std::string json = test::temp_file("", ".json");
  // --iteration-s: the step time given, nothing simulated.
  const auto r = run_cli("goodput " + kGoodput + " --days 54 --iteration-s 10 --trials 200 --json " + json + " --csv -");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(test::read_file(json));
  const std::string& csv = r.stdout_text;  // the CSV alone: the text report is left out
  const std::string header = "estimate,interruptions,training_s,checkpointing_s,lost_s,restarting_s,goodput_fraction\n";
  REQUIRE(csv.rfind(header, 0) == 0);
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  CHECK(lines == 3);
  // Each row's goodput is the JSON's, printed round-trip.
  for (const auto& [estimate, key] : {std::pair{"closed_form", "expected"}, std::pair{"monte_carlo", "monte_carlo"}}) {
    const auto at = csv.find(std::string("\n") + estimate + ",");
    REQUIRE(at != std::string::npos);
    const std::string row = csv.substr(at + 1, csv.find('\n', at + 1) - at - 1);
    const double goodput = std::stod(row.substr(row.rfind(',') + 1));
    CHECK(goodput == j.at(key).at("goodput_fraction").get<double>());
  }
  std::remove(json.c_str());
  // Without --trials, the closed form alone.
  const auto closed = run_cli("goodput " + kGoodput + " --days 54 --iteration-s 10 --csv -");
  REQUIRE(closed.exit_code == 0);
  CHECK(closed.stdout_text.find("closed_form,") != std::string::npos);
  CHECK(closed.stdout_text.find("monte_carlo") == std::string::npos);
}

TEST_CASE("goodput --csv takes bad paths as one line, exit 2", "[csv]") {
  test::require_one_line_error(run_cli("goodput " + kGoodput + " --days 54 --iteration-s 10 --csv /no/such/folder/g.csv"),
                               "error: /no/such/folder/g.csv: --csv: ", "does not exist");
  test::require_one_line_error(run_cli("goodput " + kGoodput + " --days 54 --iteration-s 10 --json - --csv -"),
                               "error: command line: --csv: ", "expected a file: --json already writes to stdout");
}

TEST_CASE("calibrate --set cluster.* changes the cluster before the fit: its starting value, not what the data say", "[calibrate]") {
  const auto plain = test::cli_json("calibrate --cluster " + kSuperpod + " " + kAllReduce);
  const auto set = test::cli_json("calibrate --cluster " + kSuperpod + " " + kAllReduce +
                                  " --set cluster.link_types.nvlink4.bandwidth_efficiency=0.5");
  auto nvlink = [](const nlohmann::json& j) {
    for (const auto& l : j.at("links"))
      if (l.at("link_type") == "nvlink4") return l;
    FAIL("no nvlink4 fit");
    return nlohmann::json();
  };
  CHECK(nvlink(plain).at("cluster_efficiency") == 0.822);  // the shipped file's
  CHECK(nvlink(set).at("cluster_efficiency") == 0.5);
  // The fit searches [0.02, 1] whatever the cluster says: the same data give the same efficiency,
  // to the golden-section search's bracket.
  CHECK(nvlink(set).at("efficiency").get<double>() == Approx(nvlink(plain).at("efficiency").get<double>()).margin(1e-4));
  CHECK(set.at("config").at("overrides") == nlohmann::json::array({"cluster.link_types.nvlink4.bandwidth_efficiency=0.5"}));
}

TEST_CASE("calibrate --set takes bad values as one line, exit 2", "[calibrate]") {
  using test::require_one_line_error;
  require_one_line_error(run_cli("calibrate --cluster " + kSuperpod + " " + kAllReduce + " --set global_batch=8"),
                         "error: command line: --set: ", "a scenario key needs --iteration SCENARIO=SECONDS to apply to");
  require_one_line_error(run_cli("calibrate --cluster " + kSuperpod + " " + kAllReduce + " --set cluster.link_types.nvlink4.bandwidth_efficiency=2"),
                         "error: ", "bandwidth_efficiency");
  require_one_line_error(run_cli("calibrate --cluster " + kSuperpod + " " + kAllReduce + " --set cluster.no_such_key=1"), "error: ",
                         "no_such_key");
}

TEST_CASE("search, sweep, goodput and serve take --catalog as run does: the GPU read from that file", "[cli]") {
  // The shipped catalog with the H100's HBM doubled, in a folder of its own.
  const std::string catalog = test::temp_file(
      test::replaced_all(test::read_file(source_path("scenarios/gpus.yaml")), "  - name: H100-SXM\n    peak_tflops: {bf16: 989, fp16: 989, fp8: 1979}\n    hbm_GiB: 80\n",
                         "  - name: H100-SXM\n    peak_tflops: {bf16: 989, fp16: 989, fp8: 1979}\n    hbm_GiB: 160\n", "catalog"));
  const std::string narayanan = source_path("scenarios/validation/narayanan-1.7b.yaml");  // A100s: --catalog is read all the same
  CHECK(test::cli_json("search " + narayanan + " --vary pp --top 1 -j 1 -q --catalog " + catalog).at("config").at("catalog") == catalog);
  CHECK(test::cli_json("sweep " + narayanan + " --vary pp --top 1 -j 1 -q --catalog " + catalog).at("config").at("catalog") == catalog);
  const auto g = test::cli_json("goodput " + kGoodput + " --days 54 --iteration-s 10 --catalog " + catalog);
  CHECK(g.at("config").at("catalog") == catalog);
  // serve: the replica's usable memory is HBM x memory_fraction (0.9 in this file), so the doubled
  // HBM gives 0.9 x 80 GiB more per GPU, floored to a byte.
  const std::string serving = source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") + " --set serving.requests.duration_s=5";
  const auto shipped = test::cli_json("serve " + serving);
  const auto doubled = test::cli_json("serve " + serving + " --catalog " + catalog);
  CHECK(doubled.at("config").at("catalog") == catalog);
  CHECK(shipped.at("config").at("catalog") != catalog);
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(doubled.at("memory").at("usable_bytes").get<double>() - shipped.at("memory").at("usable_bytes").get<double>() ==
        Approx(0.9 * 80 * gib).margin(1));
  std::remove(catalog.c_str());
  for (const std::string& command : {"search " + narayanan, "sweep " + narayanan, "goodput " + kGoodput + " --days 1", "serve " + serving})
    test::require_one_line_error(run_cli(command + " --catalog /no/such/gpus.yaml"), "error: /no/such/gpus.yaml: --catalog: ", "");
  // serve --validate's rows each name their published setup: a catalog beside them is refused.
  test::require_one_line_error(
      run_cli("serve --validate " + source_path("scenarios/validation/serving/sarathi-serve.yaml") + " --catalog " +
              source_path("scenarios/gpus.yaml")),
      "error: command line: --catalog: ", "expected a serving file");
}
