#include "topologies/yaml_reader.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_keys_observer.hpp"
#include "topologies/yaml_strict.hpp"

namespace clustersim {

namespace {
std::string join(std::initializer_list<const char*> items) {
  std::string out;
  for (const char* s : items) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}
std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}
/// 1-based line of a node, or `otherwise` when it has none (an absent element).
int line_of(const YAML::Node& n, int otherwise) {
  return n.IsDefined() && !n.Mark().is_null() ? n.Mark().line + 1 : otherwise;
}
/// A bound as a reader writes it: 1000, 0.001, 1e+06.
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

YamlField::YamlField(YAML::Node node, std::shared_ptr<const std::string> file, std::string path, int line)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), line_(line) {}

YamlField YamlField::load_file(const std::string& path, const std::string& named_by) {
  return load_string(read_input_file(path, named_by), path);
}

YamlField YamlField::load_string(const std::string& text, const std::string& name) {
  auto file = std::make_shared<const std::string>(name);
  YAML::Node root;
  try {
    check_yaml_structure(text, name);
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    throw UserError(name, line, line > 0 ? field_path_at_line(text, line) : "", "malformed YAML: " + e.msg);
  }
  if (!root.IsMap()) throw UserError(name, 1, "", "expected a mapping at the top level");
  return YamlField(root, file, "", line_of(root, 1));
}

int YamlField::line() const { return line_; }

void YamlField::fail(const std::string& expected) const { throw UserError(*file_, line(), path_, expected); }

YamlField YamlField::child(const std::string& key) const {
  auto found = find(key);
  if (!found) {
    if (!node_.IsMap()) fail("expected a mapping with field '" + key + "'");
    throw UserError(*file_, line(), path_.empty() ? key : path_ + "." + key, "missing required field");
  }
  return *found;
}

std::optional<YamlField> YamlField::find(const std::string& key) const {
  if (!node_.IsMap()) fail("expected a mapping, got " + describe(node_));
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar() || kv.first.Scalar() != key) continue;
    // A field is where its key is: a block mapping or list under the key starts on the next line.
    YamlField field(kv.second, file_, path_.empty() ? key : path_ + "." + key, line_of(kv.first, line_));
    if (kv.second.IsNull()) field.fail("expected a value");  // not a silent default
    return field;
  }
  return std::nullopt;
}

YamlField YamlField::element(std::size_t i) const {
  if (!node_.IsSequence()) fail("expected a list, got " + describe(node_));
  const YAML::Node n = node_[i];
  return YamlField(n, file_, path_ + "[" + std::to_string(i) + "]", line_of(n, line_));
}

std::size_t YamlField::size() const {
  if (!node_.IsSequence()) fail("expected a list, got " + describe(node_));
  return node_.size();
}

namespace {
ExpectedKeysObserver g_keys_observer;
}

void observe_expected_keys(ExpectedKeysObserver observer) { g_keys_observer = std::move(observer); }

void YamlField::expect_keys(std::initializer_list<const char*> allowed) const {
  if (g_keys_observer) g_keys_observer(*file_, path_, std::vector<std::string>(allowed.begin(), allowed.end()));
  if (!node_.IsMap()) fail("expected a mapping, got " + describe(node_));
  for (const auto& kv : node_) {
    const int at = line_of(kv.first, line_);
    if (!kv.first.IsScalar())
      throw UserError(*file_, at, path_, "expected field names, got " + describe(kv.first) + " as a key");
    const std::string key = kv.first.Scalar();
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok)
      throw UserError(*file_, at, path_.empty() ? key : path_ + "." + key,
                      "unknown key (expected one of: " + join(allowed) + ")");
  }
}

std::string YamlField::as_string() const {
  if (!node_.IsScalar()) fail("expected a string, got " + describe(node_));
  return node_.Scalar();
}

double YamlField::as_number() const {
  if (!node_.IsScalar()) fail("expected a number, got " + describe(node_));
  double v = 0;
  if (!YAML::convert<double>::decode(node_, v) || !std::isfinite(v))
    fail("expected a number, got " + describe(node_));
  return v;
}

double YamlField::as_number_in(double min, double max, const std::string& unit) const {
  const double v = as_number();
  if (!(v >= min && v <= max))
    fail("expected " + (min == 0 ? std::string("a number from 0") : "a number from " + format_number(min)) + " to " +
         format_number(max) + (unit.empty() ? "" : " " + unit) + ", got " + describe(node_));
  return v;
}

long YamlField::as_integer() const {
  if (!node_.IsScalar()) fail("expected an integer, got " + describe(node_));
  // Decimal digits only: yaml-cpp would read 010 as octal 8 and 0x10 as 16, and a float such as
  // 1.5 or 1e300 must not become an integer by truncation.
  const std::string& text = node_.Scalar();
  std::size_t digits = text.find_first_not_of("+-") == 1 ? 1 : 0;
  if (text.size() <= digits || text.find_first_not_of("0123456789", digits) != std::string::npos)
    fail("expected an integer, got " + describe(node_));
  errno = 0;
  const long v = std::strtol(text.c_str(), nullptr, 10);
  if (errno == ERANGE) fail("expected an integer, got " + describe(node_) + ", too large to count");
  return v;
}

long YamlField::as_integer_in(long min, long max, const std::string& unit) const {
  const long v = as_integer();
  if (v < min || v > max)
    fail("expected an integer from " + std::to_string(min) + " to " + std::to_string(max) + (unit.empty() ? "" : " " + unit) +
         ", got " + describe(node_));
  return v;
}

bool YamlField::as_bool() const {
  bool v = false;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, v))
    fail("expected true or false, got " + describe(node_));
  return v;
}

std::vector<long> YamlField::as_integer_list(long min, long max) const {
  std::vector<long> out;
  for (std::size_t i = 0; i < size(); ++i) out.push_back(element(i).as_integer_in(min, max));
  return out;
}

std::string YamlField::as_choice(std::initializer_list<const char*> choices) const {
  return as_choice(std::vector<std::string>(choices.begin(), choices.end()));
}

std::string YamlField::as_choice(const std::vector<std::string>& choices) const {
  std::string v = as_string();
  std::string listed;
  for (const std::string& c : choices) {
    if (v == c) return v;
    listed += (listed.empty() ? "" : ", ") + c;
  }
  fail("expected one of: " + listed + "; got '" + v + "'");
}

}  // namespace clustersim
