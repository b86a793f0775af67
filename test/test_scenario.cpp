// Scenarios: each shipped file resolves to the values its comments state; --set overrides change
// fields before validation; every inconsistency is a UserError naming the file, line and field.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "support.hpp"
#include "topologies/user_error.hpp"
#include "workloads/scenario.hpp"

using clustersim::test::line_of;

namespace {

namespace fs = std::filesystem;
using clustersim::load_scenario;
using clustersim::Recompute;
using clustersim::ScenarioSpec;
using clustersim::UserError;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

const std::string kGpt = "gpt3-175b-a100-1024.yaml";
const std::string kLlama = "llama3-70b-h100-1024.yaml";

ScenarioSpec shipped(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return load_scenario(clustersim::test::source_path("scenarios/" + name), overrides);
}

using Edits = std::vector<std::pair<std::string, std::string>>;

/// A copy of scenarios/ in a fresh temporary folder, so an edited file keeps the relative paths of
/// the shipped layout (clusters/, models/, gpus.yaml next to clusters/). Removed at the end.
class ScenarioTree {
 public:
  ScenarioTree() {
    std::string pattern = (fs::temp_directory_path() / "clustersim-scenario-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    root_ = pattern;
    fs::copy(clustersim::test::source_path("scenarios"), root_, fs::copy_options::recursive);
  }
  ~ScenarioTree() { fs::remove_all(root_); }
  ScenarioTree(const ScenarioTree&) = delete;
  ScenarioTree& operator=(const ScenarioTree&) = delete;

  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

  /// Rewrites `relative` as the shipped file with each edit made in its one place; returns the text.
  std::string edit(const std::string& relative, const Edits& edits) {
    std::string text = clustersim::test::shipped_with("scenarios/" + relative, "", "");
    for (const auto& [from, to] : edits) {
      line_of(text, from);
      text.replace(text.find(from), from.size(), to);
    }
    std::ofstream(path(relative)) << text;
    return text;
  }

 private:
  fs::path root_;
};

/// `load` throws a UserError at file:line, field, whose message says `says`.
void require_error(const std::function<void()>& load, const std::string& file, int line, const std::string& field,
                   const std::string& says) {
  try {
    load();
    FAIL("expected a UserError at " << file << ":" << line << " " << field);
  } catch (const UserError& e) {
    INFO(e.what());
    CHECK(e.file() == file);
    CHECK(e.line() == line);
    CHECK(e.field_path() == field);
    const std::string at = line > 0 ? file + ":" + std::to_string(line) : file;  // line 0: none, as UserError prints
    CHECK_THAT(e.what(), StartsWith(at + ": " + field + ": ") && Contains(says));
  }
}

/// The scenario `name` with `edits`, loaded from a scenario tree: fails at the line of `at`.
void expect_scenario_error(const std::string& name, const Edits& edits, const std::string& at,
                           const std::string& field, const std::string& says) {
  ScenarioTree tree;
  const std::string text = tree.edit(name, edits);
  const std::string file = tree.path(name);
  require_error([&] { load_scenario(file); }, file, line_of(text, at), field, says);
}

}  // namespace

TEST_CASE("The GPT-3 175B scenario resolves to Korthikanti's layout scaled to 1024 A100s") {
  const ScenarioSpec s = shipped(kGpt);
  CHECK(s.name == "gpt3-175b-a100-1024");
  CHECK(s.cluster.name == "dgx-a100-superpod");
  CHECK(s.cluster_file == clustersim::test::source_path("scenarios/clusters/dgx-a100-superpod.yaml"));
  CHECK(s.gpu.name == "A100-SXM-80GB");
  CHECK(s.model.name == "gpt3-175b");
  CHECK(s.gpus() == 1024);
  CHECK(s.layout.tp == 8);
  CHECK(s.layout.pp == 8);
  CHECK(s.layout.dp == 16);
  CHECK(s.layout.order == std::array{clustersim::Dim::tp, clustersim::Dim::cp, clustersim::Dim::dp, clustersim::Dim::pp});
  CHECK(s.virtual_stages == 3);
  CHECK_FALSE(s.sequence_parallel);
  CHECK_FALSE(s.distributed_optimizer);
  CHECK(s.schedule_name == "interleaved");
  REQUIRE(s.schedule != nullptr);
  CHECK(s.schedule->name() == "interleaved");
  CHECK(s.global_batch == 1536);
  CHECK(s.microbatch == 1);
  CHECK(s.microbatches() == 1536 / (1 * 16));
  CHECK(s.precision == "bf16");
  CHECK(s.recompute == Recompute::full);
}

TEST_CASE("The Llama 3 70B scenario resolves to its layout on the first 1024 H100s") {
  const ScenarioSpec s = shipped(kLlama);
  CHECK(s.cluster.name == "dgx-h100-superpod-16k");
  CHECK(s.gpu.name == "H100-SXM");
  CHECK(s.model.name == "llama3-70b");
  CHECK(s.model.kv_heads == 8);
  CHECK((s.layout.tp == 8 && s.layout.pp == 4 && s.layout.dp == 32));
  CHECK(s.virtual_stages == 5);
  CHECK(s.sequence_parallel);
  CHECK(s.distributed_optimizer);
  CHECK(s.microbatches() == 1024 / (1 * 32));
  CHECK(s.precision == "bf16");
  CHECK(s.recompute == Recompute::selective);
}

TEST_CASE("Every shipped scenario loads") {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(clustersim::test::source_path("scenarios"))) {
    // gpus.yaml is the catalog and prices.yaml the price catalog, not scenarios.
    if (entry.path().extension() != ".yaml" || entry.path().filename() == "gpus.yaml" ||
        entry.path().filename() == "prices.yaml")
      continue;
    INFO(entry.path().string());
    CHECK_NOTHROW(load_scenario(entry.path().string()));
    ++count;
  }
  CHECK(count >= 2);
}

