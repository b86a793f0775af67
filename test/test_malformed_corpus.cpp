// A malformed-input corpus generated from the shipped files, run through the real binary: every
// number in every shipped cluster, model, GPU catalog, scenario and rows file is replaced by a
// word, a list, an extreme or a fraction; keys are duplicated or deleted; garbage, extra documents,
// deep nesting and alias bombs are appended; endless and oversized files are given; and every
// subcommand gets bad command lines. Each case must exit 2 with one line on stderr that names the
// right file, line and field, and nothing on stdout.
//
// Speed: every case names an output file in a folder that does not exist, which is checked after
// the inputs are read and before any simulation. A mutation the loader wrongly accepted fails fast
// on that output path instead of simulating, and the test names it.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <sys/wait.h>
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

namespace fs = std::filesystem;
using clustersim::test::read_file;
using clustersim::test::source_path;

const std::string kNoDir = "/nonexistent-clustersim-dir/out.json";

/// A scalar as written in a file: its field path, 1-based line and byte offset.
struct Scalar {
  std::string path, key, text;
  int line = 0;
  std::size_t pos = 0;
};

/// A key of a block mapping written on a line of its own (not a list item, not in braces).
struct BlockKey {
  std::string path;
  int line = 0;         // the key's line
  int parent_line = 0;  // where the mapping's own field is written (what a missing-field error names)
  bool scalar_value = false;
};

void walk(const YAML::Node& n, const std::string& path, const std::string& key, int field_line,
          const std::string& text, std::vector<Scalar>& scalars, std::vector<BlockKey>& keys) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      const std::string child = path.empty() ? k : path + "." + k;
      const int key_line = kv.first.Mark().line + 1;
      // Block style: the key starts its line (after indentation only).
      const std::size_t line_start = text.rfind('\n', kv.first.Mark().pos);
      const std::size_t from = line_start == std::string::npos ? 0 : line_start + 1;
      const bool block = text.find_first_not_of(' ', from) == static_cast<std::size_t>(kv.first.Mark().pos);
      if (block) keys.push_back({child, key_line, field_line, kv.second.IsScalar()});
      walk(kv.second, child, k, key_line, text, scalars, keys);
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i)
      walk(n[i], path + "[" + std::to_string(i) + "]", key, n[i].Mark().line + 1, text, scalars, keys);
  } else if (n.IsScalar()) {
    const std::size_t pos = n.Mark().pos;
    if (text.compare(pos, n.Scalar().size(), n.Scalar()) == 0)  // plain, not quoted or folded
      scalars.push_back({path, key, n.Scalar(), n.Mark().line + 1, pos});
  }
}

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

/// Fields that hold counts (integers); the others with numbers are real quantities.
const std::set<std::string> kIntegerKeys = {
    "gpus", "count", "ports", "planes", "dims", "groups", "routers_per_group", "global_links", "nodes",
    "nodes_per_unit", "radix", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
    "vocab", "seq_len", "tp", "pp", "dp", "ep", "cp", "virtual_stages", "global_batch", "microbatch", "seed",
    "routed_experts", "top_k", "shared_experts", "expert_ffn_hidden", "dense_layers", "node_limit", "tokens",
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "zero_stage", "stage_layers"};
/// Fields where 0 (so also 1e-300) is a valid value.
const std::set<std::string> kZeroAllowed = {"latency_us", "half_seq_len", "dense_layers", "shared_experts", "seed", "stddev",
                                            "detection_s", "relaunch_s",
                                            "zero_stage", "stage_layers"};

/// One shipped input and how to run the binary on an edited copy of it.
struct Target {
  std::string name;      // shipped file, relative to the source tree
  std::string base;      // its text, with paths it names made absolute (same lines)
  std::string edited;    // where the edited copy is written
  std::string args;      // the command line, with {} for the edited copy
  std::vector<Scalar> scalars;
  std::vector<BlockKey> keys;
};

std::string temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "clustersim-corpus-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

/// `text` with the plain scalar at `pos` (of length `len`) replaced.
std::string replaced_at(const std::string& text, std::size_t pos, std::size_t len, const std::string& with) {
  return text.substr(0, pos) + with + text.substr(pos + len);
}

