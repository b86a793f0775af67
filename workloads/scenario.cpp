#include "workloads/scenario.hpp"

#include "workloads/scenario_node.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>

#include "collectives/collective.hpp"
#include "topologies/cluster.hpp"
#include "topologies/cluster_overrides.hpp"
#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"
#include "workloads/field_override.hpp"
#include "workloads/key_aliases.hpp"
#include "workloads/stage_gpus.hpp"
#include "workloads/stage_split.hpp"

namespace clustersim {

namespace {

/// What collectives.algorithm may pin: the algorithms that run an iteration's collectives
/// (all-reduce, all-gather, reduce-scatter), by name.
std::vector<std::string> pinnable_algorithms() {
  std::vector<std::string> out;
  for (const Algorithm* a : all_algorithms())
    if (a->supports(Op::all_reduce) || a->supports(Op::all_gather) || a->supports(Op::reduce_scatter))
      out.push_back(a->name());
  return out;
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The scenario schema, read by both expect_keys and --set so the two cannot drift apart.
// Defaults (Megatron-LM's): virtual_stages 1, sequence_parallel false, distributed_optimizer false,
// order tp-dp-pp; attention flash. Everything else is required.
const std::initializer_list<const char*> kFields = {
    "name", "description", "cluster", "model", "gpus", "parallel", "schedule", "global_batch", "microbatch",
    "precision", "recompute", "attention", "moe", "calibration", "variability", "collectives", "catalog", "reliability"};
const std::initializer_list<const char*> kParallelFields = {
    "tp", "pp", "dp", "ep", "cp", "cp_comm", "virtual_stages", "stage_layers", "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split", "sequence_parallel", "distributed_optimizer", "zero_stage", "reshard_after_forward", "overlap_grad_reduce", "grad_reduce_dtype", "optimizer_dtype", "fp8_param_gather", "overlap_param_gather", "overlap_p2p_comm", "overlap_tp_backward", "gradient_accumulation_fusion", "order", "stage_gpus"};
const std::initializer_list<const char*> kMoeFields = {"routing", "hot_factor", "seed", "dispatch"};
const std::initializer_list<const char*> kCollectivesFields = {"algorithm"};

// Bounds far above any real run that keep the schedule's tables and the simulation finite: a
// global batch of 1M sequences (Llama 3 trained with 16M tokens, 2K sequences); every pipeline
// (un)chunked step of every microbatch is an engine event, so their product is bounded too.
constexpr long kMaxParallel = 1L << 22;       // the clusters' GPU bound
constexpr long kMaxGlobalBatch = 1L << 20;
constexpr long kMaxPipelineSteps = 1L << 22;  // pp x virtual_stages x microbatches
constexpr double kMaxHotFactor = 1e3;

int read_int(const YamlField& f, long max = kMaxParallel) { return static_cast<int>(f.as_integer_in(1, max)); }

/// A product of counts for messages; a double keeps it exact far past any real cluster, never wraps.
std::string product(double a, double b, double c = 1) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(0) << a * b * c;
  return out.str();
}

/// A path written in the scenario, relative to the scenario's folder unless absolute. A file that
/// cannot be opened is an error at the field that names it, not in the missing file.
std::string resolve(const std::filesystem::path& dir, const YamlField& field) {
  std::filesystem::path p = field.as_string();
  if (p.is_relative()) p = dir / p;
  const std::string out = p.lexically_normal().string();
  std::optional<std::string> why = input_file_problem(out);
  if (!why && !std::filesystem::is_regular_file(out)) why = "not a regular file";
  if (why) field.fail("cannot open '" + out + "' (" + *why + "; paths are relative to the scenario file)");
  return out;
}

/// gpus.yaml beside the cluster file, else in the folder above it (the shipped layout); the second
/// when neither exists, for the error to name.
std::string catalog_file_of(const std::string& cluster_file) {
  const std::filesystem::path dir = std::filesystem::path(cluster_file).parent_path();
  const std::string beside = (dir / "gpus.yaml").lexically_normal().string();
  if (std::filesystem::is_regular_file(beside)) return beside;
  return (dir / ".." / "gpus.yaml").lexically_normal().string();
}

/// The cluster, with the command line's cluster.* overrides applied first, and its GPU from the
/// scenario's `catalog:` or else catalog_file_of(the cluster file).
void read_cluster(const std::filesystem::path& dir, const YamlField& field, ScenarioSpec& s,
                  const std::vector<std::string>& overrides, const std::optional<YamlField>& catalog) {
  s.cluster_file = resolve(dir, field);
  const YamlField root = YamlField::load_file(s.cluster_file);
  s.cluster = parse_cluster_spec_with(root, overrides);
  s.catalog_file = catalog ? resolve(dir, *catalog) : catalog_file_of(s.cluster_file);
  if (!std::ifstream(s.catalog_file))
    root.child("gpu").fail("cannot open the GPU catalog '" + s.catalog_file +
                           "' (expected gpus.yaml beside the cluster file or in the folder above it, or the "
                           "scenario's catalog: / --catalog)");
  const GpuCatalog known = load_gpu_catalog(s.catalog_file);
  s.gpu = known.find_or_fail(root.child("gpu"));
  if (auto groups = root.find("node_groups")) {
    s.node_groups = read_node_groups(*groups, s.cluster.gpu, s.cluster.fabric.nodes);
    for (std::size_t i = 0; i < s.node_groups.size(); ++i)
      if (!s.group_gpus.count(s.node_groups[i].gpu))
        s.group_gpus.emplace(s.node_groups[i].gpu, known.find_or_fail(groups->element(i).child("gpu")));
  }
}

void read_parallel(const YamlField& f, ScenarioSpec& s) {
  f.expect_keys(kParallelFields);
  // One of tp, pp and dp may be left out: derive_layout fills it in from the GPU count.
  s.layout.tp = f.find("tp") ? read_int(f.child("tp")) : 0;
  s.layout.pp = f.find("pp") ? read_int(f.child("pp")) : 0;
  s.layout.dp = f.find("dp") ? read_int(f.child("dp")) : 0;
  if (auto v = f.find("virtual_stages")) s.virtual_stages = read_int(*v);
  if (auto e = f.find("ep")) s.ep = read_int(*e);
  if (auto c = f.find("cp")) s.layout.cp = read_int(*c);
  if (auto c = f.find("cp_comm")) s.cp_all_gather = c->as_choice({"p2p", "all_gather"}) == "all_gather";
  if (auto sp = f.find("sequence_parallel")) s.sequence_parallel = sp->as_bool();
  if (auto d = f.find("distributed_optimizer")) s.distributed_optimizer = d->as_bool();
  if (auto z = f.find("zero_stage")) {
    const long stage = z->as_integer();
    if (stage < 0 || stage > 3) z->fail("expected a ZeRO stage, 0 to 3, got " + std::to_string(stage));
    if (f.find("distributed_optimizer") && s.distributed_optimizer != (stage >= 1))
      z->fail("expected a stage that agrees with distributed_optimizer: " + std::string(s.distributed_optimizer ? "true" : "false") +
              " (the distributed optimizer is ZeRO-1: stage 1 or more)");
    s.zero_stage = static_cast<int>(stage);
  } else {
    s.zero_stage = s.distributed_optimizer ? 1 : 0;
  }
  s.distributed_optimizer = s.zero_stage >= 1;
  if (auto r = f.find("reshard_after_forward")) {
    if (s.zero_stage != 3) r->fail("expected only with zero_stage 3 (parameters are sharded only there)");
    s.reshard_after_forward = r->as_bool();
  }
  if (auto o = f.find("overlap_p2p_comm")) s.overlap_p2p_comm = o->as_bool();
  if (auto o = f.find("overlap_tp_backward")) s.overlap_tp_backward = o->as_bool();
  if (auto o = f.find("gradient_accumulation_fusion")) s.gradient_accumulation_fusion = o->as_bool();
  if (auto o = f.find("overlap_grad_reduce")) {
    s.overlap_grad_reduce = o->as_bool();
    if (!s.overlap_grad_reduce && s.zero_stage >= 2)
      o->fail("expected true with zero_stage " + std::to_string(s.zero_stage) +
              ": ZeRO-2 and 3 reduce-scatter each layer's gradients during the backward");
  }
  if (auto g = f.find("grad_reduce_dtype"))
    s.grad_reduce_dtype = g->as_choice({"fp32", "bf16", "fp16"});
  if (auto o = f.find("optimizer_dtype")) s.optimizer_dtype = o->as_choice({"fp32", "bf16"});
  if (auto g = f.find("fp8_param_gather")) {
    s.fp8_param_gather = g->as_bool();
    if (s.fp8_param_gather && !s.distributed_optimizer)
      g->fail("expected true only with the distributed optimizer or ZeRO (nothing gathers parameters otherwise)");
  }
  if (auto g = f.find("overlap_param_gather")) {
    s.overlap_param_gather = g->as_bool();
    if (s.overlap_param_gather && (!s.distributed_optimizer || s.zero_stage >= 3))
      g->fail("expected true only with the distributed optimizer, ZeRO 1 or 2 (ZeRO-3 gathers each layer when it runs)");
  }
  if (auto o = f.find("order")) {
    const auto dims = parse_order(o->as_string());
    if (dims.empty())
      o->fail("expected an order of tp, cp, dp and pp such as tp-cp-dp-pp (cp may be left out), got '" + o->as_string() + "'");
    std::copy(dims.begin(), dims.end(), s.layout.order.begin());
  }
}

/// Fills in the one of tp, pp and dp that was left out (0) as gpus / (the others x cp). With
/// `rederive_dp` (the command line changed tp, pp, cp or gpus and left dp alone) the file's dp is
/// derived again, so `--set parallel.tp=4` keeps the GPU count. A layout the GPU count cannot hold
/// is an error at parallel naming the product that must divide it.
void derive_layout(const YamlField& f, ScenarioSpec& s, int gpus, bool rederive_dp) {
  ParallelLayout& l = s.layout;
  if (rederive_dp && l.tp > 0 && l.pp > 0) l.dp = 0;
  const std::pair<const char*, int*> dims[] = {{"tp", &l.tp}, {"pp", &l.pp}, {"dp", &l.dp}};
  std::string missing;
  double known = l.cp;  // a double: three factors of up to 2^22 overflow a long
  int* derived = nullptr;
  for (const auto& [name, value] : dims) {
    if (*value == 0) {
      missing += (missing.empty() ? "" : ", ") + std::string(name);
      derived = value;
    } else {
      known *= *value;
    }
  }
  if (!derived) return;
  if (missing.find(',') != std::string::npos)
    f.fail("expected at most one of tp, pp and dp left out (it is derived from gpus); " + missing + " are missing");
  const std::string others = std::string(derived == &l.tp ? "pp x dp" : derived == &l.pp ? "tp x dp" : "tp x pp") +
                             (l.cp > 1 ? " x cp" : "");
  const std::string name = derived == &l.tp ? "tp" : derived == &l.pp ? "pp" : "dp";
  if (known > gpus || gpus % static_cast<long>(known) != 0)
    f.fail("expected " + others + " (" + product(known, 1) + ") to divide gpus (" + std::to_string(gpus) + "), so that " +
           name + " can be derived from it");
  *derived = static_cast<int>(gpus / static_cast<long>(known));
}

/// The field a layout dimension was written at, or the parallel mapping when it was derived.
YamlField dimension(const YamlField& f, const char* name) {
  if (auto d = f.find(name)) return *d;
  return f;
}

/// The layout against the GPU count and the model's shape (layout_problem), failed at its field:
/// where a dimension was written, or the parallel mapping when it was derived.
void check_layout(const YamlField& f, const ScenarioSpec& s, int gpus) {
  if (auto p = layout_problem(s, gpus, stage_split_given(f))) (p->field.empty() ? f : dimension(f, p->field.c_str())).fail(p->expected);
}

void read_batch(const YamlField& root, ScenarioSpec& s) {
  YamlField global = root.child("global_batch");
  s.global_batch = read_int(global, kMaxGlobalBatch);
  s.microbatch = read_int(root.child("microbatch"), s.global_batch);
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
  if (!s.overlap_p2p_comm && !s.schedule->runs_blocking_p2p()) {
    std::string megatron;
    for (const Schedule* other : all_schedules())
      if (other->runs_blocking_p2p()) megatron += (megatron.empty() ? "" : ", ") + other->name();
    parallel.child("overlap_p2p_comm")
        .fail("expected true with " + s.schedule_name + ": blocking send/recv is modelled for Megatron-LM's own schedules (" +
              megatron + ")");
  }
  if (s.schedule->chunks_required() > 0 && !chunks_given) s.virtual_stages = s.schedule->chunks_required();
  const ScheduleShape shape = s.schedule_shape();
  const double steps = double(shape.stages) * shape.chunks * shape.microbatches;
  if (steps > kMaxPipelineSteps)
    (chunks_given ? parallel.child("virtual_stages") : f)
        .fail("expected at most " + std::to_string(kMaxPipelineSteps) + " pipeline steps (pp x virtual_stages x microbatches), got " +
              product(shape.stages, shape.chunks, shape.microbatches));
  if (auto why = s.schedule->not_applicable(shape))
    f.fail(s.schedule_name + " cannot run pp = " + std::to_string(shape.stages) + ", " +
           std::to_string(shape.microbatches) + " microbatches, virtual_stages = " + std::to_string(shape.chunks) +
           ": " + *why);
  const int stages = s.schedule->model_stages(shape);
  // An encoder on a stage of its own takes the first model stage; the language model's layers
  // fill the others.
  const int encoder_stages = s.first_language_stage();
  if (encoder_stages > 0 && stages < 2)
    f.fail("an encoder with placement own_stage needs at least 2 model stages; " + s.schedule_name + " has " +
           std::to_string(stages));
  s.stage_layers = split_stage_layers(parallel, f, s);
}

/// Expert parallelism and routing against the model and the layout.
void read_moe(const YamlField& root, const YamlField& parallel, ScenarioSpec& s) {
  const std::optional<YamlField> block = root.find("moe");
  const std::string model = s.model.name + " (" + s.model.file + ")";
  if (!s.model.moe) {
    if (s.ep != 1) parallel.child("ep").fail("expected 1: " + model + " has no MoE layers");
    if (block) block->fail("expected no moe block: " + model + " has no MoE layers");
    return;
  }
  const MoeSpec& moe = *s.model.moe;
  const YamlField ep_field = parallel.find("ep") ? parallel.child("ep") : parallel;
  if (s.ep > max_all_to_all_ranks())
    ep_field.fail("expected at most " + std::to_string(max_all_to_all_ranks()) +
                  " expert-parallel ranks: their all-to-all is ep x (ep - 1) flows, more than the engine simulates in reasonable time");
  if (s.layout.dp % s.ep != 0)
    ep_field.fail("expected ep to divide dp (" + std::to_string(s.layout.dp) +
                  "): expert parallelism is carved out of data parallelism");
  if (moe.routed_experts % s.ep != 0)
    ep_field.fail(
        "expected a divisor of the " + std::to_string(moe.routed_experts) + " routed experts of " + model + ", got " +
        std::to_string(s.ep));
  if (block) {
    block->expect_keys(kMoeFields);
    if (auto r = block->find("routing")) s.moe.routing = *parse_routing_model(r->as_choice({"uniform", "skewed", "random"}));
    if (auto h = block->find("hot_factor")) s.moe.hot_factor = h->as_number_in(1e-3, kMaxHotFactor);
    if (auto seed = block->find("seed"))
      s.moe.seed = static_cast<std::uint64_t>(seed->as_integer_in(0, std::numeric_limits<long>::max()));
    if (auto d = block->find("dispatch")) s.moe.deepep = d->as_choice({"all_to_all", "deepep"}) == "deepep";
  }
  const MoeRoutingSpec routing = s.moe_routing(1);
  const int nodes = (s.ep + routing.ranks_per_node - 1) / routing.ranks_per_node;
  if (moe.node_limit && *moe.node_limit > nodes)
    ep_field.fail(
        "expected the " + std::to_string(s.ep) + " expert-parallel ranks to span at least the " +
        std::to_string(*moe.node_limit) + " nodes " + model + " routes a token to; they span " + std::to_string(nodes));
  if (auto e = check_moe_routing(routing)) {
    const bool in_block = block && block->find(e->field);
    (in_block ? block->child(e->field) : block ? *block : parallel).fail(e->field + ": " + e->expected);
  }
}

/// `recompute:` none, selective or full, or `{modules: [...]}` naming what to recompute by module
/// (memory_model.hpp's RecomputeModule, Megatron-Core's spelling). A module the model has no part
/// for (mla_up_proj without MLA, moe_act, experts or moe without MoE layers, shared_experts
/// without shared experts, mlp without dense layers) is an error rather than
/// silently nothing: the user expects it to save memory.
void read_recompute(const YamlField& f, ScenarioSpec& s) {
  if (!f.is_map()) {
    const std::string mode = f.as_string();
    if (mode != "none" && mode != "selective" && mode != "full")
      f.fail("expected one of: none, selective, full, or {modules: [...]}; got '" + mode + "'");
    s.recompute = mode == "none" ? Recompute::none : mode == "selective" ? Recompute::selective : Recompute::full;
    return;
  }
  f.expect_keys({"modules"});
  const YamlField list = f.child("modules");
  std::string names;
  for (const auto& [name, module] : recompute_module_names()) names += (names.empty() ? "" : ", ") + name;
  if (!list.is_sequence() || list.size() == 0)
    list.fail("expected a list of modules to recompute, from: " + names + " (or recompute: none)");
  s.recompute = Recompute::none;
  const std::string model = s.model.name + " (" + s.model.file + ")";
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YamlField item = list.element(i);
    const std::string text = item.as_string();
    const auto& all = recompute_module_names();
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& entry) { return entry.first == text; });
    if (it == all.end()) item.fail("expected a module, one of: " + names + "; got '" + text + "'");
    if (s.recompute_modules.has(it->second)) item.fail("expected each module once; '" + text + "' is listed twice");
    if (it->second == RecomputeModule::mla_up_proj && !s.model.mla)
      item.fail("expected a module " + model + " has: mla_up_proj needs multi-head latent attention");
    const bool moe_module = it->second == RecomputeModule::moe_act || it->second == RecomputeModule::experts ||
                            it->second == RecomputeModule::moe || it->second == RecomputeModule::shared_experts;
    if (moe_module && !s.model.moe) item.fail("expected a module " + model + " has: " + text + " needs MoE layers");
    if (it->second == RecomputeModule::shared_experts && s.model.moe && s.model.moe->shared_experts == 0)
      item.fail("expected a module " + model + " has: shared_experts needs shared experts (moe.shared_experts is 0)");
    if (it->second == RecomputeModule::mlp && s.model.moe_layer_count() == s.model.layers)
      item.fail("expected a module " + model + " has: mlp recomputes dense layers' MLPs and every layer is MoE (moe recomputes those)");
    s.recompute_modules.add(it->second);
  }
}

}  // namespace

