#include "workloads/key_aliases.hpp"

#include "topologies/user_error.hpp"

namespace clustersim {

// Names as Megatron-LM's arguments (megatron/training/arguments.py, dashes as underscores) and
// Hugging Face transformers' model configs (LlamaConfig, Qwen2Config, ...) spell them.
const std::vector<KeyAlias>& model_key_aliases() {
  static const std::vector<KeyAlias> aliases{
      {"num_layers", "layers", "Megatron-LM"},
      {"num_hidden_layers", "layers", "Hugging Face"},
      {"hidden_size", "hidden", "Megatron-LM, Hugging Face"},
      {"num_attention_heads", "heads", "Megatron-LM, Hugging Face"},
      {"num_query_groups", "kv_heads", "Megatron-LM"},
      {"num_key_value_heads", "kv_heads", "Hugging Face"},
      {"ffn_hidden_size", "ffn_hidden", "Megatron-LM"},
      {"intermediate_size", "ffn_hidden", "Hugging Face"},
      {"vocab_size", "vocab", "Hugging Face"},
      {"seq_length", "seq_len", "Megatron-LM"},
      {"tie_word_embeddings", "tied_embeddings", "Hugging Face"},
  };
  return aliases;
}

const std::vector<KeyAlias>& parallel_key_aliases() {
  static const std::vector<KeyAlias> aliases{
      {"tensor_model_parallel_size", "tp", "Megatron-LM"},
      {"pipeline_model_parallel_size", "pp", "Megatron-LM"},
      {"data_parallel_size", "dp", "Megatron-LM"},
      {"context_parallel_size", "cp", "Megatron-LM"},
      {"expert_model_parallel_size", "ep", "Megatron-LM"},
      {"num_virtual_stages_per_pipeline_rank", "virtual_stages", "Megatron-LM"},
      {"use_distributed_optimizer", "distributed_optimizer", "Megatron-LM"},
  };
  return aliases;
}

const std::vector<KeyAlias>& scenario_key_aliases() {
  static const std::vector<KeyAlias> aliases{
      {"micro_batch_size", "microbatch", "Megatron-LM"},
      {"global_batch_size", "global_batch", "Megatron-LM"},
  };
  return aliases;
}

void apply_key_aliases(const YamlField& mapping, const std::vector<KeyAlias>& aliases) {
  if (!mapping.is_map()) return;
  for (const KeyAlias& a : aliases) {
    const auto alias = mapping.find(a.alias);
    if (!alias) continue;
    if (mapping.find(a.canonical))
      alias->fail(std::string("expected ") + a.alias + " or " + a.canonical + ", not both (" + a.alias + " is " + a.source +
                  "'s name for " + a.canonical + ")");
    // The key node is renamed in place, so it keeps its mark: errors about the value still name
    // the line the alias is written on.
    for (auto kv : mapping.node())
      if (kv.first.IsScalar() && kv.first.Scalar() == a.alias) {
        YAML::Node key = kv.first;
        key = std::string(a.canonical);
        break;
      }
  }
}

std::string canonical_scenario_path(const std::string& path) {
  const std::size_t dot = path.find('.');
  const std::string head = path.substr(0, dot);
  if (dot == std::string::npos) {
    for (const KeyAlias& a : scenario_key_aliases())
      if (path == a.alias) return a.canonical;
    return path;
  }
  if (head != "parallel") return path;
  const std::string key = path.substr(dot + 1);
  for (const KeyAlias& a : parallel_key_aliases())
    if (key == a.alias) return "parallel." + std::string(a.canonical);
  return path;
}

}  // namespace clustersim