/// The scenario's cluster and model made absolute (a copy elsewhere still finds them); optionally
/// pointing at other files instead.
std::string absolute_paths(const std::string& relative, const std::string& cluster = "", const std::string& model = "") {
  std::string text = read_file(source_path(relative));
  const fs::path dir = fs::path(source_path(relative)).parent_path();
  const YAML::Node root = YAML::Load(text);
  // Later field first, so the earlier offset stays valid.
  std::vector<std::pair<std::size_t, std::pair<std::string, std::string>>> edits;
  for (const char* field : {"cluster", "model"}) {
    const YAML::Node n = root[field];
    const std::string& given = std::string(field) == "cluster" ? cluster : model;
    const std::string path = given.empty() ? (dir / n.Scalar()).lexically_normal().string() : given;
    edits.push_back({static_cast<std::size_t>(n.Mark().pos), {n.Scalar(), path}});
  }
  std::sort(edits.rbegin(), edits.rend());
  for (const auto& [pos, e] : edits) text = replaced_at(text, pos, e.first.size(), e.second);
  return text;
}

std::vector<std::string> shipped(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(source_path(folder)))
    if (entry.path().extension() == ".yaml") out.push_back(folder + "/" + entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void index(Target& t) {
  const YAML::Node root = YAML::Load(t.base);
  walk(root, "", "", root.Mark().line + 1, t.base, t.scalars, t.keys);
}

/// Every shipped input, each run by the command that reads it.
std::vector<Target> targets(const std::string& dir) {
  std::vector<Target> out;
  const std::string host = "scenarios/gpt3-175b-a100-1024.yaml";  // loads a cluster, the catalog and a model
  fs::create_directories(dir + "/clusters");
  fs::create_directories(dir + "/models");
  for (const std::string& c : shipped("scenarios/clusters")) {
    Target t{c, read_file(source_path(c)), dir + "/" + c.substr(10), "topology {} --json " + kNoDir, {}, {}};
    out.push_back(t);
  }
  for (const std::string& m : shipped("scenarios/models")) {
    const std::string edited = dir + "/" + m.substr(10);
    std::ofstream(dir + "/host-" + fs::path(m).stem().string() + ".yaml") << absolute_paths(host, "", edited);
    out.push_back({m, read_file(source_path(m)), edited,
                   "run " + dir + "/host-" + fs::path(m).stem().string() + ".yaml --json " + kNoDir, {}, {}});
  }
  {
    // The catalog is found beside the cluster's folder: a cluster copied next to the edited one.
    const std::string cluster = dir + "/clusters/catalog-host.yaml";
    std::ofstream(cluster) << read_file(source_path("scenarios/clusters/dgx-a100-superpod.yaml"));
    std::ofstream(dir + "/host-catalog.yaml") << absolute_paths(host, cluster, "");
    out.push_back({"scenarios/gpus.yaml", read_file(source_path("scenarios/gpus.yaml")), dir + "/gpus.yaml",
                   "run " + dir + "/host-catalog.yaml --json " + kNoDir, {}, {}});
  }
  std::vector<std::string> scenarios;
  // gpus.yaml is the GPU catalog (above); prices.yaml the price catalog, read by sweep only (its bad
  // input: test_sweep_bad_input).
  for (const std::string& s : shipped("scenarios"))
    if (s != "scenarios/gpus.yaml" && s != "scenarios/prices.yaml") scenarios.push_back(s);
  for (const std::string& s : shipped("scenarios/validation"))
    if (s.find("published.yaml") == std::string::npos) scenarios.push_back(s);
  for (const std::string& s : scenarios)
    out.push_back({s, absolute_paths(s), dir + "/" + fs::path(s).filename().string(), "run {} --json " + kNoDir, {}, {}});
  {
    // Rows name scenarios relative to their file: made absolute. --only with no such row stops a
    // wrongly accepted file before any simulation.
    std::string text = read_file(source_path("scenarios/validation/published.yaml"));
    const std::string folder = source_path("scenarios/validation") + "/";
    text = clustersim::test::replaced_all(text, "scenario: ", "scenario: " + folder, "published.yaml");
    out.push_back({"scenarios/validation/published.yaml", text, dir + "/published.yaml",
                   "validate --rows {} --only no-such-row", {}, {}});
  }
  for (Target& t : out) index(t);
  return out;
}

struct Expect {
  std::string file;
  int line = 0;           // 0: no line
  std::string field;      // what follows "file:line: "; "*" for any field path
  std::string contains;
};

/// Waits for a child, killing it after 60 s of sleeps, so a hang fails the case instead of stalling
/// the suite.
int wait_for(pid_t pid) {
  int status = 0;
  for (int waited_ms = 0; waitpid(pid, &status, WNOHANG) == 0; waited_ms += 2) {
    if (waited_ms > 60'000) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    usleep(2000);
  }
  return status;
}

/// Runs the binary on `args` (split at spaces: the corpus's paths have none) without a shell, its
/// output in two files; killed after 60 s, so a hang fails the case instead of stalling the suite.
clustersim::test::CliResult run(const std::string& args) {
  static const std::string out = clustersim::test::temp_file("", ".out"), err = clustersim::test::temp_file("", ".err");
  std::vector<std::string> words{clustersim::test::binary_path()};
  for (std::size_t at = 0; at < args.size();) {
    const std::size_t space = std::min(args.find(' ', at), args.size());
    if (space > at) words.push_back(args.substr(at, space - at));
    at = space + 1;
  }
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  // The harness's own failures (a fork or exec that did not happen) exit 127 with the reason in the
  // error file, which clustersim never writes; they are retried, not counted against clustersim.
  int status = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(127);
      execv(argv[0], argv.data());
      std::fprintf(stderr, "harness: exec %s failed: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    if (pid < 0) {
      usleep(100'000);
      continue;
    }
    status = wait_for(pid);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 127 && read_file(err).rfind("harness: ", 0) == 0)) break;
    usleep(100'000);
  }
  clustersim::test::CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.stdout_text = read_file(out);
  r.stderr_text = read_file(err);
  return r;
}

int g_cases = 0;

void check(const std::string& what, const std::string& args, const Expect& e) {
  ++g_cases;
  const auto r = run(args);
  std::string prefix = "error: " + e.file + (e.line > 0 ? ":" + std::to_string(e.line) : "") + ": ";
  INFO("case: " << what);
  INFO("command: clustersim " << args);
  INFO("stdout: " << r.stdout_text.substr(0, 400));
  INFO("stderr: " << r.stderr_text.substr(0, 800));
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
  const bool starts = r.stderr_text.rfind(prefix, 0) == 0;
  CHECK(starts);
  if (!starts) return;
  const std::string rest = r.stderr_text.substr(prefix.size());
  if (e.field != "*" && !e.field.empty()) CHECK(rest.rfind(e.field + ": ", 0) == 0);
  CHECK(rest.find(e.contains) != std::string::npos);
}

/// Writes `text` as the target's edited copy and checks the run.
void check_edit(const Target& t, const std::string& what, const std::string& text, const Expect& e) {
  std::ofstream(t.edited) << text;
  std::string args = t.args;
  if (const std::size_t at = args.find("{}"); at != std::string::npos) args.replace(at, 2, t.edited);
  check(t.name + ": " + what, args, e);
}

struct Corpus {
  std::string dir = temp_dir();
  std::vector<Target> all = targets(dir);
  ~Corpus() { fs::remove_all(dir); }
};

/// The kind of file a target is and a field path without list indices: "models:moe.top_k",
/// "catalog:gpus[].peak_tflops.bf16". The shipped files repeat their schema many times over (23
/// models, 8 clusters, 26 scenarios); the corpus edits each field of each schema once, in the first
/// file that has it, to stay fast.
std::string schema_field(const Target& t, const std::string& path) {
  std::string kind = t.name.find("clusters/") != std::string::npos  ? "cluster"
                     : t.name.find("models/") != std::string::npos  ? "model"
                     : t.name.find("gpus.yaml") != std::string::npos ? "catalog"
                     : t.name.find("published") != std::string::npos ? "rows"
                                                                     : "scenario";
  std::string out = kind + ":";
  bool in_index = false;
  for (char ch : path) {
    if (ch == '[') in_index = true;
    if (!in_index || ch == '[' || ch == ']') out += ch;
    if (ch == ']') in_index = false;
  }
  return out;
}

/// Each schema field's first numeric scalar (with its target) that `keep` accepts.
template <typename Keep>
std::vector<std::pair<const Target*, Scalar>> numbers(const Corpus& c, Keep keep) {
  std::vector<std::pair<const Target*, Scalar>> out;
  std::set<std::string> seen;
  for (const Target& t : c.all)
    for (const Scalar& s : t.scalars)
      if (is_number(s.text) && keep(s) && seen.insert(schema_field(t, s.path)).second) out.push_back({&t, s});
  return out;
}

/// Replaces each schema field's first number by `with[i % with.size()]`, field i in turn, and
/// expects an error at that scalar's line and path saying `expected`.
template <typename Keep>
void each_number(const Corpus& c, Keep keep, const std::vector<std::string>& with, const std::string& expected) {
  std::size_t i = 0;
  for (const auto& [t, s] : numbers(c, keep)) {
    const std::string& w = with[i++ % with.size()];
    check_edit(*t, s.path + " = " + w, replaced_at(t->base, s.pos, s.text.size(), w), {t->edited, s.line, s.path, expected});
  }
}

}  // namespace