std::optional<LayoutProblem> layout_problem(const ScenarioSpec& s, int gpus, bool stage_split_given) {
  const ParallelLayout& l = s.layout;
  // Divisions, not a product, so huge factors cannot overflow.
  if (l.cp == 1 && (gpus % l.tp != 0 || gpus / l.tp % l.pp != 0 || gpus / l.tp / l.pp != l.dp))
    return LayoutProblem{"", "expected tp x pp x dp to equal gpus (" + std::to_string(gpus) + "), got " + std::to_string(l.tp) + " x " +
           std::to_string(l.pp) + " x " + std::to_string(l.dp) + " = " + product(l.tp, l.pp, l.dp)};
  if (l.cp > 1 && (gpus % l.tp != 0 || gpus / l.tp % l.cp != 0 || gpus / l.tp / l.cp % l.pp != 0 ||
                   gpus / l.tp / l.cp / l.pp != l.dp))
    return LayoutProblem{"", "expected tp x cp x pp x dp to equal gpus (" + std::to_string(gpus) + "), got " + std::to_string(l.tp) +
           " x " + std::to_string(l.cp) + " x " + std::to_string(l.pp) + " x " + std::to_string(l.dp) + " = " +
           product(double(l.tp) * l.cp, l.pp, l.dp)};
  const ModelSpec& m = s.model;
  const std::string model = " of " + m.name + " (" + m.file + ")";
  if (m.encoder) {
    if (m.encoder->heads % l.tp != 0)
      return LayoutProblem{"tp", "expected a divisor of the " + std::to_string(m.encoder->heads) + " heads of the encoder " +
                         m.encoder->name + model};
    if (m.encoder->ffn_hidden % l.tp != 0)
      return LayoutProblem{"tp", "expected a divisor of the encoder's ffn_hidden (" + std::to_string(m.encoder->ffn_hidden) + ")" + model};
  }
  // Load-balanced causal sharding cuts each sequence into 2 x cp chunks and gives rank i chunks i
  // and 2cp-1-i, so every rank does the same attention work (Megatron-Core's context parallelism).
  if (l.cp > 1 && m.seq_len % (2 * l.cp) != 0)
    return LayoutProblem{"cp", "expected 2 x cp (" + std::to_string(2 * l.cp) + ") to divide the sequence length " +
                       std::to_string(m.seq_len) + model + ": balanced causal sharding cuts it into 2 x cp chunks"};
  if (!stage_split_given && s.first_language_stage() == 0 && m.layers % l.pp != 0)
    return LayoutProblem{"pp", "expected a divisor of the " + std::to_string(m.layers) + " layers" + model};
  if (m.heads % l.tp != 0)
    return LayoutProblem{"tp", "expected a divisor of the " + std::to_string(m.heads) + " attention heads" + model};
  // Megatron splits the FFN's inner dimension (and each expert's) across the TP ranks.
  if (m.ffn_hidden > 0 && m.ffn_hidden % l.tp != 0)
    return LayoutProblem{"tp", "expected a divisor of ffn_hidden (" + std::to_string(m.ffn_hidden) + ")" + model};
  if (m.moe && m.moe->expert_ffn_hidden % l.tp != 0)
    return LayoutProblem{"tp", "expected a divisor of moe.expert_ffn_hidden (" + std::to_string(m.moe->expert_ffn_hidden) + ")" + model};
  // GQA: with tp > kv_heads each KV head is replicated on tp / kv_heads ranks (Megatron-Core does
  // the same), which needs tp to be a multiple of kv_heads; otherwise each rank holds kv_heads / tp.
  const bool kv_ok = l.tp <= m.kv_heads ? m.kv_heads % l.tp == 0 : l.tp % m.kv_heads == 0;
  if (!kv_ok)
    return LayoutProblem{"tp", "expected a divisor or a multiple of the " + std::to_string(m.kv_heads) + " KV heads" + model};
  return std::nullopt;
}

