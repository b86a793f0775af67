#include "workloads/field_override.hpp"

#include <algorithm>

#include "topologies/user_error.hpp"

namespace clustersim {

std::string apply_field_override(const YamlField& root, const std::string& text, const std::vector<std::string>& fields,
                                 const std::string& kind, const std::function<std::string(const std::string&)>& canonical) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UserError("command line", 0, "--set", "expected FIELD=VALUE, got '" + text + "'");
  const std::string path = canonical ? canonical(text.substr(0, eq)) : text.substr(0, eq), value_text = text.substr(eq + 1);
  if (std::find(fields.begin(), fields.end(), path) == fields.end()) {
    std::string listed;
    for (const std::string& f : fields) listed += (listed.empty() ? "" : ", ") + f;
    throw UserError("command line", 0, "--set", "unknown " + kind + " field '" + path + "' (expected one of: " + listed +
                                                    "; or cluster.FIELD for a field of the cluster file)");
  }
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception&) {
    // left undefined: reported just below
  }
  if (!value.IsScalar())
    throw UserError("command line", 0, "--set", "expected one value for '" + path + "', got '" + value_text + "'");

  // Walk (and where missing, create) the mappings the dotted path names; reset() rebinds a yaml-cpp
  // node, where assignment would overwrite the node it refers to.
  YAML::Node tree = root.node();
  std::size_t from = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; from = dot + 1, dot = path.find('.', from)) {
    YAML::Node next = tree[path.substr(from, dot - from)];
    if (next.IsDefined() && !next.IsMap()) {
      YamlField at = root;
      for (std::size_t a = 0, b = path.find('.'); b != std::string::npos && a <= from; a = b + 1, b = path.find('.', a))
        at = at.child(path.substr(a, b - a));
      at.fail("expected a mapping");
    }
    tree.reset(next);
  }
  tree[path.substr(from)] = value;
  return path;
}

}  // namespace clustersim