// ----- every number -----

TEST_CASE("every numeric field of every schema rejects a word, a list or a mapping at its line") {
  const Corpus c;
  each_number(c, [](const Scalar&) { return true; }, {"abc", "[1, 2]", "{a: 1}"}, "expected");
  WARN(g_cases << " cases");
}

TEST_CASE("every numeric field of every schema has a range: 1e300, -1, nan, inf, 1e-300 are rejected") {
  const Corpus c;
  auto all = [](const Scalar&) { return true; };
  each_number(c, all, {"1e300"}, "expected");
  each_number(c, [](const Scalar& s) { return !kZeroAllowed.count(s.key); }, {"-1", ".nan", "1e-300", "-.inf", "99999999999999999999"},
              "expected");
  WARN(g_cases << " cases");
}

TEST_CASE("integer fields reject fractions and floats instead of truncating them") {
  const Corpus c;
  auto integer = [](const Scalar& s) { return kIntegerKeys.count(s.key) > 0; };
  each_number(c, integer, {"1.5", "1e3", "0x10"}, "expected an integer, got '");
  WARN(g_cases << " cases");
}

// ----- keys -----

TEST_CASE("a key given twice is an error naming both lines, never first-wins") {
  const Corpus c;
  std::set<std::string> seen;
  for (const Target& t : c.all)
    for (const BlockKey& k : t.keys) {
      const std::string parent = k.path.substr(0, k.path.rfind('.') == std::string::npos ? 0 : k.path.rfind('.'));
      if (!k.scalar_value || !seen.insert(schema_field(t, parent)).second) continue;  // one per mapping
      // The key's whole line, repeated right below it.
      std::size_t start = 0;
      for (int l = 1; l < k.line; ++l) start = t.base.find('\n', start) + 1;
      const std::size_t end = t.base.find('\n', start);
      const std::string line = t.base.substr(start, end - start + 1);
      check_edit(t, "duplicate " + k.path, t.base.substr(0, end + 1) + line + t.base.substr(end + 1),
                 {t.edited, k.line + 1, k.path, "duplicate key: '" + k.path.substr(k.path.rfind('.') + 1) +
                                                    "' is already given at line " + std::to_string(k.line)});
    }
  WARN(g_cases << " cases");
}