TEST_CASE("An override of parallel.tp derives dp again, so the GPU count holds") {
  // 1024 GPUs / (tp 4 x pp 8) = dp 32; the file's dp 16 was for tp 8.
  const ScenarioSpec s = shipped(kGpt, {"parallel.tp=4"});
  CHECK((s.layout.tp == 4 && s.layout.pp == 8 && s.layout.dp == 32));
  // gpus too: 512 / (8 x 8) = 8.
  CHECK(shipped(kGpt, {"gpus=512"}).layout.dp == 8);
  CHECK(shipped(kGpt, {"parallel.pp=4", "gpus=512"}).layout.dp == 16);
}

TEST_CASE("A layout dp cannot be derived for is an error at parallel naming the product") {
  const std::string file = clustersim::test::source_path("scenarios/" + kGpt);
  const int line = line_of(clustersim::test::shipped_with("scenarios/" + kGpt, "", ""), "parallel:\n  tp");
  // 1024 / (3 x 8) is not whole.
  require_error([&] { shipped(kGpt, {"parallel.tp=3"}); }, file, line, "parallel",
                "expected tp x pp (24) to divide gpus (1024), so that dp can be derived from it");
}

TEST_CASE("An override of dp as well derives nothing: tp x pp x dp must equal gpus") {
  const std::string file = clustersim::test::source_path("scenarios/" + kGpt);
  const int line = line_of(clustersim::test::shipped_with("scenarios/" + kGpt, "", ""), "parallel:\n  tp");
  require_error([&] { shipped(kGpt, {"parallel.tp=4", "parallel.dp=16"}); }, file, line, "parallel",
                "expected tp x pp x dp to equal gpus (1024), got 4 x 8 x 16 = 512");
}

TEST_CASE("A layout may leave one of tp, pp and dp out, and it is derived from gpus") {
  ScenarioTree tree;
  tree.edit(kGpt, {{"  tp: 8\n", ""}});
  const ScenarioSpec no_tp = load_scenario(tree.path(kGpt));
  CHECK(no_tp.layout.tp == 1024 / (8 * 16));
  tree.edit(kGpt, {{"  pp: 8\n", ""}});
  CHECK(load_scenario(tree.path(kGpt)).layout.pp == 1024 / (8 * 16));
  tree.edit(kGpt, {{"  dp: 16\n", ""}});
  CHECK(load_scenario(tree.path(kGpt)).layout.dp == 1024 / (8 * 8));
}

TEST_CASE("Two of tp, pp and dp left out is an error at parallel") {
  expect_scenario_error(kGpt, {{"  tp: 8\n", ""}, {"  dp: 16\n", ""}}, "parallel:\n  pp", "parallel",
                        "expected at most one of tp, pp and dp left out (it is derived from gpus); tp, dp are missing");
}

