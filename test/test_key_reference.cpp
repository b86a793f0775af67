// The key reference (`clustersim schema`, scenarios/README.md) against the loaders themselves: every
// mapping a loader checks with expect_keys is watched while every shipped scenario, model and
// cluster is loaded, and the keys it allows must be exactly the reference's.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "support.hpp"
#include "topologies/cluster_overrides.hpp"
#include "topologies/cluster_spec.hpp"
#include "topologies/yaml_keys_observer.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/key_reference.hpp"
#include "workloads/model.hpp"
#include "workloads/scenario.hpp"
#include "workloads/variability.hpp"

using namespace clustersim;

namespace {

/// What kind of file a shipped YAML file is, from its top-level keys; "" for the others (the GPU
/// catalog, calibration and validation rows).
std::string kind_of(const std::string& text) {
  const auto has = [&](const char* key) { return text.rfind(key, 0) == 0 || text.find(std::string("\n") + key) != std::string::npos; };
  if (has("parallel:")) return "scenario";
  if (has("fabric:")) return "cluster";
  if (has("layers:") || has("num_layers:") || has("num_hidden_layers:")) return "model";
  return "";
}

/// A loader's field path and key as the reference writes it: list elements as [], names the user
/// picks (link types, component kinds) as NAME and KIND.
std::string reference_key(const std::string& path, const std::string& key) {
  std::string full = path.empty() ? key : path + "." + key;
  full = std::regex_replace(full, std::regex(R"(\[[0-9]+\])"), "[]");
  full = std::regex_replace(full, std::regex(R"(^link_types\.[^.]+\.)"), "link_types.NAME.");
  full = std::regex_replace(full, std::regex(R"(^reliability\.components\.[^.]+\.)"), "reliability.components.KIND.");
  return full;
}

/// Every (kind, key) the loaders allow in the shipped files, and a few inputs for branches no shipped
/// file takes (the other speed distributions, flapping links, recompute by module, a collectives: section).
std::set<std::pair<std::string, std::string>> keys_the_loaders_allow() {
  std::set<std::pair<std::string, std::string>> seen;
  std::map<std::string, std::string> kinds;  // file -> kind
  std::string prefix;                        // the path of a section loaded on its own
  observe_expected_keys([&](const std::string& file, const std::string& path, const std::vector<std::string>& allowed) {
    const auto kind = kinds.find(file);
    if (kind == kinds.end()) return;
    const std::string at = prefix.empty() ? path : path.empty() ? prefix : prefix + "." + path;
    for (const std::string& key : allowed) seen.insert({kind->second, reference_key(at, key)});
  });
  std::vector<std::pair<std::string, std::string>> files;  // (kind, path)
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test::source_path("scenarios")))
    if (entry.path().extension() == ".yaml")
      if (const std::string kind = kind_of(test::read_file(entry.path().string())); !kind.empty())
        files.push_back({kind, entry.path().string()});
  REQUIRE(files.size() > 60);
  for (const auto& [kind, path] : files) {
    kinds[path] = kind;
    INFO(path);
    if (kind == "scenario") load_scenario(path);
    else if (kind == "cluster") load_cluster_spec(path);
    else load_model_spec(path);
  }
  const ClusterSpec a100 = load_cluster_spec(test::source_path("scenarios/clusters/dgx-a100-superpod.yaml"));
  prefix = "variability";
  for (const char* draw : {"{distribution: lognormal, sigma: 0.1}", "{distribution: empirical, values: [1, 0.9]}"}) {
    kinds["variability.yaml"] = "scenario";
    parse_variability(YamlField::load_string(std::string("gpu_speed: ") + draw, "variability.yaml"), a100);
  }
  parse_variability(YamlField::load_string("flapping_links: [{link: leaf0-spine0, down_s: 1, period_s: 60, note: x}]", "variability.yaml"), a100);
  prefix.clear();
  const std::string by_module =
      test::replaced_all(test::replaced_all(test::replaced_all(test::read_file(test::source_path("scenarios/validation/korthikanti-22b-seqsel.yaml")),
                                                               "recompute: selective", "recompute: {modules: [core_attn]}", "scenario"),
                                            "../clusters/", test::source_path("scenarios/clusters/"), "scenario"),
                         "../models/", test::source_path("scenarios/models/"), "scenario");
  const std::string path = test::temp_file(by_module + "collectives: {algorithm: best}\n");
  kinds[path] = "scenario";
  load_scenario(path);
  observe_expected_keys({});
  return seen;
}

}  // namespace