TEST_CASE("an unknown key appended to any shipped file is named with the keys allowed") {
  const Corpus c;
  std::set<std::string> seen;
  for (const Target& t : c.all) {
    if (!seen.insert(schema_field(t, "")).second) continue;
    const std::string text = t.base + "\nspeed_of_light: 3e8\n";
    const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    check_edit(t, "unknown key", text, {t.edited, line, "speed_of_light", "unknown key (expected one of:"});
  }
  WARN(g_cases << " cases");
}

/// Keys the schemas let a file leave out (a default, or free text; one of tp, pp and dp is derived
/// from gpus, test_scenario checks that two left out is an error).
const std::set<std::string> kOptionalKeys = {
    "tp", "pp", "dp", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split", "description", "note", "source", "kv_heads", "virtual_stages", "sequence_parallel", "distributed_optimizer",
    "zero_stage", "order", "attention", "ep", "cp", "cp_comm", "stage_layers", "overlap_grad_reduce", "grad_reduce_dtype", "fp8_param_gather", "overlap_param_gather",
    "overlap_p2p_comm", "overlap_tp_backward", "gradient_accumulation_fusion", "reshard_after_forward",
    "nodes_per_unit", "ports", "oversubscription", "shared_experts", "dense_layers", "capacity_factor", "dropless",
    "node_limit", "placement", "routing", "hot_factor", "seed", "dispatch", "hbm_GB", "hbm_GiB",
    "gemm_efficiency", "attention_efficiency", "hbm_efficiency", "score_matmul_efficiency",
    "in_training_efficiency", "fp8_gemm_efficiency", "streaming_multiprocessors", "interference", "uncalibrated",
    "tied_embeddings_note", "mean", "median"};

TEST_CASE("a required field deleted from any shipped file is named at the mapping that lacks it") {
  const Corpus c;
  std::set<std::string> seen;
  for (const Target& t : c.all)
    for (const BlockKey& k : t.keys) {
      const std::string key = k.path.substr(k.path.rfind('.') + 1);
      const std::string parent = k.path.substr(0, k.path.rfind('.') == std::string::npos ? 0 : k.path.rfind('.'));
      if (!k.scalar_value || kOptionalKeys.count(key) || !seen.insert(schema_field(t, parent) + (seen.size() % 2 ? "" : key)).second)
        continue;
      std::size_t start = 0;
      for (int l = 1; l < k.line; ++l) start = t.base.find('\n', start) + 1;
      const std::string text = t.base.substr(0, start) + t.base.substr(t.base.find('\n', start) + 1);
      // A top-level field is missing from the document, whose line is its first key's.
      const int parent_line = k.path.find('.') == std::string::npos ? YAML::Load(text).Mark().line + 1 : k.parent_line;
      check_edit(t, "without " + k.path, text, {t.edited, parent_line, k.path, "missing required field"});
    }
  WARN(g_cases << " cases");
}