TEST_CASE("A derived tp that does not divide the heads fails at parallel with the model's constraint") {
  // 640 GPUs / (pp 8 x dp 16) = tp 5, which does not divide GPT-3's 96 heads.
  expect_scenario_error(kGpt, {{"  tp: 8\n", ""}, {"gpus: 1024", "gpus: 640"}}, "parallel:\n  pp", "parallel",
                        "expected a divisor of the 96 attention heads");
}

TEST_CASE("A consistent set of overrides passes") {
  const ScenarioSpec s = shipped(kGpt, {"parallel.tp=4", "parallel.dp=32"});
  CHECK((s.layout.tp == 4 && s.layout.pp == 8 && s.layout.dp == 32));
  CHECK(s.microbatches() == 1536 / 32);
}

TEST_CASE("Overrides of top-level fields change the batch and the model") {
  CHECK(shipped(kGpt, {"global_batch=512"}).microbatches() == 512 / 16);
  // The model path is relative to the scenario file, as if written there; 80 layers need 8 x 2 chunks.
  const ScenarioSpec s = shipped(kGpt, {"model=models/llama3-70b.yaml", "parallel.virtual_stages=2"});
  CHECK(s.model.name == "llama3-70b");
  CHECK(s.virtual_stages == 2);
  CHECK(shipped(kGpt, {"recompute=selective", "precision=fp16"}).recompute == Recompute::selective);
}

TEST_CASE("An override of a field the schema lacks names --set and the path") {
  require_error([] { shipped(kGpt, {"parallel.warp_drive=2"}); }, "command line", 0, "--set",
                "unknown scenario field 'parallel.warp_drive'");
  require_error([] { shipped(kGpt, {"parallel=4"}); }, "command line", 0, "--set", "unknown scenario field 'parallel'");
  require_error([] { shipped(kGpt, {"parallel.tp"}); }, "command line", 0, "--set", "expected FIELD=VALUE");
  require_error([] { shipped(kGpt, {"parallel.tp=[4, 8]"}); }, "command line", 0, "--set", "expected one value");
}

TEST_CASE("A bad overridden value names the scenario file and the field") {
  const std::string file = clustersim::test::source_path("scenarios/" + kGpt);
  const std::string text = clustersim::test::shipped_with("scenarios/" + kGpt, "", "");
  require_error([] { shipped(kGpt, {"parallel.tp=four"}); }, file, line_of(text, "tp: 8"), "parallel.tp",
                "expected an integer, got 'four'");
  require_error([] { shipped(kGpt, {"recompute=some"}); }, file, line_of(text, "recompute:"), "recompute",
                "expected one of: none, selective, full");
}

TEST_CASE("TP x PP x DP other than gpus is an error at parallel") {
  expect_scenario_error(kGpt, {{"dp: 16", "dp: 8"}}, "parallel:\n  tp", "parallel",
                        "expected tp x pp x dp to equal gpus (1024), got 8 x 8 x 8 = 512");
}

TEST_CASE("More GPUs than the cluster has is an error at gpus") {
  expect_scenario_error(kGpt, {{"gpus: 1024", "gpus: 4096"}, {"dp: 16", "dp: 64"}}, "gpus: 4096", "gpus",
                        "expected at most the 3072 GPUs of dgx-a100-superpod");
}

TEST_CASE("Layers not divisible across stages and chunks is an error at pp or virtual_stages") {
  // 96 layers over 8 x 5 = 40 chunks.
  expect_scenario_error(kGpt, {{"virtual_stages: 3", "virtual_stages: 5"}}, "virtual_stages: 5",
                        "parallel.virtual_stages", "expected pp x virtual_stages (40) to divide the 96 layers");
  // 96 layers over 5 stages; 8 x 5 x 16 = 640 GPUs keeps the product right.
  expect_scenario_error(kGpt, {{"pp: 8", "pp: 5"}, {"gpus: 1024", "gpus: 640"}}, "pp: 5", "parallel.pp",
                        "expected a divisor of the 96 layers");
}