int ScenarioSpec::first_layer(int stage) const {
  int layer = 0;
  for (int k = 0; k < stage; ++k) layer += stage_layers[static_cast<std::size_t>(k)];
  return layer;
}

MoeRoutingSpec ScenarioSpec::moe_routing(std::int64_t tokens_per_rank) const {
  MoeRoutingSpec r;
  r.tokens_per_rank = tokens_per_rank;
  if (model.moe) {
    r.routed_experts = model.moe->routed_experts;
    r.top_k = model.moe->top_k;
    r.node_limit = model.moe->node_limit.value_or(0);
  }
  r.ep = ep;
  const std::vector<int> gpus = ep_group();
  int same_node = 0;
  for (int g : gpus) same_node += g / cluster.node.gpus == gpus.front() / cluster.node.gpus;
  r.ranks_per_node = same_node;
  r.model = moe.routing;
  r.hot_factor = moe.hot_factor;
  r.seed = moe.seed;
  return r;
}

std::vector<int> ScenarioSpec::ep_group() const {
  std::vector<int> gpus = layout.group(layout.rank({}), Dim::dp);
  gpus.resize(static_cast<std::size_t>(ep));
  return gpus;
}

std::vector<std::string> scenario_fields() {
  std::vector<std::string> out;
  for (const char* f : kFields)
    if (std::string(f) != "parallel" && std::string(f) != "moe" && std::string(f) != "variability" &&
        std::string(f) != "collectives" && std::string(f) != "reliability")
      out.push_back(f);
  for (const char* f : kParallelFields) out.push_back(std::string("parallel.") + f);
  for (const char* f : kMoeFields) out.push_back(std::string("moe.") + f);
  for (const char* f : kCollectivesFields) out.push_back(std::string("collectives.") + f);
  out.push_back("variability.seed");  // the one scalar a user sweeps (run --repeat draws seeds in turn)
  // What goodput studies sweep: the checkpoint interval, detection and relaunch, each kind's MTBF.
  for (const char* f : {"detection_s", "relaunch_s", "checkpoint.interval_s"}) out.push_back(std::string("reliability.") + f);
  for (const char* kind : {"gpu", "node", "nic", "switch", "link", "software"})
    out.push_back(std::string("reliability.components.") + kind + ".mtbf_hours");
  return out;
}

