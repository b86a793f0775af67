#include "workloads/scenario.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>

#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

// The scenario schema, read by both expect_keys and --set so the two cannot drift apart.
// Defaults (Megatron-LM's): virtual_stages 1, sequence_parallel false, distributed_optimizer false,
// order tp-dp-pp; attention flash. Everything else is required.
const std::initializer_list<const char*> kFields = {
    "name", "description", "cluster", "model", "gpus", "parallel", "schedule", "global_batch", "microbatch",
    "precision", "recompute", "attention"};
const std::initializer_list<const char*> kParallelFields = {
    "tp", "pp", "dp", "virtual_stages", "sequence_parallel", "distributed_optimizer", "order"};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

int read_int(const YamlField& f) {
  const long v = f.as_positive_integer();
  if (v > std::numeric_limits<int>::max()) f.fail("expected a positive integer up to 2147483647");
  return static_cast<int>(v);
}

/// A product of counts for messages; a double keeps it exact far past any real cluster, never wraps.
std::string product(double a, double b, double c = 1) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(0) << a * b * c;
  return out.str();
}

/// Sets one schema field in the parsed tree. yaml-cpp nodes are references, so writing through a
/// copy of root's node changes what root reads; the key keeps its mark, so errors about an
/// overridden value still point at the field's line in the scenario file.
void apply_override(const YamlField& root, const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UserError("command line", 0, "--set", "expected FIELD=VALUE, got '" + text + "'");
  const std::string path = text.substr(0, eq), value_text = text.substr(eq + 1);
  const auto fields = scenario_fields();
  if (std::find(fields.begin(), fields.end(), path) == fields.end())
    throw UserError("command line", 0, "--set", "unknown scenario field '" + path + "' (expected one of: " +
                                                    join(fields) + ")");
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception&) {
    // left undefined: reported just below
  }
  if (!value.IsScalar())
    throw UserError("command line", 0, "--set", "expected one value for '" + path + "', got '" + value_text + "'");

  YAML::Node tree = root.node();
  const std::size_t dot = path.find('.');
  if (dot == std::string::npos) {
    tree[path] = value;
    return;
  }
  const std::string section = path.substr(0, dot);
  YAML::Node parent = tree[section];
  if (parent.IsDefined() && !parent.IsMap()) root.child(section).fail("expected a mapping");
  parent[path.substr(dot + 1)] = value;
}

/// A path written in the scenario, relative to the scenario's folder unless absolute. A file that
/// cannot be opened is an error at the field that names it, not in the missing file.
std::string resolve(const std::filesystem::path& dir, const YamlField& field) {
  std::filesystem::path p = field.as_string();
  if (p.is_relative()) p = dir / p;
  const std::string out = p.lexically_normal().string();
  if (!std::ifstream(out)) field.fail("cannot open '" + out + "' (paths are relative to the scenario file)");
  return out;
}

/// The cluster and its GPU from the catalog at <cluster's folder>/../gpus.yaml.
void read_cluster(const std::filesystem::path& dir, const YamlField& field, ScenarioSpec& s) {
  s.cluster_file = resolve(dir, field);
  const YamlField root = YamlField::load_file(s.cluster_file);
  s.cluster = parse_cluster_spec(root);
  const std::string catalog_file =
      (std::filesystem::path(s.cluster_file).parent_path() / ".." / "gpus.yaml").lexically_normal().string();
  if (!std::ifstream(catalog_file))
    root.child("gpu").fail("cannot open the GPU catalog '" + catalog_file + "' (expected beside the clusters folder)");
  s.gpu = load_gpu_catalog(catalog_file).find_or_fail(root.child("gpu"));
}

void read_parallel(const YamlField& f, ScenarioSpec& s) {
  f.expect_keys(kParallelFields);
  s.layout.tp = read_int(f.child("tp"));
  s.layout.pp = read_int(f.child("pp"));
  s.layout.dp = read_int(f.child("dp"));
  if (auto v = f.find("virtual_stages")) s.virtual_stages = read_int(*v);
  if (auto sp = f.find("sequence_parallel")) s.sequence_parallel = sp->as_bool();
  if (auto d = f.find("distributed_optimizer")) s.distributed_optimizer = d->as_bool();
  if (auto o = f.find("order")) {
    const auto dims = parse_order(o->as_string());
    if (dims.empty()) o->fail("expected an order of tp, dp and pp such as tp-dp-pp, got '" + o->as_string() + "'");
    std::copy(dims.begin(), dims.end(), s.layout.order.begin());
  }
}

/// The layout against the GPU count and the model's shape.
void check_layout(const YamlField& f, const ScenarioSpec& s, int gpus) {
  const ParallelLayout& l = s.layout;
  // Divisions, not a product, so huge factors cannot overflow.
  if (gpus % l.tp != 0 || gpus / l.tp % l.pp != 0 || gpus / l.tp / l.pp != l.dp)
    f.fail("expected tp x pp x dp to equal gpus (" + std::to_string(gpus) + "), got " + std::to_string(l.tp) + " x " +
           std::to_string(l.pp) + " x " + std::to_string(l.dp) + " = " + product(l.tp, l.pp, l.dp));
  const ModelSpec& m = s.model;
  const std::string model = " of " + m.name + " (" + m.file + ")";
  if (m.layers % l.pp != 0)
    f.child("pp").fail("expected a divisor of the " + std::to_string(m.layers) + " layers" + model);
  if (m.heads % l.tp != 0)
    f.child("tp").fail("expected a divisor of the " + std::to_string(m.heads) + " attention heads" + model);
  // GQA: with tp > kv_heads each KV head is replicated on tp / kv_heads ranks (Megatron-Core does
  // the same), which needs tp to be a multiple of kv_heads; otherwise each rank holds kv_heads / tp.
  const bool kv_ok = l.tp <= m.kv_heads ? m.kv_heads % l.tp == 0 : l.tp % m.kv_heads == 0;
  if (!kv_ok)
    f.child("tp").fail("expected a divisor or a multiple of the " + std::to_string(m.kv_heads) + " KV heads" + model);
}