TEST_CASE("The key reference lists exactly the keys the scenario, model and cluster loaders accept", "[schema]") {
  const auto allowed = keys_the_loaders_allow();
  std::set<std::pair<std::string, std::string>> listed;
  for (const KeyReference& k : key_reference()) {
    INFO(k.file << " " << k.key);
    CHECK(listed.insert({k.file, k.key}).second);  // once each
    CHECK(*k.unit);                                // every key says its unit or values
  }
  for (const auto& [kind, key] : allowed) {
    INFO("a " << kind << " key the loader accepts but the reference leaves out: " << key);
    CHECK(listed.count({kind, key}) == 1);
  }
  for (const auto& [kind, key] : listed) {
    INFO("a " << kind << " key in the reference that no loader accepts: " << key);
    CHECK(allowed.count({kind, key}) == 1);
  }
}

TEST_CASE("The key reference gives each Megatron-LM and Hugging Face alias beside its key", "[schema]") {
  std::map<std::string, std::string> aliases;
  for (const KeyReference& k : key_reference()) aliases[std::string(k.file) + ":" + k.key] = key_aliases_of(k);
  CHECK(aliases["model:layers"] == "num_layers (Megatron-LM), num_hidden_layers (Hugging Face)");
  CHECK(aliases["scenario:parallel.tp"] == "tensor_model_parallel_size (Megatron-LM)");
  CHECK(aliases["scenario:microbatch"] == "micro_batch_size (Megatron-LM)");
  CHECK(aliases["cluster:name"].empty());
}

TEST_CASE("scenarios/README.md's key reference is clustersim schema --markdown, word for word", "[schema]") {
  const auto r = test::run_cli("schema --markdown");
  REQUIRE(r.exit_code == 0);
  CHECK(r.stdout_text == key_reference_markdown());
  const std::string readme = test::read_file(test::source_path("scenarios/README.md"));
  const std::string begin = "<!-- clustersim schema --markdown: begin -->\n", end = "<!-- clustersim schema --markdown: end -->";
  const auto from = readme.find(begin), to = readme.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  CHECK(readme.substr(from + begin.size(), to - from - begin.size()) == r.stdout_text);
}

// ----- defaults and units -----

