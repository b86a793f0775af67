#include "topologies/yaml_strict.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <sstream>
#include <vector>

#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

/// Follows the event stream with a stack of open mappings and lists, so every event knows its
/// field path and whether it is a key or a value.
class StrictHandler final : public YAML::EventHandler {
 public:
  explicit StrictHandler(std::string name) : name_(std::move(name)) {}

  int documents = 0;
  int first_document_line = 0;

  void OnDocumentStart(const YAML::Mark& mark) override {
    ++documents;
    if (documents == 1) {
      first_document_line = mark.line + 1;
      return;
    }
    throw UserError(name_, mark.line + 1, "",
                    "expected one YAML document; a second one starts here (after the first, from line " +
                        std::to_string(first_document_line) + "); remove it or the '---' / '...' before it");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, nullptr); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    const std::string path = node(mark, nullptr);
    fail(mark, path, "expected a value, got an alias (*name): anchors and aliases are not supported; write the value out");
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string& value) override {
    node(mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(mark, false);
  }
  void OnSequenceEnd() override { stack_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(mark, true);
  }
  void OnMapEnd() override { stack_.pop_back(); }

 private:
  struct Frame {
    bool map = false;
    std::string path;
    bool at_key = true;                 // maps: the next node is a key
    std::string key;                    // maps: the key whose value comes next
    std::map<std::string, int> lines;   // maps: the line of each key seen
    std::size_t index = 0;              // lists: the next element's index
  };

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& path, const std::string& expected) const {
    throw UserError(name_, mark.line + 1, path, expected);
  }

  /// Accounts for one node (a scalar when `scalar` is given) and returns its field path.
  std::string node(const YAML::Mark& mark, const std::string* scalar) {
    if (++values_ > kMaxYamlValues)
      fail(mark, "", "more than " + std::to_string(kMaxYamlValues) + " values; expected a hand-written input file");
    if (stack_.empty()) return "";
    Frame& f = stack_.back();
    if (!f.map) return f.path + "[" + std::to_string(f.index++) + "]";
    if (f.at_key) {
      const std::string key = scalar ? *scalar : "";
      const std::string path = f.path.empty() ? key : f.path + "." + key;
      if (!scalar) fail(mark, f.path, "expected a field name as a key");
      const auto [it, fresh] = f.lines.emplace(key, mark.line + 1);
      if (!fresh)
        fail(mark, path, "duplicate key: '" + key + "' is already given at line " + std::to_string(it->second) +
                             "; expected each field once");
      f.key = key;
      f.at_key = false;
      return path;
    }
    f.at_key = true;
    return f.path.empty() ? f.key : f.path + "." + f.key;
  }

  void open(const YAML::Mark& mark, bool map) {
    if (!stack_.empty() && stack_.back().map && stack_.back().at_key)
      fail(mark, stack_.back().path, "expected a field name as a key, got a " + std::string(map ? "mapping" : "list"));
    const std::string path = node(mark, nullptr);
    if (static_cast<int>(stack_.size()) >= kMaxYamlDepth)
      fail(mark, path.substr(0, path.find_first_of(".[")), "nested more than " + std::to_string(kMaxYamlDepth) + " levels deep; expected the schema's few levels");
    Frame f;
    f.map = map;
    f.path = path;
    stack_.push_back(std::move(f));
  }

  std::string name_;
  std::vector<Frame> stack_;
  long values_ = 0;
};

}  // namespace

void check_yaml_structure(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  StrictHandler handler(name);
  while (parser.HandleNextDocument(handler)) {
  }
}

std::string field_path_at_line(const std::string& text, int line) {
  struct Key {
    std::size_t indent;
    std::string name;
  };
  std::vector<Key> open;
  std::istringstream in(text);
  std::string raw;
  for (int n = 1; n <= line && std::getline(in, raw); ++n) {
    std::size_t indent = raw.find_first_not_of(' ');
    if (indent == std::string::npos || raw[indent] == '#') continue;
    std::size_t at = indent;
    while (at != std::string::npos && raw.compare(at, 2, "- ") == 0) at = raw.find_first_not_of(' ', at + 2);  // list items
    if (at == std::string::npos) continue;  // a bare "- " line (found by fuzzing: it ran past the end)
    const std::size_t colon = raw.find(':', at);
    const std::string key = colon == std::string::npos ? "" : raw.substr(at, colon - at);
    const bool is_key = !key.empty() && key.find_first_of(" {}[],\"'#") == std::string::npos;
    while (!open.empty() && open.back().indent >= at) open.pop_back();
    if (is_key) open.push_back({at, key});
  }
  std::string path;
  for (const Key& k : open) path += (path.empty() ? "" : ".") + k.name;
  return path;
}

}  // namespace clustersim
