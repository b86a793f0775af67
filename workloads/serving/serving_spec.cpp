#include "workloads/serving/serving_spec.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/field_override.hpp"
#include "workloads/scenario.hpp"
#include "workloads/serving/serving_choices.hpp"

namespace clustersim {

namespace {

// The schema, read by both expect_keys and --set so the two cannot drift apart. Defaults are vLLM's
// (block 16 tokens, gpu_memory_utilization 0.9, max_num_seqs 256, chunked prefill, decode first).
const std::initializer_list<const char*> kFields = {"name", "description", "cluster", "model", "precision", "catalog", "serving"};
const std::initializer_list<const char*> kServingFields = {"replicas", "parallel", "kv_cache", "scheduler", "router", "requests",
                                                           "slo", "disaggregated", "speculative", "host", "series_interval_s", "gpu"};
const std::initializer_list<const char*> kParallelFields = {"tp", "pp", "ep", "dp_attention", "redundant_experts", "dispatch", "two_batch_overlap"};
const std::initializer_list<const char*> kKvFields = {"dtype", "block_tokens", "memory_fraction", "swap_space_GiB", "prefix_caching"};
const std::initializer_list<const char*> kSchedulerFields = {"max_batch_tokens", "max_batch_requests", "chunked_prefill", "priority",
                                                             "preemption", "batches_in_flight"};
const std::initializer_list<const char*> kRequestFields = {"arrival", "rate_per_s", "cv", "duration_s", "prompt_tokens",
                                                           "output_tokens", "seed", "trace", "time_scale", "shared_prefix"};
const std::initializer_list<const char*> kPrefixFields = {"tokens", "count"};
const std::initializer_list<const char*> kSloFields = {"ttft", "tpot"};
const std::initializer_list<const char*> kDisaggFields = {"prefill_replicas", "decode_replicas", "prefill_gpu", "decode_gpu"};
const std::initializer_list<const char*> kHostFields = {"iteration", "per_request", "overlap"};
const std::initializer_list<const char*> kSpecFields = {"method", "tokens", "acceptance_rate", "draft_model"};

// Bounds far above any real deployment that keep every count and time finite.
constexpr long kMaxReplicas = 100000;
constexpr long kMaxParallel = 1024;
constexpr long kMaxTokens = 1L << 24;     // one request's prompt or output
constexpr double kMaxRequests = 1e8;      // rate x duration
constexpr double kMaxDuration_s = 1e7;    // about four months of traffic

void add_fields(std::vector<std::string>& out, const std::string& prefix, std::initializer_list<const char*> fields) {
  for (const char* f : fields) out.push_back(prefix + f);
}

TokenCount read_tokens(const YamlField& f) {
  if (!f.is_map()) {
    const long n = f.as_integer_in(1, kMaxTokens, "tokens");
    return {n, n};
  }
  f.expect_keys({"min", "max"});
  TokenCount t{f.child("min").as_integer_in(1, kMaxTokens, "tokens"), f.child("max").as_integer_in(1, kMaxTokens, "tokens")};
  if (t.max < t.min) f.child("max").fail("expected max at least min (" + std::to_string(t.min) + ")");
  return t;
}

void read_parallel(const YamlField& f, ServingSpec& s) {
  f.expect_keys(kParallelFields);
  s.parallel_line = f.line();
  ServingParallel& p = s.parallel;
  if (auto v = f.find("tp")) p.tp = static_cast<int>(v->as_integer_in(1, kMaxParallel));
  if (auto v = f.find("pp")) p.pp = static_cast<int>(v->as_integer_in(1, kMaxParallel));
  if (auto v = f.find("ep")) p.ep = static_cast<int>(v->as_integer_in(1, kMaxParallel));
  if (auto v = f.find("redundant_experts")) p.redundant_experts = static_cast<int>(v->as_integer_in(0, 1 << 20, "experts"));
  if (auto v = f.find("dp_attention")) p.dp_attention = static_cast<int>(v->as_integer_in(1, kMaxParallel, "attention ranks"));
  const ModelSpec& m = s.model;
  if (m.heads % p.tp != 0)
    f.child("tp").fail("expected tp to divide the model's " + std::to_string(m.heads) + " heads");
  if (!m.mla && !(m.kv_heads % p.tp == 0 || p.tp % m.kv_heads == 0))
    f.child("tp").fail("expected tp to divide the model's " + std::to_string(m.kv_heads) + " KV heads or be a multiple of them");
  if (m.ffn_hidden > 0 && m.ffn_hidden % p.tp != 0)
    f.child("tp").fail("expected tp to divide the model's ffn_hidden " + std::to_string(m.ffn_hidden));
  if (p.pp > m.layers) f.child("pp").fail("expected at most one pipeline stage per layer (" + std::to_string(m.layers) + ")");
  const int d = p.dp_attention;
  if (d > 1) {
    const YamlField v = f.child("dp_attention");
    if (!m.moe) v.fail("expected dp_attention 1: the model has no experts (attention ranks that share no experts are replicas: serving.replicas)");
    if (p.pp > 1) v.fail("expected dp_attention 1 with pp " + std::to_string(p.pp) + " (attention ranks step together through one stage)");
    if (p.ep % d != 0 || (p.tp * d) % p.ep != 0)
      f.child("ep").fail("expected ep to be a multiple of dp_attention (" + std::to_string(d) + ") that divides dp_attention x tp (" +
                         std::to_string(p.tp * d) + "): the experts are split over every attention rank's GPUs");
  }
  if (p.ep > 1) {
    if (!m.moe) f.child("ep").fail("expected ep 1: the model has no experts");
    if (d == 1 && p.tp % p.ep != 0)
      f.child("ep").fail("expected ep to divide tp (" + std::to_string(p.tp) + "): experts are split over the tensor-parallel ranks");
    const int copies = m.moe->routed_experts + p.redundant_experts;
    if (copies % p.ep != 0)
      f.child("ep").fail("expected ep to divide the " + std::to_string(m.moe->routed_experts) + " routed experts" +
                         (p.redundant_experts > 0 ? " and " + std::to_string(p.redundant_experts) + " redundant ones (" + std::to_string(copies) + ")" : ""));
  }
  if (auto v = f.find("dispatch")) {
    p.deepep = v->as_choice(serving_choice_names("parallel.dispatch")) == "deepep";
    if (p.ep == 1) v->fail("expected dispatch only with ep > 1 (there is no expert all-to-all)");
  }
  if (auto v = f.find("two_batch_overlap")) {
    p.two_batch_overlap = v->as_bool();
    if (p.two_batch_overlap && d == 1) v->fail("expected two_batch_overlap only with dp_attention > 1 (a rank's halves overlap their all-to-alls)");
  }
  if (p.redundant_experts > 0 && p.ep == 1)
    f.child("redundant_experts").fail("expected redundant_experts 0 with ep 1 (copies of experts are spread over expert-parallel ranks)");
  if (m.moe && m.moe->expert_ffn_hidden % p.expert_tp() != 0)
    f.child("tp").fail(std::string(d > 1 ? "expected dp_attention x tp / ep" : "expected tp / ep") + " to divide the experts' expert_ffn_hidden " +
                       std::to_string(m.moe->expert_ffn_hidden));
}

void read_kv(const YamlField& f, ServingSpec& s) {
  f.expect_keys(kKvFields);
  if (auto v = f.find("dtype")) {
    s.kv.dtype = v->as_choice(serving_choice_names("kv_cache.dtype"));
    s.kv.dtype_bytes = s.kv.dtype == "fp8" ? 1 : 2;
  }
  if (auto v = f.find("block_tokens")) s.kv.block_tokens = static_cast<int>(v->as_integer_in(1, 1024, "tokens"));
  if (auto v = f.find("memory_fraction")) s.kv.memory_fraction = v->as_number_in(0.01, 1);
  if (auto v = f.find("swap_space_GiB")) s.kv.swap_space_GiB = v->as_number_in(0, 1e5, "GiB");
  if (auto v = f.find("prefix_caching")) s.kv.prefix_caching = v->as_bool();
}

void read_scheduler(const YamlField& f, ServingSpec& s) {
  f.expect_keys(kSchedulerFields);
  if (auto v = f.find("max_batch_tokens")) s.scheduler.max_batch_tokens = v->as_integer_in(1, 1L << 20, "tokens");
  if (auto v = f.find("max_batch_requests")) s.scheduler.max_batch_requests = v->as_integer_in(1, 65536, "requests");
  if (auto v = f.find("chunked_prefill")) s.scheduler.chunked_prefill = v->as_bool();
  if (auto v = f.find("priority"))
    s.scheduler.priority = v->as_choice(serving_choice_names("scheduler.priority")) == "decode" ? SchedulePriority::decode : SchedulePriority::prefill;
  if (auto v = f.find("preemption"))
    s.scheduler.preemption = v->as_choice(serving_choice_names("scheduler.preemption")) == "swap" ? PreemptionMode::swap : PreemptionMode::recompute;
  const int pp = s.parallel.pp;
  if (auto v = f.find("batches_in_flight"))
    s.scheduler.batches_in_flight = static_cast<int>(
        v->as_integer_in(1, pp, "batches, at most one a pipeline stage (pp " + std::to_string(pp) + ")"));
}

void read_requests(const std::filesystem::path& dir, const YamlField& f, ServingSpec& s) {
  f.expect_keys(kRequestFields);
  RequestStreamSpec& r = s.requests;
  r.line = f.line();
  const std::string arrival = f.child("arrival").as_choice(serving_choice_names("requests.arrival"));
  r.arrival = arrival == "poisson" ? ArrivalKind::poisson : arrival == "gamma" ? ArrivalKind::gamma : ArrivalKind::trace;
  if (auto v = f.find("seed")) r.seed = static_cast<std::uint64_t>(v->as_integer_in(0, 1L << 62));
  if (r.arrival == ArrivalKind::trace) {
    for (const char* k : {"rate_per_s", "cv", "duration_s", "prompt_tokens", "output_tokens", "shared_prefix"})
      if (auto v = f.find(k)) v->fail("expected no " + std::string(k) + " with arrival: trace (the trace gives each request's)");
    r.trace_file = resolve_scenario_path(dir, f.child("trace"));
    if (auto v = f.find("time_scale")) r.time_scale = v->as_number_in(1e-6, 1e6);
    return;
  }
  if (auto v = f.find("trace")) v->fail("expected a trace only with arrival: trace");
  if (auto v = f.find("time_scale")) v->fail("expected time_scale only with arrival: trace (poisson and gamma arrivals set rate_per_s)");
  r.rate_per_s = f.child("rate_per_s").as_number_in(1e-6, 1e6, "requests/s");
  if (auto v = f.find("cv")) {
    if (r.arrival != ArrivalKind::gamma) v->fail("expected cv only with arrival: gamma (Poisson arrivals have cv 1)");
    r.cv = v->as_number_in(0.01, 100);
  }
  const YamlField d = f.child("duration_s");
  r.duration_s = d.as_number_in(1e-3, kMaxDuration_s, "s");
  if (r.rate_per_s * r.duration_s > kMaxRequests)
    d.fail("expected rate_per_s x duration_s at most 1e8 requests");
  r.prompt_tokens = read_tokens(f.child("prompt_tokens"));
  r.output_tokens = read_tokens(f.child("output_tokens"));
  if (auto p = f.find("shared_prefix")) {
    p->expect_keys(kPrefixFields);
    r.shared_prefix.tokens = p->child("tokens").as_integer_in(1, kMaxTokens, "tokens");
    if (auto c = p->find("count")) r.shared_prefix.count = static_cast<int>(c->as_integer_in(1, 1000000, "prefixes"));
  }
}

void read_slo(const YamlField& f, ServingSpec& s) {
  f.expect_keys(kSloFields);
  s.slo.declared = true;
  if (auto v = f.find("ttft")) s.slo.ttft_s = parse_duration(*v);
  if (auto v = f.find("tpot")) s.slo.tpot_s = parse_duration(*v);
  if (s.slo.ttft_s == 0 && s.slo.tpot_s == 0) f.fail("expected a ttft or tpot target (\"500ms\") or no slo");
}

void read_host(const YamlField& f, ServingSpec& s) {
  f.expect_keys(kHostFields);
  s.host.declared = true;
  if (auto v = f.find("iteration")) s.host.iteration_s = parse_duration(*v);
  if (auto v = f.find("per_request")) s.host.per_request_s = parse_duration(*v);
  if (auto v = f.find("overlap")) s.host.overlapped = v->as_bool();
  if (s.host.iteration_s == 0 && s.host.per_request_s == 0)
    f.fail("expected an iteration or per_request time (\"4ms\", \"0.4ms\") or no host");
}

void read_speculative(const std::filesystem::path& dir, const YamlField& f, ServingSpec& s) {
  f.expect_keys(kSpecFields);
  SpeculativeSpec& sp = s.speculative;
  sp.method = f.child("method").as_choice(serving_choice_names("speculative.method")) == "draft" ? SpeculativeMethod::draft : SpeculativeMethod::mtp;
  sp.tokens = static_cast<int>(f.child("tokens").as_integer_in(1, 16, "tokens"));
  const YamlField rate = f.child("acceptance_rate");
  if (rate.is_sequence()) {
    if (rate.size() != std::size_t(sp.tokens))
      rate.fail("expected one acceptance rate per proposed token (" + std::to_string(sp.tokens) + "), got " + std::to_string(rate.size()));
    for (std::size_t i = 0; i < rate.size(); ++i) sp.acceptance_by_position.push_back(rate.element(i).as_number_in(0, 1));
    sp.acceptance_rate = sp.acceptance_by_position.front();
  } else {
    sp.acceptance_rate = rate.as_number_in(0, 1);
  }
  if (sp.method == SpeculativeMethod::draft) {
    sp.draft_model_file = resolve_scenario_path(dir, f.child("draft_model"));
    sp.draft_model = load_model_spec(sp.draft_model_file);
    if (sp.draft_model->heads % s.parallel.tp != 0 || sp.draft_model->moe)
      f.child("draft_model").fail("expected a dense draft model whose heads tp (" + std::to_string(s.parallel.tp) + ") divides");
  } else if (auto v = f.find("draft_model")) {
    v->fail("expected no draft_model with method: mtp (the heads are the target's own)");
  }
}

}  // namespace

const char* to_string(RouterKind r) {
  switch (r) {
    case RouterKind::round_robin: return "round_robin";
    case RouterKind::least_loaded: return "least_loaded";
    case RouterKind::kv_aware: return "kv_aware";
  }
  return "?";
}

Seconds parse_duration(const YamlField& f) {
  const std::string text = f.node().IsScalar() ? f.node().Scalar() : "";
  std::size_t end = 0;
  double value = NAN;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  unit.erase(0, unit.find_first_not_of(' '));
  const double scale = unit == "s" ? 1 : unit == "ms" ? 1e-3 : unit == "us" ? 1e-6 : 0;
  if (end == 0 || scale == 0 || !std::isfinite(value))
    f.fail("expected a duration with its unit (s, ms or us), e.g. \"500ms\"; got '" + text + "'");
  const Seconds s = value * scale;
  if (s < 1e-6 || s > 1e6) f.fail("expected a duration from 1us to 1e6 s; got '" + text + "'");
  return s;
}

std::vector<std::string> serving_fields() {
  std::vector<std::string> out = {"name",           "precision",     "catalog", "serving.replicas", "serving.router", "serving.series_interval_s",
                                  "serving.gpu"};
  add_fields(out, "serving.parallel.", kParallelFields);
  add_fields(out, "serving.kv_cache.", kKvFields);
  add_fields(out, "serving.scheduler.", kSchedulerFields);
  add_fields(out, "serving.requests.", kRequestFields);
  add_fields(out, "serving.requests.shared_prefix.", kPrefixFields);
  add_fields(out, "serving.slo.", kSloFields);
  add_fields(out, "serving.disaggregated.", kDisaggFields);
  add_fields(out, "serving.speculative.", kSpecFields);
  add_fields(out, "serving.host.", kHostFields);
  return out;
}

ServingSpec load_serving(const std::string& path, const std::vector<std::string>& overrides) {
  const YamlField root = YamlField::load_file(path);
  std::vector<std::string> cluster_overrides;
  for (const auto& o : overrides) {
    if (o.rfind("cluster.", 0) == 0 && o.find('=') != std::string::npos) cluster_overrides.push_back(o);
    else apply_field_override(root, o, serving_fields(), "serving");
  }
  root.expect_keys(kFields);
  if (auto d = root.find("description")) d->as_string();
  ServingSpec s;
  s.file = path;
  s.name = root.child("name").as_string();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  ScenarioSpec holder;
  read_scenario_cluster(dir, root.child("cluster"), holder, cluster_overrides, root.find("catalog"));
  s.cluster_file = holder.cluster_file;
  s.catalog_file = holder.catalog_file;
  s.cluster = std::move(holder.cluster);
  s.gpu = std::move(holder.gpu);
  s.node_groups = std::move(holder.node_groups);
  s.group_gpus = std::move(holder.group_gpus);
  s.model = load_model_spec(resolve_scenario_path(dir, root.child("model")));
  if (auto p = root.find("precision")) {
    s.precision = p->as_string();
    s.gpu.peak_flops_or_fail(s.precision, *p);
  }

  const YamlField sv = root.child("serving");
  sv.expect_keys(kServingFields);
  s.serving_line = sv.line();
  if (auto p = sv.find("parallel")) read_parallel(*p, s);
  else s.parallel_line = sv.line();
  if (auto v = sv.find("kv_cache")) read_kv(*v, s);
  if (auto v = sv.find("scheduler")) read_scheduler(*v, s);
  if (s.scheduler.batches_in_flight == 0) s.scheduler.batches_in_flight = s.parallel.pp;  // unwritten: pp
  if (auto v = sv.find("router"))
    s.router = v->as_choice(serving_choice_names("router")) == "round_robin" ? RouterKind::round_robin
               : v->as_string() == "least_loaded"                                        ? RouterKind::least_loaded
                                                                                          : RouterKind::kv_aware;
  read_requests(dir, sv.child("requests"), s);
  if (auto v = sv.find("slo")) read_slo(*v, s);
  if (auto v = sv.find("speculative")) read_speculative(dir, *v, s);
  if (auto v = sv.find("host")) read_host(*v, s);
  if (auto v = sv.find("series_interval_s")) s.series_interval_s = v->as_number_in(1e-3, kMaxDuration_s, "s");

  if (auto g = sv.find("gpu")) s.serving_gpu = g->as_string();
  std::vector<PoolModel> pools;
  const auto pool_gpu = [&](const std::optional<YamlField>& f) -> std::optional<YamlField> { return f ? f : sv.find("gpu"); };
  if (auto d = sv.find("disaggregated")) {
    d->expect_keys(kDisaggFields);
    DisaggregationSpec& g = s.disaggregation;
    g.enabled = true;
    g.prefill_replicas = static_cast<int>(d->child("prefill_replicas").as_integer_in(1, kMaxReplicas));
    g.decode_replicas = static_cast<int>(d->child("decode_replicas").as_integer_in(1, kMaxReplicas));
    if (auto r = sv.find("replicas")) r->fail("expected no replicas with disaggregated: (prefill_replicas + decode_replicas)");
    s.replicas = g.prefill_replicas + g.decode_replicas;
    const std::optional<YamlField> pf = pool_gpu(d->find("prefill_gpu")), df = pool_gpu(d->find("decode_gpu"));
    g.prefill_gpu = pf ? pf->as_string() : "";
    g.decode_gpu = df ? df->as_string() : "";
    pools.push_back({g.prefill_replicas, g.prefill_gpu, pf, d->child("prefill_replicas")});
    pools.push_back({g.decode_replicas, g.decode_gpu, df, d->child("decode_replicas")});
  } else {
    const std::optional<YamlField> r = sv.find("replicas");
    if (r) s.replicas = static_cast<int>(r->as_integer_in(1, kMaxReplicas));
    pools.push_back({s.replicas, s.serving_gpu, sv.find("gpu"), r ? *r : sv});
  }
  if (s.gpus() > s.cluster.gpu_count()) {
    const std::optional<YamlField> r = sv.find("replicas");
    const YamlField at = r ? *r : sv;
    at.fail("expected at most the " + std::to_string(s.cluster.gpu_count()) + " GPUs of " + s.cluster.name + ": " +
            std::to_string(s.replicas) + " replicas x " + std::to_string(s.parallel.gpus()) + " GPUs need " +
            std::to_string(s.gpus()));
  }
  s.placement = place_replicas(s, pools);
  // Every model the fleet runs on must run the precision (the cluster's own was checked above).
  const std::optional<YamlField> precision = root.find("precision");
  for (const ReplicaPlacement& p : s.placement)
    if (p.gpu != s.gpu.name) s.gpu_model(p.gpu).peak_flops_or_fail(s.precision, precision ? *precision : sv);
  return s;
}

}  // namespace clustersim
