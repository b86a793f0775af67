// A cluster of two GPU models (node_groups) and a job across them: each pipeline stage computes as
// it would on a cluster of its own model, replicas on unlike models fold apart (exactly), the
// memory check is per model, and bad node groups or stage_gpus are one line at their field.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>

#include "one_line_error.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

/// Four DGX A100 nodes on the shipped fat tree, `groups` appended after its `gpu:` line.
std::string four_nodes(const std::string& gpu, const std::string& groups = "") {
  std::string yaml = test::shipped_with("scenarios/clusters/dgx-a100-fat-tree.yaml", "  nodes: 384\n", "  nodes: 4\n");
  return test::replaced_all(yaml, "gpu: A100-SXM-80GB\n", "gpu: " + gpu + "\n" + groups, "cluster");
}

const std::string kMixed = "node_groups:\n  - {gpu: H100-SXM, nodes: \"2-3\"}\n";

/// The scenario with the catalog's H100 interference turned off (as the A100's is): an NCCL kernel's
/// SMs slow the compute beside it by the model's own SM count, which a speed ratio carries only
/// approximately, so the closed forms below hold compute alone.
nlohmann::json run(const std::string& cluster, const std::string& parallel, const std::string& options = " --fold exact") {
  const std::string scenario = test::small_megatron_scenario("hetero", cluster, parallel);
  const std::string catalog = scenario.substr(0, scenario.rfind('/')) + "/gpus.yaml";
  const std::string text = test::replaced_all(test::read_file(catalog), "      count: 132\n", "      count: 132\n      interference: false\n", "catalog");
  std::ofstream(catalog) << text;
  return test::cli_json("run " + scenario + options);
}

double compute_of(const nlohmann::json& j, int stage) {
  const nlohmann::json& t = j["stages"][static_cast<std::size_t>(stage)]["time_s"];
  return t["compute"].get<double>() + t["recompute"].get<double>();
}

}  // namespace

TEST_CASE("each pipeline stage computes as on a cluster of its own GPU model, and the job is paced by the slower") {
  // tp 8 x dp 2 per stage: two whole nodes each. Stage 0 on the A100 nodes, stage 1 on the H100s,
  // then the other way round.
  const nlohmann::json a100 = run(four_nodes("A100-SXM-80GB"), "{tp: 8, pp: 2, dp: 2}");
  const nlohmann::json h100 = run(four_nodes("H100-SXM"), "{tp: 8, pp: 2, dp: 2}");
  const nlohmann::json ah = run(four_nodes("A100-SXM-80GB", kMixed), "{tp: 8, pp: 2, dp: 2, stage_gpus: [A100-SXM-80GB, H100-SXM]}");
  const nlohmann::json ha = run(four_nodes("A100-SXM-80GB", kMixed), "{tp: 8, pp: 2, dp: 2, stage_gpus: [H100-SXM, A100-SXM-80GB]}");
  // A stage's compute is the ratio of its model's to the cluster's GPU's, applied to the latter's:
  // its own model's, to rounding.
  CHECK(test::relative_error(compute_of(ah, 0), compute_of(a100, 0)) < 1e-9);
  CHECK(test::relative_error(compute_of(ah, 1), compute_of(h100, 1)) < 1e-9);
  CHECK(test::relative_error(compute_of(ha, 0), compute_of(h100, 0)) < 1e-9);
  CHECK(test::relative_error(compute_of(ha, 1), compute_of(a100, 1)) < 1e-9);
  CHECK(ah["stages"][0]["gpu_model"] == "A100-SXM-80GB");
  CHECK(ah["stages"][1]["gpu_model"] == "H100-SXM");
  // Half the GPUs slower: the job runs no faster than the H100s alone and no slower than the A100s.
  for (const nlohmann::json* mixed : {&ah, &ha}) {
    CHECK((*mixed)["iteration_s"].get<double>() > h100["iteration_s"].get<double>());
    CHECK((*mixed)["iteration_s"].get<double>() <= a100["iteration_s"].get<double>() * (1 + 1e-9));
  }
  // MFU over the job's own peaks: half the GPUs at each model's.
  const double tokens = ah["tokens_per_s"].get<double>();
  CHECK(test::relative_error(ah["mfu"].get<double>() / tokens,
                             1 / (0.5 / (a100["mfu"].get<double>() / a100["tokens_per_s"].get<double>()) +
                                  0.5 / (h100["mfu"].get<double>() / h100["tokens_per_s"].get<double>()))) < 1e-9);
}