void read_batch(const YamlField& root, ScenarioSpec& s) {
  YamlField global = root.child("global_batch");
  s.global_batch = read_int(global);
  s.microbatch = read_int(root.child("microbatch"));
  const long per_step = static_cast<long>(s.microbatch) * s.layout.dp;
  if (s.global_batch % per_step != 0)
    global.fail("expected a multiple of microbatch x dp (" + std::to_string(s.microbatch) + " x " +
                std::to_string(s.layout.dp) + " = " + std::to_string(per_step) + ")");
}

/// The schedule, and the layer split it implies. A schedule with a fixed chunk count (zb-v,
/// dualpipe) sets virtual_stages when the scenario leaves it out.
void read_schedule(const YamlField& f, const YamlField& parallel, ScenarioSpec& s) {
  s.schedule_name = f.as_string();
  s.schedule = find_schedule(s.schedule_name);
  if (!s.schedule)
    f.fail("expected a pipeline schedule, one of: " + schedule_names() + "; got '" + s.schedule_name + "'");
  const bool chunks_given = parallel.find("virtual_stages").has_value();
  if (s.schedule->chunks_required() > 0 && !chunks_given) s.virtual_stages = s.schedule->chunks_required();
  const ScheduleShape shape = s.schedule_shape();
  if (auto why = s.schedule->not_applicable(shape))
    f.fail(s.schedule_name + " cannot run pp = " + std::to_string(shape.stages) + ", " +
           std::to_string(shape.microbatches) + " microbatches, virtual_stages = " + std::to_string(shape.chunks) +
           ": " + *why);
  const int stages = s.schedule->model_stages(shape);
  if (s.model.layers % stages != 0) {
    const std::string layers = " to divide the " + std::to_string(s.model.layers) + " layers of " + s.model.name + " (" + s.model.file + ")";
    if (s.schedule->chunks_required() > 0 && !chunks_given)
      f.fail(s.schedule_name + " splits the model into " + std::to_string(stages) + " stages (pp " +
             std::to_string(shape.stages) + ", " + std::to_string(shape.chunks) + " chunks per rank); expected that" + layers);
    parallel.child("virtual_stages").fail("expected pp x virtual_stages (" + product(shape.stages, shape.chunks) + ")" + layers);
  }
}

Recompute read_recompute(const YamlField& f) {
  const std::string mode = f.as_choice({"none", "selective", "full"});
  return mode == "none" ? Recompute::none : mode == "selective" ? Recompute::selective : Recompute::full;
}

}  // namespace

std::vector<std::string> scenario_fields() {
  std::vector<std::string> out;
  for (const char* f : kFields)
    if (std::string(f) != "parallel") out.push_back(f);
  for (const char* f : kParallelFields) out.push_back(std::string("parallel.") + f);
  return out;
}

ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  const YamlField root = YamlField::load_file(path);
  for (const auto& o : overrides) apply_override(root, o);
  root.expect_keys(kFields);
  if (auto d = root.find("description")) d->as_string();  // free text, but text

  ScenarioSpec s;
  s.file = path;
  s.name = root.child("name").as_string();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  read_cluster(dir, root.child("cluster"), s);
  s.model = load_model_spec(resolve(dir, root.child("model")));
  // Their parameters and FLOPs are counted (model_math.hpp), but the iteration plan has no expert
  // or latent-attention ops yet: refuse rather than time them as a dense model.
  if (s.model.moe || s.model.mla)
    root.child("model").fail("expected a dense model with standard attention; " + s.model.name +
                             " has MoE layers or MLA, which training iterations do not simulate yet");

  YamlField gpus_field = root.child("gpus");
  const int gpus = read_int(gpus_field);
  if (gpus > s.cluster.gpu_count())
    gpus_field.fail("expected at most the " + std::to_string(s.cluster.gpu_count()) + " GPUs of " + s.cluster.name +
                    " (" + s.cluster_file + ")");
  YamlField parallel = root.child("parallel");
  read_parallel(parallel, s);
  check_layout(parallel, s, gpus);
  read_batch(root, s);
  read_schedule(root.child("schedule"), parallel, s);

  YamlField precision = root.child("precision");
  s.precision = precision.as_string();
  s.gpu.peak_flops_or_fail(s.precision, precision);
  s.recompute = read_recompute(root.child("recompute"));
  if (auto a = root.find("attention"))
    s.attention = a->as_choice({"flash", "unfused"}) == "flash" ? AttentionKernel::flash : AttentionKernel::unfused;
  return s;
}

}  // namespace clustersim
