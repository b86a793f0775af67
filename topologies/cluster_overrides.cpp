#include "topologies/cluster_overrides.hpp"

#include <algorithm>

#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

void apply_cluster_override(const YamlField& root, const std::string& text) {
  const std::size_t eq = text.find('=');
  const std::string path = text.substr(0, eq), value_text = text.substr(eq + 1);
  const auto bad = [&](const std::string& why) -> UserError {
    return UserError("command line", 0, "--set", "cluster field '" + path + "': " + why);
  };
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception&) {
    // left undefined: reported just below
  }
  if (value_text.empty() || !value.IsScalar()) throw bad("expected one value, got '" + value_text + "'");
  std::vector<std::string> keys;
  for (std::size_t from = std::string("cluster.").size(), dot = 0; from <= path.size(); from = dot + 1) {
    dot = std::min(path.find('.', from), path.size());
    keys.push_back(path.substr(from, dot - from));
  }
  YAML::Node node = root.node();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    if (key.empty()) throw bad("expected cluster.FIELD.FIELD..., with no empty field");
    const bool last = i + 1 == keys.size();
    if (node.IsSequence()) {
      const bool digits = key.find_first_not_of("0123456789") == std::string::npos && key.size() < 9;
      if (!digits || std::stoul(key) >= node.size())
        throw bad("expected an index below " + std::to_string(node.size()) + " into the list, got '" + key + "'");
      if (last) node[std::stoul(key)] = value;
      else node.reset(node[std::stoul(key)]);
    } else if (node.IsMap()) {
      if (last) node[key] = value;
      else if (!node[key].IsDefined()) throw bad("the cluster file (" + root.file() + ") has no '" + key + "' to set a field in");
      else node.reset(node[key]);
    } else {
      throw bad("'" + keys[i - 1] + "' is a value, not a mapping or a list");
    }
  }
}

/// A tier's field asked of the whole fabric (`cluster.fabric.oversubscription`, as one would say
/// "a 2:1 fat tree"): each tier has its own, so say where they are. The keys are read_fabric's for
/// `tiers[]` (cluster_spec.cpp).
std::string per_tier_hint(const std::string& field_path) {
  for (const char* key : {"radix", "oversubscription", "switches"})
    if (field_path == std::string("fabric.") + key)
      return "; each tier has its own: cluster.fabric.tiers.N." + std::string(key) + ", N from 0 for the leaves";
  return "";
}

}  // namespace

bool is_cluster_override(const std::string& text) { return text.rfind("cluster.", 0) == 0 && text.find('=') != std::string::npos; }

ClusterSpec parse_cluster_spec_with(const YamlField& root, const std::vector<std::string>& overrides) {
  for (const std::string& o : overrides) apply_cluster_override(root, o);
  try {
    return parse_cluster_spec(root);
  } catch (const UserError& e) {
    // A key the cluster schema lacks, given on the command line: the command line's error.
    for (const std::string& o : overrides)
      if (e.expected().rfind("unknown key", 0) == 0 && o.rfind("cluster." + e.field_path() + "=", 0) == 0)
        throw UserError("command line", 0, "--set", "unknown cluster field 'cluster." + e.field_path() + "' (" +
                                                        e.expected().substr(std::string("unknown key (").size()) +
                                                        per_tier_hint(e.field_path()));
    throw;
  }
}

ClusterSpec load_cluster_spec_with(const std::string& path, const std::vector<std::string>& overrides, const std::string& named_by) {
  return parse_cluster_spec_with(YamlField::load_file(path, named_by), overrides);
}

}  // namespace clustersim