TEST_CASE("replicas on unlike GPU models fold apart, and the fold stays exact") {
  // tp-pp-dp: replica 0 on nodes 0-1 (A100), replica 1 on nodes 2-3 (H100).
  const std::string mixed = four_nodes("A100-SXM-80GB", kMixed);
  const nlohmann::json folded = run(mixed, "{tp: 8, pp: 2, dp: 2, order: tp-pp-dp}");
  const nlohmann::json every = run(mixed, "{tp: 8, pp: 2, dp: 2, order: tp-pp-dp}", " --fold none");
  CHECK(folded["fold"] == "exact");
  CHECK(folded["simulated_replicas"] == 2);
  CHECK(test::relative_error(folded["iteration_s"].get<double>(), every["iteration_s"].get<double>()) < 1e-9);
  // The default (assume) becomes exact: replica 0 cannot stand for a replica on other GPUs.
  const nlohmann::json by_default = run(mixed, "{tp: 8, pp: 2, dp: 2, order: tp-pp-dp}", "");
  CHECK(by_default["fold"] == "exact");
  CHECK(by_default["iteration_s"] == folded["iteration_s"]);
  // Both replicas on one model each stage (stage_gpus): alike, folded into one.
  const nlohmann::json staged = run(mixed, "{tp: 8, pp: 2, dp: 2, stage_gpus: [A100-SXM-80GB, H100-SXM]}");
  const nlohmann::json staged_every = run(mixed, "{tp: 8, pp: 2, dp: 2, stage_gpus: [A100-SXM-80GB, H100-SXM]}", " --fold none");
  CHECK(test::relative_error(staged["iteration_s"].get<double>(), staged_every["iteration_s"].get<double>()) < 1e-9);
}

TEST_CASE("a job that stage_gpus places on later nodes is traced by its GPUs' cluster ids") {
  // 16 GPUs as tp 8 x pp 2, both stages on the H100 nodes 2 and 3: GPUs 16-31 of the cluster.
  const std::string scenario = test::small_megatron_scenario("hetero-trace", four_nodes("A100-SXM-80GB", kMixed),
                                                             "{tp: 8, pp: 2, dp: 1, stage_gpus: [H100-SXM, H100-SXM]}");
  const std::string trace = test::temp_file("", ".json");
  const auto r = test::run_cli("run " + scenario + " --set gpus=16 --trace " + trace + " --trace-ranks 16,24");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(trace);
  const nlohmann::json t = nlohmann::json::parse(in);
  std::map<int, std::string> named;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") named[e["pid"].get<int>()] = e["args"]["name"];
  REQUIRE(named.size() == 2);
  CHECK(named.at(16).find("pipeline rank 0") != std::string::npos);
  CHECK(named.at(24).find("pipeline rank 1") != std::string::npos);
  // GPUs the job does not hold, below its highest: none kept is one line; beyond the cluster's nodes it holds, out of range.
  test::require_one_line_error(test::run_cli("run " + scenario + " --set gpus=16 --trace " + trace + " --trace-ranks 0-15"),
                               "error: command line: --trace-ranks:", "expected GPUs that take part in the job");
  test::require_one_line_error(test::run_cli("run " + scenario + " --set gpus=16 --trace " + trace + " --trace-ranks 32"),
                               "error: command line: --trace-ranks:", "expected an integer from 0 to 31");
}