std::string resolve_scenario_path(const std::filesystem::path& dir, const YamlField& field) { return resolve(dir, field); }

void read_scenario_cluster(const std::filesystem::path& dir, const YamlField& field, ScenarioSpec& s,
                           const std::vector<std::string>& overrides, const std::optional<YamlField>& catalog) {
  read_cluster(dir, field, s, overrides, catalog);
  s.cluster_overrides = overrides;
}

ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return load_scenario_node(YamlField::load_file(path), path, overrides);
}

ScenarioSpec load_scenario_node(const YamlField& root, const std::string& path, const std::vector<std::string>& overrides) {
  // Megatron-LM's names become ours first, so --set (in our names or theirs) then overrides them.
  apply_key_aliases(root, scenario_key_aliases());
  if (auto p = root.find("parallel")) apply_key_aliases(*p, parallel_key_aliases());
  bool layout_set = false, dp_set = false;
  std::vector<std::string> cluster_overrides;
  for (const auto& o : overrides) {
    if (is_cluster_override(o)) {
      cluster_overrides.push_back(o);
      continue;
    }
    const std::string path = apply_field_override(root, o, scenario_fields(), "scenario", canonical_scenario_path);
    layout_set |= path == "parallel.tp" || path == "parallel.pp" || path == "parallel.cp" || path == "gpus";
    dp_set |= path == "parallel.dp";
  }
  root.expect_keys(kFields);
  if (auto d = root.find("description")) d->as_string();  // free text, but text

  ScenarioSpec s;
  s.file = path;
  s.name = root.child("name").as_string();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  read_cluster(dir, root.child("cluster"), s, cluster_overrides, root.find("catalog"));
  s.cluster_overrides = cluster_overrides;
  if (auto c = root.find("calibration")) {  // the user's own measurements override the shipped values
    s.calibration = load_calibration(resolve(dir, *c));
    apply_calibration(*s.calibration, s.cluster, s.gpu, load_gpu_catalog(s.catalog_file));
  }
  s.model = load_model_spec(resolve(dir, root.child("model")));

  YamlField gpus_field = root.child("gpus");
  const int gpus = read_int(gpus_field);
  if (gpus > s.cluster.gpu_count())
    gpus_field.fail("expected at most the " + std::to_string(s.cluster.gpu_count()) + " GPUs of " + s.cluster.name +
                    " (" + s.cluster_file + ")");
  YamlField parallel = root.child("parallel");
  s.parallel_line = parallel.line();
  read_parallel(parallel, s);
  derive_layout(parallel, s, gpus, layout_set && !dp_set);
  check_layout(parallel, s, gpus);
  read_batch(root, s);
  read_schedule(root.child("schedule"), parallel, s);
  read_moe(root, parallel, s);
  if (s.sequence_parallel && s.local_tokens() % s.layout.tp != 0)
    parallel.child("sequence_parallel").fail("expected tp (" + std::to_string(s.layout.tp) + ") to divide the " +
                                             std::to_string(s.local_tokens()) + " tokens of a microbatch on a GPU (microbatch x seq_len / cp), or no sequence parallelism");
  if (s.model.encoder && s.sequence_parallel && (long(s.microbatch) * s.model.encoder->tokens) % s.layout.tp != 0)
    parallel.child("sequence_parallel").fail("expected tp (" + std::to_string(s.layout.tp) + ") to divide the encoder's " +
                                             std::to_string(s.model.encoder->tokens) + " tokens x microbatch, or no sequence parallelism");

  YamlField precision = root.child("precision");
  s.precision = precision.as_string();
  s.gpu.peak_flops_or_fail(s.precision, precision);
  for (const auto& [name, g] : s.group_gpus) g.peak_flops_or_fail(s.precision, precision);
  if (s.fp8_param_gather && !s.eight_bit_gemm_inputs())
    parallel.child("fp8_param_gather")
        .fail("expected true only under an 8-bit precision (fp8 or an MX format), not " + s.precision +
              ": only then are the weights kept in FP8");
  if (auto g = parallel.find("stage_gpus")) read_stage_gpus(*g, s);
  read_recompute(root.child("recompute"), s);
  if (auto a = root.find("attention"))
    s.attention = a->as_choice({"flash", "unfused"}) == "flash" ? AttentionKernel::flash : AttentionKernel::unfused;
  if (auto v = root.find("variability")) {
    s.variability = parse_variability(*v, s.cluster);
    // Link names are checked against the built graph here, with the rest of the input, rather than
    // after a long simulation has started: building it costs far less than any run.
    if (!s.variability.links.empty() || !s.variability.flapping.empty()) {
      Cluster cluster = build_cluster(s.cluster);
      apply_link_changes(cluster, s.variability.links);
      for (const FlappingLink& f : s.variability.flapping) links_named(cluster, f.link);
    }
  }
  if (auto r = root.find("reliability")) {
    s.reliability = parse_reliability(*r);
    // A checkpoint goes somewhere: the cluster's storage, whose bandwidth prices it.
    if (s.reliability.checkpoints && !s.cluster.storage.declared)
      r->child("checkpoint").fail("expected the cluster (" + s.cluster_file +
                                  ") to declare storage: {write_GBps, per_node_GBps, source}, where checkpoints are written");
  }
  // NCCL's tuner by default: it picks what NCCL runs, without simulating a dozen alternatives per
  // collective.
  s.nccl_tuner = true;
  if (auto c = root.find("collectives")) {
    c->expect_keys(kCollectivesFields);
    if (auto a = c->find("algorithm")) {
      const std::string name = a->as_string();
      const std::vector<std::string> pinnable = pinnable_algorithms();
      if (name == "best") s.nccl_tuner = false;
      else if (std::find(pinnable.begin(), pinnable.end(), name) != pinnable.end()) s.pinned_algorithm = name;
      else if (name != "nccl")
        a->fail("expected nccl, best or an algorithm to pin (" + comma_list(pinnable) + "); got '" + name + "'");
    }
  }
  return s;
}

}  // namespace clustersim
