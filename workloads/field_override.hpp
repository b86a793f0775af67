#pragma once
// `--set FIELD=VALUE` applied to a parsed scenario or serving file before it is read, so a value set
// on the command line is checked (and its errors located) exactly as if it were written there.
#include <functional>
#include <string>
#include <vector>

#include "topologies/yaml_reader.hpp"

namespace clustersim {

/// Sets FIELD to VALUE in `root`'s tree. FIELD (after `canonical`, e.g. Megatron's names to ours)
/// must be one of `fields`, else a command-line error naming `kind` ("scenario", "serving") and
/// listing them; VALUE must be one YAML scalar. The mappings on FIELD's dotted path are created where
/// missing; one written as something else is an error at its line. Returns the canonical FIELD.
std::string apply_field_override(const YamlField& root, const std::string& text, const std::vector<std::string>& fields,
                                 const std::string& kind,
                                 const std::function<std::string(const std::string&)>& canonical = nullptr);

}  // namespace clustersim