TEST_CASE("search keeps the pp that stage_gpus fixes, so every verified configuration runs on its stages' models") {
  const std::string scenario = test::source_path("scenarios/heterogeneous/llama3-70b-h100-h200.yaml");
  // Without --vary every dimension but pp varies; each row the engine verifies runs (a pp other than
  // stage_gpus' four would be the scenario's error, "not run").
  const nlohmann::json j = test::cli_json("search " + scenario + " --top 2 --vary tp,cp,dp,microbatch -q");
  REQUIRE(j["rows"].size() == 2);
  for (const auto& row : j["rows"]) {
    INFO(row.dump());
    CHECK(row["pp"] == 4);
    CHECK(row["engine"]["iteration_s"].get<double>() > 0);
  }
  test::require_one_line_error(test::run_cli("search " + scenario + " --vary tp,pp"), "error: command line: --vary:",
                               "expected dimensions without pp: the scenario's parallel.stage_gpus names the GPU models of 4");
}

TEST_CASE("search screens each pipeline rank on its own GPU model, within 5% of the engine") {
  // Stage 0 on the A100s, stage 1 (which also runs the output layer and loss) on the H100s: the job
  // runs far faster than on A100s alone, which a screen timing every rank on the cluster's A100 misses
  // (it read 13-40% slow here), and the pipeline is paced by ranks of unlike speed.
  const std::string staged = "{tp: 8, pp: 2, dp: 2, stage_gpus: [A100-SXM-80GB, H100-SXM]}";
  const std::string scenario = test::small_megatron_scenario("hetero-search", four_nodes("A100-SXM-80GB", kMixed), staged);
  const std::string args = "search " + scenario + " --vary tp,recompute -j 2";
  const nlohmann::json j = test::cli_json(args + " --top 100 -q");
  REQUIRE(j["valid"].get<int>() == 12);  // tp 1 to 8 x three recompute modes
  REQUIRE(j["rows"].size() == 12);
  const std::string all_a100 = test::small_megatron_scenario("hetero-search-a100", four_nodes("A100-SXM-80GB"), "{tp: 8, pp: 2, dp: 2}");
  const nlohmann::json a100 = test::cli_json("search " + all_a100 + " --vary tp,recompute --top 12 -j 2 -q");
  std::map<std::string, double> a100_screen;
  for (const auto& row : a100["rows"]) a100_screen[row["configuration"]] = row["screen"]["iteration_s"];
  REQUIRE(a100_screen.size() == 12);
  for (const auto& row : j["rows"]) {
    INFO(row.dump());
    const double engine = row["engine"]["iteration_s"].get<double>(), screen = row["screen"]["iteration_s"].get<double>();
    CHECK(std::abs(screen - engine) / engine < 0.05);
    CHECK(row["screen"]["memory_bytes"].get<double>() == Approx(row["engine"]["memory_bytes"].get<double>()).epsilon(1e-9));
    // Half the GPUs faster: every configuration screens faster than on the A100s alone.
    CHECK(screen < a100_screen.at(row["configuration"]));
  }
  // The table names both models.
  const auto r = test::run_cli(args + " --top 1");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Catch::Matchers::Contains("(megatron-1.7b on 16 A100-SXM-80GB + 16 H100-SXM; global batch 16)"));
}

TEST_CASE("the memory check is per GPU model: a stage that fits an H200 does not fit an H100") {
  const std::string scenario = test::source_path("scenarios/heterogeneous/llama3-70b-h100-h200.yaml");
  const auto r = test::run_cli("run " + scenario + " --set parallel.stage_gpus=H200-SXM,H100-SXM,H200-SXM,H100-SXM");
  test::require_one_line_error(r, "error: " + scenario + ":", "pipeline stage 1 needs");
  CHECK_THAT(r.stderr_text, Catch::Matchers::Contains("than the H100-SXM's 80.00 GiB"));
  const nlohmann::json j = test::cli_json("run " + scenario + " --fold exact");
  const double h200_GiB = test::shipped_gpu("H200-SXM").hbm_bytes / double(1ULL << 30);
  CHECK(j["stages"][0]["memory_bytes"]["total"].get<double>() / double(1ULL << 30) > 80);
  CHECK(j["stages"][0]["memory_bytes"]["total"].get<double>() / double(1ULL << 30) <= h200_GiB);
  CHECK(j["stages"][0]["gpu_model"] == "H200-SXM");
}

