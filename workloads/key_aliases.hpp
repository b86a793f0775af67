#pragma once
// Megatron-LM and Hugging Face names for model, layout and batch keys, accepted in place of ours so
// a config copied from either reads as written (scenarios/README.md lists them). An alias becomes
// its canonical key before the schema is checked; its line stays the line errors name. A mapping
// that gives both an alias and its key is an error at the alias.
#include <optional>
#include <string>
#include <vector>

#include "topologies/yaml_reader.hpp"

namespace clustersim {

struct KeyAlias {
  const char* alias;
  const char* canonical;
  const char* source;  // "Megatron-LM" or "Hugging Face" (or both)
};

/// Keys of a model file (scenarios/models/*.yaml).
const std::vector<KeyAlias>& model_key_aliases();
/// Keys of a scenario's parallel: mapping.
const std::vector<KeyAlias>& parallel_key_aliases();
/// Top-level keys of a scenario.
const std::vector<KeyAlias>& scenario_key_aliases();

/// Renames every alias in `mapping` (a YAML mapping; anything else is left for the schema to
/// reject) to its canonical key. UserError at the alias when the canonical key is there too.
void apply_key_aliases(const YamlField& mapping, const std::vector<KeyAlias>& aliases);

/// A --set path ("parallel.tensor_model_parallel_size") with its alias replaced by the canonical
/// key ("parallel.tp"); the path unchanged when it names no alias.
std::string canonical_scenario_path(const std::string& path);

}  // namespace clustersim