namespace {

/// A default the reference writes as one word or number ("1", "false", "p2p", "heads"), not a
/// sentence ("one of tp, pp, dp may be left out") or "none" (an absent optional).
bool scalar_default(const KeyReference& k) {
  return std::regex_match(k.default_value, std::regex(R"([A-Za-z0-9_.\-]+)")) && std::string(k.default_value) != "none";
}

/// How the test sees one key: what the loader made of it (`read`: any text that changes with the
/// key's value), the value written to mean the documented default (itself, or for a default that
/// names another key, that key's value in the base file), another value, and what the key needs
/// beside it (e.g. a lognormal distribution for `median`).
struct DefaultCheck {
  std::string key;
  std::string as_written;  // "": the documented default itself
  std::string other;       // "": the key takes only its default (moe.dropless: true)
  std::vector<std::string> context;
  std::vector<std::string> other_context = {};  // what only the other value needs (scenario keys)
  // A scenario key --set cannot reach: YAML appended to the scenario, "@" standing for "LEAF: VALUE, "
  // (nothing when the key is left out).
  std::string yaml = "";
};

/// The scenario files the checks load: a small MoE job (Mixtral-like, 4 layers) on 32 GPUs of the
/// SuperPOD, with its catalog beside it, so every scenario key has something to act on.
struct Fixture {
  std::string dir, scenario, model, cluster;
};

const char* const kModelYaml =
    "name: small-moe\nlayers: 4\nhidden: 1024\nheads: 16\nffn: swiglu\nmoe:\n  routed_experts: 8\n  top_k: 2\n"
    "  expert_ffn_hidden: 2048\nvocab: 32000\nseq_len: 4096\ntied_embeddings: false\n";

Fixture make_fixture() {
  Fixture f;
  f.dir = test::temp_file("", ".defaults");
  std::filesystem::remove(f.dir);
  std::filesystem::create_directories(f.dir);
  std::string cluster = test::read_file(test::source_path("scenarios/clusters/dgx-h100-superpod.yaml"));
  // The keys under test left to their defaults: no nvls, no tier-0 oversubscription; and a storage
  // section for storage.read_GBps.
  cluster = test::replaced_all(cluster, ", nvls: true", "", "cluster");
  cluster = test::replaced_all(cluster, "{radix: 64, oversubscription: 1}", "{radix: 64}", "cluster");
  cluster += "storage: {write_GBps: 100, per_node_GBps: 10, source: a test}\n";
  f.cluster = f.dir + "/cluster.yaml";
  f.model = f.dir + "/model.yaml";
  f.scenario = f.dir + "/scenario.yaml";
  std::ofstream(f.dir + "/gpus.yaml") << test::read_file(test::source_path("scenarios/gpus.yaml"));
  std::ofstream(f.cluster) << cluster;
  std::ofstream(f.model) << kModelYaml;
  std::ofstream(f.scenario) << "name: defaults\ncluster: cluster.yaml\nmodel: model.yaml\ngpus: 32\nparallel: {tp: 2, pp: 2, dp: 8}\n"
                               "schedule: 1f1b\nglobal_batch: 16\nmicrobatch: 1\nprecision: bf16\nrecompute: selective\n";
  return f;
}

std::string text_of(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += std::to_string(x) + ",";
  return out;
}

/// A model file's text with `key: value` written in (nested one level: "moe.shared_experts"),
/// after `context` lines ("encoder: {...}") are appended.
std::string model_with(const std::vector<std::string>& context, const std::string& key, const std::string& value) {
  std::string text = kModelYaml;
  for (const std::string& c : context) text += c + "\n";
  if (key.empty()) return text;
  const auto dot = key.find('.');
  if (dot == std::string::npos) return text + key + ": " + value + "\n";
  const std::string head = key.substr(0, dot) + ":\n";
  const auto at = text.find(head);
  REQUIRE(at != std::string::npos);
  return text.insert(at + head.size(), "  " + key.substr(dot + 1) + ": " + value + "\n");
}

/// For each file kind: (key, check, reader). Each reader turns a loaded file into text.
using ScenarioRead = std::function<std::string(const ScenarioSpec&)>;
using ModelRead = std::function<std::string(const ModelSpec&)>;
using ClusterRead = std::function<std::string(const ClusterSpec&)>;

const std::vector<std::pair<DefaultCheck, ScenarioRead>>& scenario_checks() {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  static const std::vector<std::pair<DefaultCheck, ScenarioRead>> checks{
      {{"parallel.cp", "", "2", {}}, [](const ScenarioSpec& s) { return std::to_string(s.layout.cp); }},
      {{"parallel.ep", "", "2", {}}, [](const ScenarioSpec& s) { return std::to_string(s.ep); }},
      {{"parallel.cp_comm", "", "all_gather", {"parallel.cp=2"}}, [b](const ScenarioSpec& s) { return b(s.cp_all_gather); }},
      {{"parallel.virtual_stages", "", "2", {}, {"schedule=interleaved"}}, [](const ScenarioSpec& s) { return std::to_string(s.virtual_stages); }},
      // true needs (layers + 1) to divide by the stages where false needs layers to: no one layout
      // takes both, so only the default is compared.
      {{"parallel.account_for_embedding_in_pipeline_split", "", "", {}}, [](const ScenarioSpec& s) { return text_of(s.stage_layers); }},
      {{"parallel.account_for_loss_in_pipeline_split", "", "", {}}, [](const ScenarioSpec& s) { return text_of(s.stage_layers); }},
      {{"parallel.sequence_parallel", "", "true", {}}, [b](const ScenarioSpec& s) { return b(s.sequence_parallel); }},
      {{"parallel.distributed_optimizer", "", "true", {}}, [b](const ScenarioSpec& s) { return b(s.distributed_optimizer); }},
      {{"parallel.reshard_after_forward", "", "false", {"parallel.zero_stage=3"}}, [b](const ScenarioSpec& s) { return b(s.reshard_after_forward); }},
      {{"parallel.overlap_grad_reduce", "", "false", {}}, [b](const ScenarioSpec& s) { return b(s.overlap_grad_reduce); }},
      {{"parallel.optimizer_dtype", "", "bf16", {}}, [](const ScenarioSpec& s) { return s.optimizer_dtype; }},
      {{"parallel.fp8_param_gather", "", "true", {"precision=fp8", "parallel.distributed_optimizer=true"}},
       [b](const ScenarioSpec& s) { return b(s.fp8_param_gather); }},
      {{"parallel.overlap_param_gather", "", "true", {"parallel.distributed_optimizer=true"}},
       [b](const ScenarioSpec& s) { return b(s.overlap_param_gather); }},
      {{"parallel.overlap_p2p_comm", "", "false", {}}, [b](const ScenarioSpec& s) { return b(s.overlap_p2p_comm); }},
      {{"parallel.overlap_tp_backward", "", "false", {}}, [b](const ScenarioSpec& s) { return b(s.overlap_tp_backward); }},
      {{"parallel.gradient_accumulation_fusion", "", "false", {}}, [b](const ScenarioSpec& s) { return b(s.gradient_accumulation_fusion); }},
      {{"attention", "", "unfused", {}}, [](const ScenarioSpec& s) { return std::to_string(static_cast<int>(s.attention)); }},
      {{"moe.routing", "", "skewed", {}, {"moe.hot_factor=2"}}, [](const ScenarioSpec& s) { return std::string(to_string(s.moe.routing)); }},
      {{"moe.seed", "", "7", {"moe.routing=random"}}, [](const ScenarioSpec& s) { return std::to_string(s.moe.seed); }},
      {{"moe.dispatch", "", "deepep", {}}, [b](const ScenarioSpec& s) { return b(s.moe.deepep); }},
      {{"collectives.algorithm", "", "best", {}}, [b](const ScenarioSpec& s) { return b(s.nccl_tuner); }},
      {{"variability.seed", "", "7", {}, {}, "variability: {@gpu_speed: {distribution: normal, stddev: 0.01}}\n"},
       [](const ScenarioSpec& s) { return std::to_string(s.variability.seed); }},
      {{"variability.gpu_speed.mean", "", "0.9", {}, {}, "variability: {gpu_speed: {@distribution: normal, stddev: 0.01}}\n"},
       [](const ScenarioSpec& s) { return std::to_string(s.variability.gpu_speed.mean); }},
      {{"variability.gpu_speed.median", "", "0.9", {}, {}, "variability: {gpu_speed: {@distribution: lognormal, sigma: 0.01}}\n"},
       [](const ScenarioSpec& s) { return std::to_string(s.variability.gpu_speed.median); }},
  };
  return checks;
}

const std::vector<std::pair<DefaultCheck, ModelRead>>& model_checks() {
  static const std::vector<std::pair<DefaultCheck, ModelRead>> checks{
      {{"kv_heads", "16", "4", {}}, [](const ModelSpec& m) { return std::to_string(m.kv_heads); }},  // default: heads (16)
      {{"moe.shared_experts", "", "1", {}}, [](const ModelSpec& m) { return std::to_string(m.moe->shared_experts); }},
      // Another value (1) needs a dense ffn_hidden, which the default forbids: only the default is compared.
      {{"moe.dense_layers", "", "", {}}, [](const ModelSpec& m) { return std::to_string(m.moe->dense_layers); }},
      // dropless: no capacity factor at all.
      {{"moe.capacity_factor", "-", "1.25", {}},
       [](const ModelSpec& m) { return m.moe->capacity_factor ? std::to_string(*m.moe->capacity_factor) : std::string("dropless"); }},
      {{"moe.dropless", "", "", {}}, [](const ModelSpec& m) { return std::string(m.moe->capacity_factor ? "false" : "true"); }},
      {{"encoder.placement", "", "own_stage", {"encoder:\n  name: vit\n  layers: 2\n  hidden: 256\n  heads: 4\n  ffn_hidden: 512\n  ffn: gelu\n  tokens: 64"}},
       [](const ModelSpec& m) { return std::to_string(static_cast<int>(m.encoder->placement)); }},
      {{"mtp_depth", "", "1", {}}, [](const ModelSpec& m) { return std::to_string(m.mtp_depth); }},
  };
  return checks;
}

const std::vector<std::pair<DefaultCheck, ClusterRead>>& cluster_checks() {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  static const std::vector<std::pair<DefaultCheck, ClusterRead>> checks{
      {{"node.scale_up.nvls", "", "true", {}}, [b](const ClusterSpec& c) { return b(c.node.nvls); }},
      // Another value (2) needs a multi_plane fabric: only the default is compared.
      {{"node.nics.ports", "", "", {}}, [](const ClusterSpec& c) { return std::to_string(c.node.nic_ports); }},
      {{"fabric.routing", "", "adaptive", {}}, [](const ClusterSpec& c) { return std::string(to_string(c.fabric.routing)); }},
      {{"fabric.qps_per_connection", "", "16", {}}, [](const ClusterSpec& c) { return std::to_string(c.fabric.qps_per_connection); }},
      {{"fabric.sharing", "", "latency", {}}, [](const ClusterSpec& c) { return std::string(to_string(c.fabric.sharing)); }},
      {{"fabric.sharp", "", "true", {}}, [b](const ClusterSpec& c) { return b(c.fabric.sharp); }},
      {{"fabric.tiers[].oversubscription", "", "2", {}}, [](const ClusterSpec& c) { return std::to_string(c.fabric.tiers[0].oversubscription); }},
      {{"storage.read_GBps", "100", "50", {}}, [](const ClusterSpec& c) { return std::to_string(c.storage.read_Bps); }},  // default: write_GBps (100)
  };
  return checks;
}

/// The cluster key as --set cluster.PATH writes it: tiers[] as the first tier.
std::string cluster_path(const std::string& key) { return std::regex_replace(key, std::regex(R"(\[\])"), ".0"); }

}  // namespace

