#include "json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace clustersim::test {

namespace {

/// JSON Schema's type names; "integer" is a number without a fractional part, and every integer
/// is also a "number".
bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "number") return v.is_number();
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

void check(const nlohmann::json& schema, const nlohmann::json& v, const std::string& path, std::vector<std::string>& out) {
  static const std::set<std::string> kKeywords{"$schema", "$id",   "title",      "description", "type",
                                               "required", "properties", "items", "enum",   "minimum", "anyOf"};
  if (!schema.is_object()) {
    out.push_back((path.empty() ? "/" : path) + ": the schema here is not an object");
    return;
  }
  const std::string at = path.empty() ? "/" : path;
  for (const auto& [key, _] : schema.items())
    if (!kKeywords.count(key)) out.push_back(at + ": the schema uses '" + key + "', which this checker does not implement");
  if (auto t = schema.find("type"); t != schema.end()) {
    const std::vector<std::string> types = t->is_array() ? t->get<std::vector<std::string>>() : std::vector<std::string>{t->get<std::string>()};
    if (std::none_of(types.begin(), types.end(), [&](const std::string& s) { return has_type(v, s); })) {
      std::string want;
      for (const auto& s : types) want += (want.empty() ? "" : " or ") + s;
      out.push_back(at + ": expected " + want + ", got " + v.dump());
      return;  // the other keywords read a value of the right type
    }
  }
  if (auto e = schema.find("enum"); e != schema.end() && std::find(e->begin(), e->end(), v) == e->end())
    out.push_back(at + ": expected one of " + e->dump() + ", got " + v.dump());
  if (auto m = schema.find("minimum"); m != schema.end() && v.is_number() && v.get<double>() < m->get<double>())
    out.push_back(at + ": expected a number >= " + m->dump() + ", got " + v.dump());
  if (v.is_object()) {
    if (auto r = schema.find("required"); r != schema.end())
      for (const auto& key : *r)
        if (!v.contains(key.get<std::string>())) out.push_back(at + ": expected the field '" + key.get<std::string>() + "'");
    if (auto p = schema.find("properties"); p != schema.end())
      for (const auto& [key, sub] : p->items())
        if (auto f = v.find(key); f != v.end()) check(sub, *f, path + "/" + key, out);
  }
  // anyOf: some branch conforms; else the problems of the branch nearest to conforming.
  if (auto any = schema.find("anyOf"); any != schema.end()) {
    std::vector<std::string> nearest;
    for (std::size_t b = 0; b < any->size(); ++b) {
      std::vector<std::string> problems;
      check((*any)[b], v, path, problems);
      if (problems.empty()) return;
      if (b == 0 || problems.size() < nearest.size()) nearest = std::move(problems);
    }
    for (std::string& p : nearest) out.push_back(p + " (in the anyOf branch nearest to conforming)");
  }
  if (v.is_array())
    if (auto items = schema.find("items"); items != schema.end())
      for (std::size_t i = 0; i < v.size(); ++i) check(*items, v[i], path + "/" + std::to_string(i), out);
}

}  // namespace

std::vector<std::string> schema_problems(const nlohmann::json& schema, const nlohmann::json& document) {
  std::vector<std::string> out;
  check(schema, document, "", out);
  return out;
}

}  // namespace clustersim::test