TEST_CASE("Heads or KV heads not divisible by TP is an error at tp") {
  // 96 heads over 5 ranks; 5 x 8 x 16 = 640 GPUs.
  expect_scenario_error(kGpt, {{"tp: 8", "tp: 5"}, {"gpus: 1024", "gpus: 640"}}, "tp: 5", "parallel.tp",
                        "expected a divisor of the 96 attention heads");
  // A GQA variant of GPT-3 with 32 KV heads: tp 12 divides the 96 heads but neither divides nor is a
  // multiple of 32, so KV heads would split unevenly. 12 x 8 x 16 = 1536 GPUs.
  ScenarioTree tree;
  tree.edit("models/gpt3-175b.yaml", {{"kv_heads: 96", "kv_heads: 32"}});
  const std::string text = tree.edit(kGpt, {{"tp: 8", "tp: 12"}, {"gpus: 1024", "gpus: 1536"}});
  require_error([&] { load_scenario(tree.path(kGpt)); }, tree.path(kGpt), line_of(text, "tp: 12"), "parallel.tp",
                "expected a divisor or a multiple of the 32 KV heads");
}

TEST_CASE("TP above the KV head count passes when each KV head is replicated evenly") {
  // Llama 3 70B has 8 KV heads; tp 16 holds each on two ranks. 16 x 4 x 16 = 1024 GPUs.
  const ScenarioSpec s = shipped(kLlama, {"parallel.tp=16", "parallel.dp=16"});
  CHECK(s.layout.tp == 2 * s.model.kv_heads);
}

TEST_CASE("A global batch not divisible by microbatch x DP is an error at global_batch") {
  expect_scenario_error(kGpt, {{"global_batch: 1536", "global_batch: 1540"}}, "global_batch: 1540", "global_batch",
                        "expected a multiple of microbatch x dp (1 x 16 = 16)");
}

TEST_CASE("A microbatch count the schedule cannot take is an error at schedule") {
  // 1552 / 16 = 97 microbatches: interleaved's last group of 97 mod 8 = 1 is shorter than p = 8.
  expect_scenario_error(kGpt, {{"global_batch: 1536", "global_batch: 1552"}}, "schedule:", "schedule",
                        "interleaved cannot run pp = 8, 97 microbatches, virtual_stages = 3: m = 97 is not a multiple");
  expect_scenario_error(kGpt, {{"schedule: interleaved", "schedule: 1f1b"}}, "schedule:", "schedule",
                        "1f1b cannot run pp = 8, 96 microbatches, virtual_stages = 3: 1f1b runs one chunk per rank");
}

TEST_CASE("An unknown schedule name is an error that lists the known ones") {
  expect_scenario_error(kGpt, {{"schedule: interleaved", "schedule: zb-h3"}}, "schedule:", "schedule",
                        "expected a pipeline schedule, one of: " + clustersim::schedule_names() + "; got 'zb-h3'");
}

TEST_CASE("A model or cluster file that cannot be opened is an error at its field") {
  expect_scenario_error(kGpt, {{"models/gpt3-175b.yaml", "models/gpt-4.yaml"}}, "model:", "model", "cannot open '");
  expect_scenario_error(kGpt, {{"clusters/dgx-a100-superpod.yaml", "clusters/selene.yaml"}}, "cluster:", "cluster",
                        "clusters/selene.yaml' (no such file; paths are relative to the scenario file)");
}

TEST_CASE("A cluster GPU missing from the catalog is an error at the cluster's gpu field") {
  ScenarioTree tree;
  const std::string cluster = "clusters/dgx-a100-superpod.yaml";
  const std::string text = tree.edit(cluster, {{"gpu: A100-SXM-80GB", "gpu: A100-SXM-40GB"}});
  // The catalog is found at <cluster's folder>/../gpus.yaml, here the tree's own copy.
  require_error([&] { load_scenario(tree.path(kGpt)); }, tree.path(cluster), line_of(text, "gpu: A100"), "gpu",
                "expected a GPU from " + tree.path("gpus.yaml"));
}

TEST_CASE("A precision the GPU cannot run is an error at precision") {
  expect_scenario_error(kGpt, {{"precision: bf16", "precision: fp8"}}, "precision:", "precision",
                        "expected a datatype that A100-SXM-80GB runs");
}

TEST_CASE("Unknown keys are errors at their own field path") {
  expect_scenario_error(kGpt, {{"microbatch: 1", "microbatch: 1\nflash_attention: true"}}, "flash_attention:",
                        "flash_attention", "unknown key");
  expect_scenario_error(kGpt, {{"order: tp-dp-pp", "order: tp-dp-pp\n  warp_drive: 2"}}, "warp_drive: 2", "parallel.warp_drive",
                        "unknown key");
}