// ----- documents, garbage, nesting, aliases -----

TEST_CASE("extra documents, trailing text, deep nesting and alias bombs are errors at their line") {
  const Corpus c;
  std::set<std::string> seen;
  for (const Target& t : c.all) {
    if (!seen.insert(schema_field(t, "")).second) continue;
    const int end = static_cast<int>(std::count(t.base.begin(), t.base.end(), '\n'));
    const std::string base = t.base.back() == '\n' ? t.base : t.base + "\n";
    check_edit(t, "second document", base + "---\nname: again\n", {t.edited, end + 1, "", "expected one YAML document"});
    check_edit(t, "text after ...", base + "...\ngarbage\n", {t.edited, end + 2, "", "expected one YAML document"});
    const std::string deep_list = std::string(10000, '[') + std::string(10000, ']');
    check_edit(t, "10^4 nested lists", base + "deep: " + deep_list + "\n", {t.edited, end + 1, "deep", "nested more than 32 levels"});
    std::string deep_map;
    for (int i = 0; i < 40; ++i) deep_map += "{a: ";
    deep_map += "1" + std::string(40, '}');
    check_edit(t, "40 nested mappings", base + "deep: " + deep_map + "\n", {t.edited, end + 1, "deep", "nested more than 32 levels"});
    check_edit(t, "alias bomb",
               base + "lol1: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\nlol2: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                      "lol3: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n",
               {t.edited, end + 2, "lol2[0]", "anchors and aliases are not supported"});
    check_edit(t, "an unclosed flow list", base + "tail: [1, 2\n",
               {t.edited, end + 2, "tail", "malformed YAML"});  // found at the end of the file
  }
  WARN(g_cases << " cases");
}

// ----- files that are no input -----

TEST_CASE("endless, oversized, missing and directory inputs are refused by every command that reads a file") {
  const Corpus c;
  const std::string big = c.dir + "/big.yaml";
  {
    std::ofstream out(big);
    for (int i = 0; i < 300'000; ++i) out << "# padding line to pass the size bound\n";
  }
  const std::string scenario = source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"topology {}", "cluster"},
      {"collective --cluster {} --gpus 8", "--cluster"},
      {"bench --cluster {} --gpus 8", "--cluster"},
      {"run {}", "scenario"},
      {"compare {} --schedules 1f1b", "scenario"},
      {"serve {}", "serving"},
      {"sweep {}", "scenario"},
      {"sweep " + scenario + " --prices {}", "--prices"},
      {"run " + scenario + " --kernels {}", "--kernels"},
      {"validate --rows {}", "--rows"},
      {"calibrate --cluster {} " + source_path("scenarios/calibration/all_reduce_perf-8gpu.synthetic.txt"), "--cluster"},
      {"calibrate --cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + " {}", "nccl_tests"},
      {"run " + scenario + " --calibration {}", "--calibration"},
      {"collective --cluster " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + " --gpus 8 --calibration {}", "--calibration"},
  };
  for (const auto& [command, option] : commands)
    for (const auto& [file, why] : std::vector<std::pair<std::string, std::string>>{
             {"/dev/zero", "larger than 4 MiB"}, {big, "larger than 4 MiB"}, {c.dir, "a directory"},
             {c.dir + "/missing.yaml", "no such file"}}) {
      std::string args = command;
      args.replace(args.find("{}"), 2, file);
      check(args, args, {file, 0, option, why});
    }
  // A scenario naming such a file: the field that named it.
  for (const std::string& file : {std::string("/dev/zero"), c.dir, c.dir + "/missing.yaml"}) {
    const std::string s = c.dir + "/names-" + std::to_string(g_cases) + ".yaml";
    const std::string text = absolute_paths("scenarios/gpt3-175b-a100-1024.yaml", "", file);
    std::ofstream(s) << text;
    check("model: " + file, "run " + s, {s, clustersim::test::line_of(text, "model:"), "model", "cannot open '"});
  }
  WARN(g_cases << " cases");
}

// ----- command lines -----