TEST_CASE("bad node groups and stage_gpus are one line at their field, exit 2") {
  struct Bad {
    std::string groups, parallel, file, field, expected;
  };
  const std::string ok = "{tp: 8, pp: 2, dp: 2}";
  const std::vector<Bad> cases = {
      {"node_groups:\n  - {gpu: V100-SXM, nodes: \"2-3\"}\n", ok, "cluster", "node_groups[0].gpu", "V100-SXM"},
      {"node_groups:\n  - {gpu: H100-SXM, nodes: \"2-3\"}\n  - {gpu: H200-SXM, nodes: 3}\n", ok, "cluster", "node_groups[1].nodes",
       "expected node groups that share no node; node 3 is already in node_groups[0]"},
      {"node_groups:\n  - {gpu: H100-SXM, nodes: \"2-4\"}\n", ok, "cluster", "node_groups[0].nodes", "each within 0 to 3, got '2-4'"},
      {"node_groups:\n  - {gpu: H100-SXM, nodes: \"3-2\"}\n", ok, "cluster", "node_groups[0].nodes", "from the lower id up"},
      {"node_groups:\n  - {gpu: A100-SXM-80GB, nodes: 3}\n", ok, "cluster", "node_groups[0].gpu", "another GPU model than the cluster's own"},
      {"node_groups: H100-SXM\n", ok, "cluster", "node_groups", "expected a list of node groups"},
      {kMixed, "{tp: 8, pp: 2, dp: 2, stage_gpus: [H100-SXM]}", "scenario", "parallel.stage_gpus", "expected a list of 2 GPU models"},
      {kMixed, "{tp: 8, pp: 2, dp: 2, stage_gpus: [H100-SXM, B200]}", "scenario", "parallel.stage_gpus[1]",
       "expected a GPU model the cluster holds (A100-SXM-80GB, H100-SXM), got 'B200'"},
      {kMixed, "{tp: 8, pp: 2, dp: 2, stage_gpus: [H100-SXM, H100-SXM]}", "scenario", "parallel.stage_gpus[1]",
       "expected at most 1 pipeline ranks on H100-SXM"},
      {kMixed, "{tp: 2, pp: 8, dp: 2, stage_gpus: [H100-SXM, H100-SXM, H100-SXM, H100-SXM, A100-SXM-80GB, A100-SXM-80GB, "
               "A100-SXM-80GB, A100-SXM-80GB]}", "scenario", "parallel.stage_gpus", "to fill whole nodes of 8 GPUs"},
      {kMixed, "{tp: 8, pp: 2, dp: 2, order: tp-pp-dp, stage_gpus: [H100-SXM, A100-SXM-80GB]}", "scenario", "parallel.stage_gpus",
       "put pp last"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.groups << bad.parallel);
    const std::string scenario = test::small_megatron_scenario("hetero-bad", four_nodes("A100-SXM-80GB", bad.groups), bad.parallel);
    const std::string cluster = scenario.substr(0, scenario.rfind('/')) + "/clusters/cluster.yaml";
    const std::string file = bad.file == "cluster" ? cluster : scenario;
    const std::string needle = bad.file == "cluster" ? (bad.field.rfind("node_groups[1]", 0) == 0 ? "H200-SXM" : "node_groups:") : "parallel:";
    int line = test::line_of(test::read_file(file), needle);
    if (bad.file == "cluster" && bad.field != "node_groups" && bad.field.rfind("node_groups[1]", 0) != 0) ++line;
    test::require_one_line_error(test::run_cli("run " + scenario), "error: " + file + ":" + std::to_string(line) + ": " + bad.field + ": ",
                                 bad.expected);
  }
}
