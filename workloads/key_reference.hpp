#pragma once
// Every key a scenario, model or cluster file takes, with its unit and default: the one table that
// `clustersim schema` prints and scenarios/README.md's key reference is made from.
// test_key_reference checks it against the loaders: every key a loader accepts is listed here and
// every key listed here is one a loader accepts, so the reference cannot drift from the code.
#include <string>
#include <vector>

namespace clustersim {

struct KeyReference {
  const char* file;           // "scenario", "model" or "cluster"
  const char* key;            // dotted path; NAME, N, LINK and KIND stand for a name the user picks,
                              // an index or a link's name; [] for every element of a list
  const char* unit;           // unit, or the values it takes
  const char* default_value;  // "" where the key is required
};

/// The whole table, scenario keys first, then model and cluster keys, each in file order.
const std::vector<KeyReference>& key_reference();

/// The Megatron-LM and Hugging Face names accepted for `key` of `file` (key_aliases.hpp), as
/// "alias (source)", comma-separated; empty when it has none.
std::string key_aliases_of(const KeyReference& k);

/// The table as Markdown, one table per file kind, as scenarios/README.md carries it.
std::string key_reference_markdown();

}  // namespace clustersim
