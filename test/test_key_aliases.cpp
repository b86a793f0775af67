// Megatron-LM and Hugging Face key names (workloads/key_aliases.hpp): a model or scenario written
// in them loads as the one in ours; both names at once, and a bad value under an alias, are errors
// at the alias's line.
#include <catch2/catch.hpp>

#include <string>

#include "support.hpp"
#include "workloads/model.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::line_of;
using clustersim::test::replaced_all;
using clustersim::test::shipped_with;
using clustersim::test::source_path;

namespace {

const std::string kModel = "scenarios/models/gpt3-175b.yaml";

void check_same_model(const ModelSpec& a, const ModelSpec& b) {
  CHECK(a.layers == b.layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.heads == b.heads);
  CHECK(a.kv_heads == b.kv_heads);
  CHECK(a.ffn_hidden == b.ffn_hidden);
  CHECK(a.vocab == b.vocab);
  CHECK(a.seq_len == b.seq_len);
  CHECK(a.tied_embeddings == b.tied_embeddings);
}

/// The shipped GPT-3 model with its keys renamed: each pair is (our key, their key).
std::string renamed_model(const std::vector<std::pair<std::string, std::string>>& names) {
  std::string text = shipped_with(kModel, "", "");
  for (const auto& [ours, theirs] : names) text = replaced_all(text, "\n" + ours + ": ", "\n" + theirs + ": ", kModel);
  return text;
}

}  // namespace

TEST_CASE("A model in Megatron-LM's argument names loads as the shipped one", "[aliases]") {
  const std::string file = test::temp_file(renamed_model({{"layers", "num_layers"}, {"hidden", "hidden_size"},
                                                          {"heads", "num_attention_heads"}, {"kv_heads", "num_query_groups"},
                                                          {"ffn_hidden", "ffn_hidden_size"}, {"seq_len", "seq_length"}}));
  check_same_model(load_model_spec(file), load_model_spec(source_path(kModel)));
}

TEST_CASE("A model in Hugging Face's config names loads as the shipped one", "[aliases]") {
  const std::string file = test::temp_file(renamed_model({{"layers", "num_hidden_layers"}, {"hidden", "hidden_size"},
                                                          {"heads", "num_attention_heads"}, {"kv_heads", "num_key_value_heads"},
                                                          {"ffn_hidden", "intermediate_size"}, {"vocab", "vocab_size"},
                                                          {"tied_embeddings", "tie_word_embeddings"}}));
  check_same_model(load_model_spec(file), load_model_spec(source_path(kModel)));
}

TEST_CASE("An alias and its key both given is an error at the alias's line", "[aliases]") {
  const std::string text = shipped_with(kModel, "layers: 96\n", "layers: 96\nnum_layers: 96\n");
  const std::string file = test::temp_file(text);
  const UserError e = test::error_of([&] { load_model_spec(file); });
  CHECK(std::string(e.what()) == file + ":" + std::to_string(line_of(text, "num_layers")) +
                                     ": num_layers: expected num_layers or layers, not both (num_layers is Megatron-LM's "
                                     "name for layers)");
}

TEST_CASE("A bad value under an alias names the alias's line", "[aliases]") {
  const std::string text = renamed_model({{"layers", "num_layers"}});
  const std::string bad = replaced_all(text, "num_layers: 96", "num_layers: many", "model");
  const std::string file = test::temp_file(bad);
  const UserError e = test::error_of([&] { load_model_spec(file); });
  CHECK(e.file() == file);
  CHECK(e.line() == line_of(bad, "num_layers"));
}

TEST_CASE("A scenario's layout and batch in Megatron-LM's names, and --set in them", "[aliases]") {
  const std::string shipped = source_path("scenarios/gpt3-175b-a100-1024.yaml");
  std::string text = shipped_with("scenarios/gpt3-175b-a100-1024.yaml", "  tp: 8\n", "  tensor_model_parallel_size: 8\n");
  text = replaced_all(text, "  pp: 8\n", "  pipeline_model_parallel_size: 8\n", "scenario");
  text = replaced_all(text, "microbatch: 1\n", "micro_batch_size: 1\n", "scenario");
  text = replaced_all(text, "global_batch: 1536\n", "global_batch_size: 1536\n", "scenario");
  // In a temporary folder: the cluster and model as absolute paths.
  text = replaced_all(text, "cluster: clusters/", "cluster: " + source_path("scenarios/clusters/"), "scenario");
  text = replaced_all(text, "model: models/", "model: " + source_path("scenarios/models/"), "scenario");
  const std::string file = test::temp_file(text);
  const ScenarioSpec ours = load_scenario(shipped), theirs = load_scenario(file);
  CHECK(theirs.layout.tp == ours.layout.tp);
  CHECK(theirs.layout.pp == ours.layout.pp);
  CHECK(theirs.microbatch == ours.microbatch);
  CHECK(theirs.global_batch == ours.global_batch);
  // --set in either name overrides the file's alias; dp is derived again (1024 / (4 x 8)).
  CHECK(load_scenario(file, {"parallel.tp=4"}).layout.dp == 32);
  CHECK(load_scenario(file, {"parallel.tensor_model_parallel_size=4"}).layout.dp == 32);
  CHECK(load_scenario(shipped, {"global_batch_size=512"}).global_batch == 512);
}
