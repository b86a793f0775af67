#pragma once
// Typed, path-tracking access to YAML. Every read either returns a value of the asked type or
// throws a UserError naming file, line and field path; unknown keys are errors, not ignored.
#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clustersim {

class YamlField {
 public:
  /// Parses a file (at most kMaxInputBytes); malformed YAML, a duplicate key, a second document or
  /// a missing file becomes a UserError. `named_by`: the option or field that named the file.
  static YamlField load_file(const std::string& path, const std::string& named_by = "");
  /// Parses text that stands for a file named `name` (tests, --set values).
  static YamlField load_string(const std::string& text, const std::string& name);

  YamlField child(const std::string& key) const;                   // required
  std::optional<YamlField> find(const std::string& key) const;     // optional
  YamlField element(std::size_t i) const;
  std::size_t size() const;
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }

  /// Rejects any key not listed, naming the allowed ones.
  void expect_keys(std::initializer_list<const char*> allowed) const;

  std::string as_string() const;
  double as_number() const;         // finite
  /// A finite number in [min, max]; the error names the range and `unit` ("GB/s"). Every physical
  /// field has one, so no finite input overflows to inf or NaN downstream.
  double as_number_in(double min, double max, const std::string& unit = "") const;
  long as_integer() const;          // decimal digits only: no 1.5, 1e3, 0x10 or octal
  long as_integer_in(long min, long max, const std::string& unit = "") const;
  bool as_bool() const;
  std::vector<long> as_integer_list(long min, long max) const;
  /// A string among `choices`.
  std::string as_choice(std::initializer_list<const char*> choices) const;
  std::string as_choice(const std::vector<std::string>& choices) const;

  [[noreturn]] void fail(const std::string& expected) const;
  int line() const;
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  const YAML::Node& node() const { return node_; }

 private:
  YamlField(YAML::Node node, std::shared_ptr<const std::string> file, std::string path, int line);
  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
  int line_;  // where the field is written: its key's line, an element's own, else its parent's
};

}  // namespace clustersim