TEST_CASE("every key with a one-word default is checked below", "[schema]") {
  std::set<std::string> checked;
  for (const auto& [c, _] : scenario_checks()) checked.insert("scenario:" + c.key);
  for (const auto& [c, _] : model_checks()) checked.insert("model:" + c.key);
  for (const auto& [c, _] : cluster_checks()) checked.insert("cluster:" + c.key);
  // Needs a two-level NVSwitch node, which the fixture's cluster is not: test_fabric_nvl576 checks it.
  checked.insert("cluster:node.scale_up.second_level.oversubscription");
  for (const KeyReference& k : key_reference())
    if (scalar_default(k)) {
      INFO("a key with a one-word default that the defaults test below does not check: " << k.file << " " << k.key << " ("
                                                                                          << k.default_value << ")");
      CHECK(checked.count(std::string(k.file) + ":" + k.key) == 1);
    }
  for (const std::string& key : checked) {
    INFO("a checked key whose documented default is not one word: " << key);
    bool found = false;
    for (const KeyReference& k : key_reference()) found = found || (std::string(k.file) + ":" + k.key == key && scalar_default(k));
    CHECK(found);
  }
}

TEST_CASE("each documented default is what the loader uses: left out and written as documented load alike, and another value differs", "[schema]") {
  std::map<std::string, std::string> documented;
  for (const KeyReference& k : key_reference()) documented[std::string(k.file) + ":" + k.key] = k.default_value;
  const Fixture f = make_fixture();
  for (const auto& check : scenario_checks()) {
    // Named, not structured bindings: clang 14 (Debian 12, make sanitize-clang) cannot capture those in a lambda.
    const auto& c = std::get<0>(check);
    const auto& read = std::get<1>(check);
    INFO("scenario " << c.key);
    const std::string value = c.as_written.empty() ? documented.at("scenario:" + c.key) : c.as_written;
    if (!c.yaml.empty()) {
      const std::string base = test::read_file(f.scenario), leaf = c.key.substr(c.key.rfind('.') + 1);
      auto load = [&](const std::string& v) {
        const std::string path = f.dir + "/yaml-key.yaml";
        std::ofstream(path) << base + test::replaced_all(c.yaml, "@", v.empty() ? "" : leaf + ": " + v + ", ", "yaml");
        return read(load_scenario(path));
      };
      const std::string left_out = load("");
      CHECK(load(value) == left_out);
      CHECK(load(c.other) != left_out);
      continue;
    }
    std::vector<std::string> sets = c.context;
    const std::string left_out = read(load_scenario(f.scenario, sets));
    sets.push_back(c.key + "=" + value);
    CHECK(read(load_scenario(f.scenario, sets)) == left_out);
    if (c.other.empty()) continue;
    sets.back() = c.key + "=" + c.other;
    sets.insert(sets.end(), c.other_context.begin(), c.other_context.end());
    CHECK(read(load_scenario(f.scenario, sets)) != left_out);
  }
  for (const auto& check : model_checks()) {
    // Named, not structured bindings: clang 14 (Debian 12, make sanitize-clang) cannot capture those in a lambda.
    const auto& c = std::get<0>(check);
    const auto& read = std::get<1>(check);
    INFO("model " << c.key);
    const std::string value = c.as_written.empty() ? documented.at("model:" + c.key) : c.as_written;
    auto load = [&](const std::string& v) {
      const std::string path = test::temp_file(model_with(c.context, v.empty() ? "" : c.key, v));
      const ModelSpec m = load_model_spec(path);
      std::filesystem::remove(path);
      return read(m);
    };
    const std::string left_out = load("");
    if (value != "-") CHECK(load(value) == left_out);  // "-": the default is the key's absence ("dropless")
    if (!c.other.empty()) CHECK(load(c.other) != left_out);
  }
  for (const auto& [c, read] : cluster_checks()) {
    INFO("cluster " << c.key);
    const std::string value = c.as_written.empty() ? documented.at("cluster:" + c.key) : c.as_written;
    const std::string left_out = read(load_cluster_spec(f.cluster));
    CHECK(read(load_cluster_spec_with(f.cluster, {"cluster." + cluster_path(c.key) + "=" + value})) == left_out);
    if (!c.other.empty()) CHECK(read(load_cluster_spec_with(f.cluster, {"cluster." + cluster_path(c.key) + "=" + c.other})) != left_out);
  }
  std::filesystem::remove_all(f.dir);
}