TEST_CASE("bad command lines for every subcommand are one line in our words naming the option") {
  const std::string cluster = source_path("scenarios/clusters/dgx-h100-superpod.yaml");
  const std::string scenario = source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  const std::string col = "collective --cluster " + cluster + " --gpus 16 ";
  const std::string cl = "command line";
  const std::string bench = "bench --cluster " + cluster + " --gpus 16 ";
  const std::string rows = source_path("scenarios/validation/published.yaml");
  struct Case {
    std::string args, where, field, contains;
  };
  const std::vector<Case> cases = {
      {"", cl, "", "expected a command, one of: run, validate, compare, calibrate, collective, topology, list, bench, search, sweep, goodput, serve, schema"},
      {"frobnicate", cl, "", "expected a command, one of: run, validate, compare, calibrate, collective, topology, list, bench, search, sweep, goodput, serve, schema; got 'frobnicate'"},
      {"--frobnicate", cl, "", "expected a command, one of: run, validate, compare, calibrate, collective, topology, list, bench, search, sweep, goodput, serve, schema; got '--frobnicate'"},
      // serve
      {"serve", cl, "serving", "missing: expected this argument"},
      {"serve " + source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") + " --json", cl, "--json", "expected a value"},
      {"serve " + source_path("scenarios/serving/llama3-70b-h100-tp8.yaml") + " --set rate", cl, "--set", "expected FIELD=VALUE, got 'rate'"},
      // collective
      {"collective --gpus 8", cl, "--cluster", "missing: expected this option"},
      {"collective --cluster " + cluster, cl, "--gpus", "missing: expected this option"},
      {col + "--cluster", cl, "--cluster", "expected a value"},
      {col + "--speed 3", cl, "--speed", "unknown option"},
      {col + "extra", cl, "", "unexpected argument 'extra'"},
      {"collective --cluster " + cluster + " --gpus eight", cl, "--gpus", "expected an integer from 1 to 2147483647, got 'eight'"},
      {"collective --cluster " + cluster + " --gpus 99999999999999999999", cl, "--gpus", "expected an integer"},
      {"collective --cluster " + cluster + " --gpus 1", cluster, "--gpus", "expected 2 to 1016 GPUs (the cluster has 1016), got 1"},
      {"collective --cluster " + cluster + " --gpus 1.5", cl, "--gpus", "expected an integer"},
      {col + "--channels 0", cl, "--channels", "expected an integer from 1 to 64, got 0"},
      {col + "--channels 100000", cl, "--channels", "expected an integer from 1 to 64"},
      {col + "--channels 2147483648", cl, "--channels", "expected an integer from 1 to 64"},
      {col + "--channels -3", cl, "--channels", "expected an integer from 1 to 64"},
      {col + "-f 1.000001", cl, "-f", "expected a factor that gives at most 1024 sizes"},
      {col + "-f nan", cl, "-f", "expected a number from 1 to"},
      {col + "-f inf", cl, "-f", "expected a number from 1 to"},
      {col + "-f 0.5", cl, "-f", "expected a number from 1 to"},
      {col + "-f 1", cl, "-f", "expected a factor > 1"},
      {col + "-f two", cl, "-f", "expected a number from 1 to"},
      {col + "-b 0 -e 0", cl, "-b", "expected a size of at least 1 byte"},
      {col + "-b 0 -e 8G", cl, "-b", "expected a size of at least 1 byte"},
      {col + "-b 8X", cl, "-b", "expected a size like 8, 64K, 1M or 8G, got '8X'"},
      {col + "-b -8", cl, "-b", "expected a size like"},
      {col + "-e 2048G", cl, "-e", "expected a size up to 1024G"},
      {col + "-e 20000000000G", cl, "-e", "expected a size like"},
      {col + "-b 1M -e 1K", cl, "-e", "expected a maximum size >= the minimum"},
      {col + "--root 16", cl, "--root", "expected an integer from 0 to 15, got 16"},
      {col + "--root -1", cl, "--root", "expected an integer from 0 to 15"},
      {col + "--op all_reduce --root 3", cl, "--root", "expected --root only with --op broadcast (all_reduce has no root)"},
      {col + "--op all_smash", cl, "--op", "expected one of: all_reduce"},
      {col + "--algo nope", cl, "--algo", "expected best (alias auto), nccl or one of:"},
      {col + "--proto LL256", cl, "--proto", "expected auto, LL, LL128, Simple or ideal"},
      {col + "--dtype float8", cl, "--dtype", "expected int8"},
      {"collective --cluster " + source_path("scenarios/clusters/dgx-h100-superpod-16k.yaml") +
           " --gpus 8192 --op all_to_all",
       cl, "--gpus", "expected at most 4096 GPUs for all_to_all"},
      {col + "--json " + kNoDir, kNoDir, "--json", "the directory '/nonexistent-clustersim-dir' does not exist"},
      {col + "--json /tmp", "/tmp", "--json", "expected a file to write, got a directory"},
      {col + "--report " + kNoDir, kNoDir, "--report", "does not exist"},
      {col + "--set parallel.tp=4", cl, "--set", "expected cluster.PATH=VALUE"},
      {col + "--set cluster.fabric.tiers.9.radix=2", cl, "--set", "expected an index below 2 into the list, got '9'"},
      // topology
      {"topology", cl, "--cluster", "missing: expected this option"},  // positional, or --cluster
      {"topology " + cluster + " --dot " + kNoDir, kNoDir, "--dot", "does not exist"},
      {"topology " + cluster + " --graphml /tmp", "/tmp", "--graphml", "got a directory"},
      {"topology " + cluster + " " + cluster, cl, "", "unexpected argument"},
      {"topology " + cluster + " --level leaf", cl, "--level", "expected --dot, --svg or --report as well"},
      {"topology " + cluster + " --dot /tmp/t.dot --level rack", cl, "--level", "expected node, leaf or spine"},
      {"topology " + cluster + " --svg /tmp/t.svg --level pod", cl, "--level", "expected node, leaf or spine, got 'pod'"},
      {"topology " + cluster + " --svg " + kNoDir, kNoDir, "--svg", "does not exist"},
      {"topology " + cluster + " --report /tmp", "/tmp", "--report", "got a directory"},
      {"topology " + cluster + " --csv " + kNoDir, kNoDir, "--csv", "does not exist"},
      {"topology " + cluster + " --csv - --json -", cl, "--csv", "expected a file: --json already writes to stdout"},
      {"topology " + cluster + " --set fabric.type=torus", cl, "--set", "expected cluster.PATH=VALUE"},
      {"topology " + cluster + " --set cluster.fabric.no_such=1", cl, "--set", "unknown cluster field 'cluster.fabric.no_such'"},
      // run
      {"run", cl, "scenario", "missing: expected this argument"},
      {"run " + scenario + " --allow-oom=2", cl, "--allow-oom", "expected no value: it is a flag"},
      {"run " + scenario + " --trace-ranks 0-7", cl, "--trace-ranks", "expected --trace as well"},
      {"run " + scenario + " --trace /tmp/t.json --trace-ranks 2147483647", cl, "--trace-ranks", "expected an integer from 0 to 511"},
      {"run " + scenario + " --trace /tmp/t.json --trace-ranks 0-99999999", cl, "--trace-ranks", "expected an integer from 0 to 511"},
      {"run " + scenario + " --trace /tmp/t.json --trace-ranks 0-99999999999999999999", cl, "--trace-ranks", "expected an integer"},
      {"run " + scenario + " --trace /tmp/t.json --trace-ranks 7-3", cl, "--trace-ranks", "expected a range from low to high"},
      {"run " + scenario + " --trace /tmp/t.json --trace-ranks 1,,2", cl, "--trace-ranks", "expected GPU ranges like 0-7,64"},
      {"run " + scenario + " --trace /tmp/t.json --trace-ranks x", cl, "--trace-ranks", "expected an integer"},
      {"run " + scenario + " --trace /tmp/t.gz", cl, "--trace", "expected FILE.json.gz for a compressed trace"},
      {"run " + scenario + " --set", cl, "--set", "expected a value"},
      {"run " + scenario + " --set tp", cl, "--set", "expected FIELD=VALUE"},
      {"run " + scenario + " --set parallel.warp=4", cl, "--set", "unknown scenario field 'parallel.warp'"},
      {"run " + scenario + " --set parallel.tp=[1,2]", cl, "--set", "expected one value"},
      {"run " + scenario + " --json " + kNoDir, kNoDir, "--json", "does not exist"},
      {"run " + scenario + " --trace " + kNoDir, kNoDir, "--trace", "does not exist"},
      {"run " + scenario + " --report " + kNoDir, kNoDir, "--report", "does not exist"},
      {"run " + scenario + " --report /tmp", "/tmp", "--report", "expected a file to write, got a directory"},
      {"run " + scenario + " --report /tmp/r.html --topology-level rack", cl, "--topology-level", "expected node, leaf or spine, got 'rack'"},
      {"run " + scenario + " --topology-level leaf", cl, "--topology-level", "expected --report as well"},
      // compare
      {"compare " + scenario, cl, "--schedules", "missing: expected this option"},
      {"compare " + scenario + " --schedules warp", cl, "--schedules", "expected pipeline schedules from:"},
      {"compare " + scenario + " --schedules 1f1b --allow-oom=1", cl, "--allow-oom", "expected no value"},
      {"compare " + scenario + " --schedules 1f1b --svg " + kNoDir, kNoDir, "--svg", "does not exist"},
      {"compare " + scenario + " --schedules 1f1b --report " + kNoDir, kNoDir, "--report", "does not exist"},
      {"compare " + scenario + " --schedules 1f1b --report /tmp", "/tmp", "--report", "got a directory"},
      {"compare " + scenario + " --schedules 1f1b --report /tmp/c.html --topology-level pod", cl, "--topology-level", "expected node, leaf or spine"},
      {"compare " + scenario + " --schedules 1f1b --topology-level node", cl, "--topology-level", "expected --report as well"},
      // validate
      {"validate --rows " + rows + " --only no-such-row", cl, "--only", "expected row names listed in"},
      {"validate --rows", cl, "--rows", "expected a value"},
      {"validate --sets", cl, "--sets", "expected a value"},
      {"validate --set narayanan-table1", cl, "--set", "validate takes no KEY=VALUE overrides"},
      // calibrate
      {"calibrate", cl, "--cluster", "missing: expected this option"},
      {"calibrate --cluster " + cluster + " --gpus 1 " + rows, cl, "--gpus", "expected an integer from 2 to 1016, got 1"},
      {"calibrate --cluster " + cluster + " --iteration =3", cl, "--iteration", "expected SCENARIO=SECONDS"},
      {"calibrate --cluster " + cluster + " --iteration " + scenario + "=inf", cl, "--iteration", "expected a number from"},
      {"calibrate --cluster " + cluster + " --iteration " + scenario + "=1 --out " + kNoDir, kNoDir, "--out", "does not exist"},
      {col + "--nccl-tests /tmp", "/tmp", "--nccl-tests", "expected a file to write, got a directory"},
      {"calibrate --cluster " + cluster + " --iteration " + scenario + "=1 --csv /tmp", "/tmp", "--csv", "got a directory"},
      // list
      {"list extra", cl, "", "unexpected argument 'extra'"},
      {"list --verbosity", cl, "--verbosity", "unknown option"},  // -v, --verbose is every command's
      {"list --csv " + kNoDir, kNoDir, "--csv", "does not exist"},
      // schema
      {"schema --markdown=yes", cl, "--markdown", "expected no value"},
      {"schema --json /tmp", "/tmp", "--json", "got a directory"},
      {"schema --csv " + kNoDir, kNoDir, "--csv", "does not exist"},
      {"schema extra", cl, "", "unexpected argument 'extra'"},
      // bench
      {"bench --cluster " + cluster + " --gpu-counts 16,1", cluster, "--gpu-counts", "expected 2 to 1016 GPUs, got 1"},
      {"bench --cluster " + cluster + " --gpu-counts x", cl, "--gpu-counts", "expected an integer"},
      {bench + "--repeat 0", cl, "--repeat", "expected an integer from 1 to 1000, got 0"},
      {bench + "--repeat many", cl, "--repeat", "expected an integer from 1 to 1000"},
      {bench + "--size 0", cl, "--size", "expected a size from 1 byte to 1024G"},
      {bench + "--algo warp", cl, "--algo", "expected an all-reduce algorithm"},
      {bench + "--op broadcast", cl, "--op", "expected all_reduce, all_gather or reduce_scatter; got 'broadcast'"},
      {bench + "--all-to-all --op all_gather", cl, "--op", "expected no --op with --all-to-all"},
      {bench + "--op all_gather --algo tree", cl, "--algo", "expected an all_gather algorithm: ring"},
      {"bench --cluster " + cluster + " --one-gpu-per-node --gpus 128", cluster, "--gpus",
       "expected 2 to 127 nodes (--one-gpu-per-node), got 128"},
      {"bench --cluster " + cluster + " --op all_gather --algo pat --gpus 16", cluster, "--algo",
       "pat needs one GPU per node"},
      {"bench --goodput " + scenario + " --trials 0", cl, "--trials", "expected an integer from 1 to 10000000, got 0"},
      // goodput
      {"goodput --days 1", cl, "scenario", "missing: expected this argument"},
      {"goodput " + scenario, cl, "--days", "missing: expected this option"},
      {"goodput " + scenario + " --days 0", cl, "--days", "expected a number of days above 0"},
      {"goodput " + scenario + " --days 1 --trials 0", cl, "--trials", "expected an integer from 1 to 10000000, got 0"},
      {"goodput " + scenario + " --days 1", scenario, "reliability", "expected a reliability: section"},
  };
  for (const Case& k : cases) check(k.args, k.args, {k.where, 0, k.field, k.contains});
  WARN(g_cases << " cases");
}
