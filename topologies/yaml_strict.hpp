#pragma once
// What yaml-cpp accepts but an input file must not contain, found in one streaming pass before the
// tree is built: a key given twice (yaml-cpp keeps the first, so an appended override would be
// ignored), a second document or text after `...`, aliases (an alias bomb expands exponentially
// for whoever walks the tree), nesting deeper than any schema and more values than any real file.
#include <string>

namespace clustersim {

inline constexpr int kMaxYamlDepth = 32;           // the deepest schema path is 4 levels
inline constexpr long kMaxYamlValues = 200'000;    // the shipped GPU catalog has about 600

/// Throws a UserError naming `name`, the line and the field path of the first problem.
void check_yaml_structure(const std::string& text, const std::string& name);

/// The field path a line of block YAML sits under ("fabric.tiers"), read from indentation alone:
/// for errors from a parser that gives only a line.
std::string field_path_at_line(const std::string& text, int line);

}  // namespace clustersim