TEST_CASE("a key that carries a unit in its name, or takes a number, says its unit", "[schema]") {
  // The name's suffix and the unit column's first word agree (units.hpp's spelling).
  const std::vector<std::pair<std::string, std::string>> suffixes{{"_s", "s"}, {"_us", "us"}, {"_GBps", "GB/s"}, {"_Gbps", "Gb/s"},
                                                                  {"_hours", "hours"}, {"_bytes", "bytes"}};
  for (const KeyReference& k : key_reference()) {
    const std::string key = k.key, unit = k.unit;
    INFO(k.file << " " << key << ": " << unit);
    for (const auto& [suffix, want] : suffixes)
      if (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
        CHECK(unit.rfind(want, 0) == 0);
    // A number by default is a quantity: its unit names what it counts, not "text" or "boolean".
    if (std::regex_match(k.default_value, std::regex(R"(-?[0-9.]+)"))) {
      CHECK(unit != "text");
      CHECK(unit.rfind("boolean", 0) != 0);
    }
  }
}

// ----- defaults written as sentences -----
// The one-word defaults above are compared by loading; a default the reference writes as a sentence
// says what the loader does when the key is left out, and each such sentence is held to it here.

namespace {

const char* const kSentenceChecked[] = {
    "scenario:catalog", "scenario:parallel.tp", "scenario:parallel.pp", "scenario:parallel.dp", "scenario:parallel.stage_layers",
    "scenario:parallel.decoder_first_pipeline_num_layers", "scenario:parallel.decoder_last_pipeline_num_layers",
    "scenario:parallel.zero_stage", "scenario:parallel.grad_reduce_dtype", "scenario:parallel.order", "scenario:parallel.stage_gpus", "scenario:reliability.checkpoint",
    "model:ffn_hidden", "model:attention", "model:moe", "cluster:node_groups", "cluster:node.scale_up.second_level",
    "cluster:fabric.nodes_per_unit", "cluster:fabric.tiers[].switches"};

/// A default that is neither one word, nor "none" (an absent optional), nor "required", nor left
/// blank (a required key the reference does not repeat).
bool sentence_default(const KeyReference& k) {
  const std::string d = k.default_value;
  return !scalar_default(k) && !d.empty() && d != "none" && d != "required";
}

std::string superpod_yaml() { return test::read_file(test::source_path("scenarios/clusters/dgx-h100-superpod.yaml")); }

/// Megatron's 1.7B (24 layers) on 32 GPUs of the SuperPOD, `parallel` as its layout.
ScenarioSpec megatron_on_superpod(const std::string& parallel, const std::string& extra = "") {
  return load_scenario(test::small_megatron_scenario("sentences", superpod_yaml(), parallel, extra));
}

std::string order_text(const ParallelLayout& l) {
  std::string out;
  for (Dim d : l.order) out += std::to_string(static_cast<int>(d));
  return out;
}

std::string nodes_of_job(const ScenarioSpec& s) {
  std::string out;
  for (int g = 0; g < s.gpus(); ++g) out += std::to_string(s.node_of(g)) + ",";
  return out;
}

}  // namespace

TEST_CASE("every default the reference writes as a sentence is checked below", "[schema]") {
  std::set<std::string> checked(std::begin(kSentenceChecked), std::end(kSentenceChecked));
  for (const KeyReference& k : key_reference()) {
    const std::string key = std::string(k.file) + ":" + k.key;
    INFO(key << ": " << k.default_value);
    CHECK(sentence_default(k) == (checked.count(key) == 1));
  }
}

TEST_CASE("sentence defaults: one of tp, pp, dp left out is gpus / (the other two x cp)", "[schema]") {
  CHECK(megatron_on_superpod("{pp: 2, dp: 8}").layout.tp == 32 / (2 * 8));
  CHECK(megatron_on_superpod("{tp: 2, dp: 8}").layout.pp == 32 / (2 * 8));
  CHECK(megatron_on_superpod("{tp: 2, pp: 2}").layout.dp == 32 / (2 * 2));
  CHECK(megatron_on_superpod("{pp: 2, dp: 4, cp: 2}").layout.tp == 32 / (2 * 4 * 2));
}

TEST_CASE("sentence defaults: stage layers left out are an even split", "[schema]") {
  // 24 layers over 4 stages: 6 each; naming the first or last stage's 6 changes nothing.
  const std::vector<int> even{6, 6, 6, 6};
  CHECK(megatron_on_superpod("{tp: 2, pp: 4, dp: 4}").stage_layers == even);
  CHECK(megatron_on_superpod("{tp: 2, pp: 4, dp: 4, stage_layers: [6, 6, 6, 6]}").stage_layers == even);
  CHECK(megatron_on_superpod("{tp: 2, pp: 4, dp: 4, decoder_first_pipeline_num_layers: 6}").stage_layers == even);
  CHECK(megatron_on_superpod("{tp: 2, pp: 4, dp: 4, decoder_last_pipeline_num_layers: 6}").stage_layers == even);
  CHECK(megatron_on_superpod("{tp: 2, pp: 4, dp: 4, decoder_first_pipeline_num_layers: 3}").stage_layers != even);
}

TEST_CASE("sentence defaults: zero_stage is 1 with the distributed optimizer, else 0", "[schema]") {
  CHECK(megatron_on_superpod("{tp: 2, pp: 2, dp: 8, distributed_optimizer: true}").zero_stage == 1);
  CHECK(megatron_on_superpod("{tp: 2, pp: 2, dp: 8, distributed_optimizer: false}").zero_stage == 0);
  CHECK(megatron_on_superpod("{tp: 2, pp: 2, dp: 8}").zero_stage == 0);
}

TEST_CASE("sentence defaults: gradients reduce in fp16 under precision fp16, else in fp32", "[schema]") {
  const std::string path = test::small_megatron_scenario("grad-dtype", superpod_yaml(), "{tp: 2, pp: 2, dp: 8}");
  CHECK(std::string(load_scenario(path).gradient_reduce_dtype()) == "fp32");
  CHECK(std::string(load_scenario(path, {"precision=fp16"}).gradient_reduce_dtype()) == "fp16");
  CHECK(std::string(load_scenario(path, {"precision=fp16", "parallel.grad_reduce_dtype=fp32"}).gradient_reduce_dtype()) == "fp32");
  CHECK(std::string(load_scenario(path, {"parallel.grad_reduce_dtype=bf16"}).gradient_reduce_dtype()) == "bf16");
}

TEST_CASE("sentence defaults: the rank order is tp-cp-dp-pp, and the job's nodes are the cluster's first, in order", "[schema]") {
  const ScenarioSpec left_out = megatron_on_superpod("{tp: 2, pp: 2, dp: 8}");
  CHECK(order_text(left_out.layout) == order_text(megatron_on_superpod("{tp: 2, pp: 2, dp: 8, order: tp-cp-dp-pp}").layout));
  CHECK(order_text(left_out.layout) != order_text(megatron_on_superpod("{tp: 2, pp: 2, dp: 8, order: dp-tp-pp}").layout));
  // stage_gpus naming the nodes' own model for each rank places the job as leaving it out does.
  const ScenarioSpec named = megatron_on_superpod("{tp: 2, pp: 2, dp: 8, stage_gpus: [H100-SXM, H100-SXM]}");
  CHECK(nodes_of_job(named) == nodes_of_job(left_out));
  CHECK(nodes_of_job(left_out) == "0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1,2,2,2,2,2,2,2,2,3,3,3,3,3,3,3,3,");
}

TEST_CASE("sentence defaults: the catalog is gpus.yaml beside the cluster file, else in the folder above it", "[schema]") {
  namespace fs = std::filesystem;
  // small_megatron_scenario puts the catalog in the folder above clusters/cluster.yaml.
  const std::string path = test::small_megatron_scenario("catalog", superpod_yaml(), "{tp: 2, pp: 2, dp: 8}");
  const fs::path dir = fs::path(path).parent_path();
  CHECK(fs::equivalent(load_scenario(path).catalog_file, dir / "gpus.yaml"));
  // One beside the cluster file comes first.
  fs::copy_file(dir / "gpus.yaml", dir / "clusters" / "gpus.yaml");
  CHECK(fs::equivalent(load_scenario(path).catalog_file, dir / "clusters" / "gpus.yaml"));
  fs::remove_all(dir);
}

TEST_CASE("sentence defaults: a reliability section without checkpoint takes no checkpoints", "[schema]") {
  const std::string reliability = "reliability: {components: {gpu: {mtbf_hours: 1000, source: a test}}, detection_s: 60, relaunch_s: 60}\n";
  const ScenarioSpec s = megatron_on_superpod("{tp: 2, pp: 2, dp: 8}", reliability);
  CHECK(s.reliability.declared);
  CHECK_FALSE(s.reliability.checkpoints);
}

TEST_CASE("sentence defaults: a model without attention or moe is standard attention and dense, and ffn_hidden is only where a layer is dense", "[schema]") {
  const std::string dense = test::read_file(test::source_path("scenarios/models/megatron-1.7b.yaml"));
  const auto load_text = [](const std::string& text) {
    const std::string path = test::temp_file(text, ".yaml");
    ModelSpec m = load_model_spec(path);
    std::filesystem::remove(path);
    return m;
  };
  const ModelSpec left_out = load_text(dense);
  const ModelSpec standard = load_text(dense + "attention: {type: standard}\n");
  CHECK_FALSE(left_out.mla.has_value());
  CHECK_FALSE(left_out.moe.has_value());
  CHECK(left_out.kv_heads == standard.kv_heads);
  CHECK(left_out.mla.has_value() == standard.mla.has_value());
  // Every layer MoE: no ffn_hidden, and one is refused; a dense first layer needs it.
  CHECK(load_text(kModelYaml).ffn_hidden == 0);
  CHECK_THAT(test::error_of([&] { load_text(std::string(kModelYaml) + "ffn_hidden: 4096\n"); }).what(), Catch::Contains("ffn_hidden"));
  CHECK_THAT(test::error_of([&] { load_text(model_with({}, "moe.dense_layers", "1")); }).what(),
             Catch::Contains("ffn_hidden: missing required field"));
}

TEST_CASE("sentence defaults: a cluster without node_groups or second_level holds its gpu on every node, one NVSwitch each", "[schema]") {
  const Cluster c = test::cluster_from_yaml(superpod_yaml());
  CHECK(c.spec.node.scale_up_domain_gpus == 0);
  CHECK(c.scale_up_uplink.empty());
  const auto vertices = static_cast<int>(boost::num_vertices(c.graph));
  CHECK(vertices - c.gpu_count() - c.nic_count() - static_cast<int>(c.switches.size()) == c.nodes());
  const ScenarioSpec s = megatron_on_superpod("{tp: 2, pp: 2, dp: 8}");
  CHECK(s.node_groups.empty());
  for (int node = 0; node < c.nodes(); ++node) CHECK(s.gpu_name_of_node(node) == "H100-SXM");
}

TEST_CASE("sentence defaults: nodes_per_unit is required on rail_optimized fabrics and refused on others", "[schema]") {
  const auto error_with = [](const std::string& yaml) { return std::string(test::error_of([&] { test::cluster_from_yaml(yaml); }).what()); };
  CHECK_THAT(error_with(test::replaced_all(superpod_yaml(), "  nodes_per_unit: 32\n", "", "superpod")),
             Catch::Contains("fabric.nodes_per_unit: missing required field"));
  CHECK_NOTHROW(test::cluster_from_yaml(test::kSmallFatTreeYaml));
  CHECK_THAT(error_with(test::replaced_all(test::kSmallFatTreeYaml, "  tiers:", "  nodes_per_unit: 2\n  tiers:", "fat tree")),
             Catch::Contains("nodes_per_unit"));
}

TEST_CASE("sentence defaults: a tier's switches left out are the fewest that take every uplink", "[schema]") {
  // The SuperPOD: 127 nodes in 4 units of 32, 8 rails, so 32 rail leaves of radix 64 at 1:1 with
  // 32 uplinks each: 1024 uplinks over spines of 64 ports = 16 spines.
  const auto spines = [](const std::string& yaml) {
    const Cluster c = test::cluster_from_yaml(yaml);
    int n = 0;
    for (const Switch& s : c.switches) n += s.tier == 2;
    return n;
  };
  CHECK(spines(superpod_yaml()) == 16);
  CHECK(spines(test::replaced_all(superpod_yaml(), "- {radix: 64}  ", "- {radix: 64, switches: 16}", "superpod")) == 16);
  // The next count that divides the uplinks evenly, 8, cannot take them.
  const std::string fewer = test::replaced_all(superpod_yaml(), "- {radix: 64}  ", "- {radix: 64, switches: 8}", "superpod");
  CHECK_THAT(test::error_of([&] { test::cluster_from_yaml(fewer); }).what(), Catch::Contains("(at least 16)"));
}