TEST_CASE("An override can set a field the file leaves to its default") {
  ScenarioTree tree;
  const std::string text = tree.edit(kGpt, {{"  virtual_stages: 3\n", ""}});
  // Without it, v = 1 and interleaved does not apply; --set adds the key under parallel.
  require_error([&] { load_scenario(tree.path(kGpt)); }, tree.path(kGpt), line_of(text, "schedule:"), "schedule",
                "interleaved needs at least 2 chunks per rank");
  CHECK(load_scenario(tree.path(kGpt), {"parallel.virtual_stages=3"}).virtual_stages == 3);
}

// ----- reliability: what the model assumes is checked at load, never an assertion -----

TEST_CASE("an ffn_hidden that tp does not divide is an error at tp, not an assertion later") {
  ScenarioTree tree;
  tree.edit("models/gpt3-175b.yaml", {{"ffn_hidden: 49152", "ffn_hidden: 49156"}});  // 49156 = 4 x 12289
  const std::string text = tree.edit(kGpt, {});
  require_error([&] { load_scenario(tree.path(kGpt)); }, tree.path(kGpt), line_of(text, "tp: 8"), "parallel.tp",
                "expected a divisor of ffn_hidden (49156)");
}

TEST_CASE("sequence parallelism needs tp to divide a GPU's tokens per microbatch") {
  // GPT-3 has 2048-token sequences: tp 8 with a microbatch of 1 splits them 256 per rank; seq_len
  // 2052 = 4 x 513 leaves 2052 tokens, not divisible by 8.
  ScenarioTree tree;
  tree.edit("models/gpt3-175b.yaml", {{"seq_len: 2048", "seq_len: 2052"}});
  const std::string text = tree.edit(kGpt, {{"sequence_parallel: false", "sequence_parallel: true"}});
  require_error([&] { load_scenario(tree.path(kGpt)); }, tree.path(kGpt), line_of(text, "sequence_parallel"),
                "parallel.sequence_parallel", "expected tp (8) to divide the 2052 tokens of a microbatch on a GPU");
}

TEST_CASE("moe.seed is an integer: 1.5 and 1e300 are errors, not truncated") {
  const std::string file = clustersim::test::source_path("scenarios/deepseek-v3-h800-2048.yaml");
  for (const std::string seed : {"1.5", "1e300", "-1"}) {
    const UserError e = clustersim::test::error_of([&] { load_scenario(file, {"moe.seed=" + seed}); });
    CHECK(e.field_path() == "moe.seed");
    CHECK_THAT(e.what(), Contains("expected an integer"));
  }
}

TEST_CASE("stage_layers of huge counts is an error per element, not a wrapped sum") {
  ScenarioTree tree;
  const std::string text =
      tree.edit(kGpt, {{"  virtual_stages: 3\n", "  virtual_stages: 1\n  stage_layers: [9223372036854775807, 9223372036854775807, "
                                                  "-9223372036854775807, 12, 12, 12, 12, 12]\n"},
                       {"schedule: interleaved", "schedule: 1f1b"}});
  require_error([&] { load_scenario(tree.path(kGpt)); }, tree.path(kGpt), line_of(text, "stage_layers"),
                "parallel.stage_layers[0]", "expected an integer from 0 to 96");
}

TEST_CASE("a pipeline too long to simulate is refused at load with its step count") {
  ScenarioTree tree;
  // 4096 layers on pp 8 x 512 chunks with 96 microbatches each: 393,216 steps are fine; a global
  // batch of 2^20 sequences on a microbatch of 1 is 8 x 512 x 65536 = 268M steps.
  tree.edit("models/gpt3-175b.yaml", {{"layers: 96", "layers: 4096"}});
  const std::string text =
      tree.edit(kGpt, {{"virtual_stages: 3", "virtual_stages: 512"}, {"global_batch: 1536", "global_batch: 1048576"}});
  require_error([&] { load_scenario(tree.path(kGpt)); }, tree.path(kGpt), line_of(text, "virtual_stages"),
                "parallel.virtual_stages", "expected at most 4194304 pipeline steps (pp x virtual_stages x microbatches), got 268435456");
}
