// The key reference (`clustersim schema`, scenarios/README.md) against the loaders themselves: every
// mapping a loader checks with expect_keys is watched while every shipped scenario, model and
// cluster is loaded, and the keys it allows must be exactly the reference's.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "support.hpp"
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
