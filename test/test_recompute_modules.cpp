// Recompute by module (Megatron-Core's recompute_modules, DeepSeek-V3's plan): the bytes each module
// stops storing, in closed form on a small MLA + MoE model; its recompute time is its own forward
// ops' time; DeepSeek-V3 on 2048 H800s fits 80 GB with its plan and not without; bad module lists
// are errors at their line.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include <string>

#include "support.hpp"
#include "workloads/layer_segments.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;

namespace {

// s = 8, b = 2 (16 tokens), h = 16, a = 4 heads; MLA latents d_c' = 6, d_c = 4, head widths
// nope 4 + rope 2 (d_qk = 6), d_v = 4; SwiGLU; layer 0 dense (f = 24), layer 1 MoE: 1 shared and
// top-2 of 8 routed experts of width 8.
ModelSpec small_mla_moe() {
  ModelSpec m;
  m.name = "small";
  m.layers = 2;
  m.hidden = 16;
  m.heads = m.kv_heads = 4;
  m.ffn = FfnType::swiglu;
  m.ffn_hidden = 24;
  m.vocab = 100;
  m.seq_len = 8;
  m.mla = MlaSpec{6, 4, 4, 2, 4};
  MoeSpec moe;
  moe.routed_experts = 8;
  moe.shared_experts = 1;
  moe.top_k = 2;
  moe.expert_ffn_hidden = 8;
  moe.dense_layers = 1;
  m.moe = moe;
  return m;
}

ActivationLayout layout_with(RecomputeModules modules, bool fp8 = false) {
  ActivationLayout l;
  l.microbatch = 2;
  l.flash_attention = true;
  l.fp8_gemm_inputs = fp8;
  l.recompute_modules = modules;
  return l;
}

RecomputeModules only(RecomputeModule m) { return RecomputeModules{}.add(m); }

/// Bytes a module saves on layer `layer`: stored with nothing recomputed minus stored with it.
double saved(const ModelSpec& m, int layer, RecomputeModules modules, bool fp8 = false) {
  return stored_activation_bytes(m, layer, layout_with({}, fp8)) - stored_activation_bytes(m, layer, layout_with(modules, fp8));
}

constexpr double sb = 16, h = 16, a = 4, g = 2;  // tokens, width, heads, bytes of a 16-bit GEMM input

}  // namespace

TEST_CASE("each recompute module drops its own terms of a layer's activations, in closed form") {
  const ModelSpec m = small_mla_moe();
  // The terms, nothing recomputed (memory_model.hpp; Korthikanti Table 2 with MLA's widths).
  const LayerActivations dense = layer_activations(m, 0, layout_with({}));
  CHECK(dense.norm_inputs == 4 * sb * h + 2 * sb * (6 + 4));
  CHECK(dense.norm_outputs == 2 * g * sb * h + g * sb * (6 + 4));
  CHECK(dense.qkv == 2 * sb * a * (2 * 6 + 4));
  CHECK(dense.attention_core == 4 * a * sb);  // flash: fp32 log-sum-exp per query and head
  CHECK(dense.attention_output == g * sb * a * 4);
  CHECK(dense.ffn_act_inputs == 4 * sb * 24);
  CHECK(dense.ffn_act_outputs == g * sb * 24);
  CHECK(dense.expert_act_inputs == 0);
  const LayerActivations moe = layer_activations(m, 1, layout_with({}));
  CHECK(moe.ffn_act_inputs == 4 * sb * 8);        // the shared expert
  CHECK(moe.expert_act_inputs == 4 * sb * 2 * 8);  // top-2 routed experts per token
  CHECK(moe.expert_act_outputs == g * sb * 2 * 8);

  SECTION("layernorm: the two pre-norms' and the two latent norms' outputs") {
    CHECK(saved(m, 0, only(RecomputeModule::layernorm)) == 2 * g * sb * h + g * sb * (6 + 4));
  }
  SECTION("core_attn: the log-sum-exp, exactly what selective drops") {
    CHECK(saved(m, 0, only(RecomputeModule::core_attn)) == 4 * a * sb);
    ActivationLayout selective = layout_with({});
    selective.recompute = Recompute::selective;
    CHECK(stored_activation_bytes(m, 1, selective) ==
          stored_activation_bytes(m, 1, layout_with(only(RecomputeModule::core_attn))));
  }
  SECTION("mla_up_proj: Q, K and V as the core reads them") {
    CHECK(saved(m, 0, only(RecomputeModule::mla_up_proj)) == 2 * sb * a * (6 + 6 + 4));
  }
  SECTION("activation: every down projection's input (dense; shared and routed experts)") {
    CHECK(saved(m, 0, only(RecomputeModule::activation)) == g * sb * 24);
    CHECK(saved(m, 1, only(RecomputeModule::activation)) == g * sb * (8 + 2 * 8));
  }
  SECTION("moe_act: only the MoE layer's; under FP8 its SwiGLU inputs are cached in FP8 with 1x128 scales") {
    CHECK(saved(m, 0, only(RecomputeModule::moe_act)) == 0);
    CHECK(saved(m, 1, only(RecomputeModule::moe_act)) == g * sb * (8 + 2 * 8));
    const double fp8 = 1 + 4.0 / 128;  // bytes per element of an FP8 tensor and its tile scales
    CHECK(saved(m, 1, only(RecomputeModule::moe_act), true) ==
          Approx(fp8 * sb * (8 + 2 * 8) + (4 - 2 * fp8) * sb * (8 + 2 * 8)).epsilon(1e-12));
  }
  SECTION("experts: the routed experts' whole inner activations") {
    CHECK(saved(m, 0, only(RecomputeModule::experts)) == 0);
    CHECK(saved(m, 1, only(RecomputeModule::experts)) == (4 + g) * sb * 2 * 8);
  }
  SECTION("mlp: a dense layer's FFN input and its activations; MoE layers keep theirs") {
    CHECK(saved(m, 0, only(RecomputeModule::mlp)) == g * sb * h + (4 + g) * sb * 24);
    CHECK(saved(m, 1, only(RecomputeModule::mlp)) == 0);
    // With layernorm the norm's output is gone already: mlp adds only the activations.
    CHECK(saved(m, 0, RecomputeModules{}.add(RecomputeModule::layernorm).add(RecomputeModule::mlp)) ==
          saved(m, 0, only(RecomputeModule::layernorm)) + (4 + g) * sb * 24);
  }
  SECTION("moe: an MoE layer's shared and routed experts' activations; its normed input stays") {
    CHECK(saved(m, 0, only(RecomputeModule::moe)) == 0);
    CHECK(saved(m, 1, only(RecomputeModule::moe)) == (4 + g) * sb * (8 + 2 * 8));
  }
  SECTION("shared_experts: the shared expert's activations alone; moe covers them") {
    CHECK(saved(m, 0, only(RecomputeModule::shared_experts)) == 0);
    CHECK(saved(m, 1, only(RecomputeModule::shared_experts)) == (4 + g) * sb * 8);
    CHECK(saved(m, 1, RecomputeModules{}.add(RecomputeModule::moe).add(RecomputeModule::shared_experts)) ==
          saved(m, 1, only(RecomputeModule::moe)));
  }
  SECTION("modules together save the sum of what each saves (their terms are disjoint)") {
    RecomputeModules plan;
    plan.add(RecomputeModule::layernorm).add(RecomputeModule::mla_up_proj).add(RecomputeModule::experts);
    CHECK(saved(m, 1, plan) == saved(m, 1, only(RecomputeModule::layernorm)) +
                                   saved(m, 1, only(RecomputeModule::mla_up_proj)) +
                                   saved(m, 1, only(RecomputeModule::experts)));
  }
}

namespace {

/// The recompute segments' total time of one layer.
Seconds recompute_s(const LayerSegments& layer) {
  Seconds t = 0;
  for (const Segment& seg : layer.recompute) t += seg.duration_s;
  return t;
}

/// The time of the named forward ops.
Seconds ops_s(const ScenarioSpec& s, const std::vector<ComputeOp>& ops, std::initializer_list<const char*> names) {
  Seconds t = 0;
  for (const ComputeOp& op : ops)
    for (const char* n : names)
      if (op.name == n) t += op_time(s.gpu, s.precision, op);
  return t;
}

}  // namespace

TEST_CASE("a module's recompute time is its own forward ops' time") {
  SECTION("llama 3 70b: layernorm repeats the two norms, activation the SwiGLU") {
    ScenarioSpec s = load_scenario(source_path("scenarios/llama3-70b-h100-1024.yaml"), {"recompute=none"});
    const std::vector<ComputeOp> ops =
        layer_forward_ops(s.model, s.microbatch, s.layout.tp, s.sequence_parallel, s.attention, s.layout.cp);
    s.recompute_modules = only(RecomputeModule::layernorm);
    CHECK(recompute_s(dense_layer_segments(s, nullptr)) == Approx(ops_s(s, ops, {"norm1", "norm2"})).epsilon(1e-12));
    s.recompute_modules = only(RecomputeModule::activation);
    CHECK(recompute_s(dense_layer_segments(s, nullptr)) == Approx(ops_s(s, ops, {"swiglu"})).epsilon(1e-12));
    s.recompute_modules = RecomputeModules{};
    CHECK(dense_layer_segments(s, nullptr).recompute.empty());
  }
  SECTION("deepseek-v3: mla_up_proj repeats the two up-projections and the rotary embedding") {
    ScenarioSpec s = load_scenario(source_path("scenarios/deepseek-v3-h800-2048.yaml"), {"recompute=none"});
    const std::vector<ComputeOp> ops =
        layer_forward_ops(s.model, s.microbatch, s.layout.tp, s.sequence_parallel, s.attention, s.layout.cp);
    s.recompute_modules = only(RecomputeModule::mla_up_proj);
    CHECK(recompute_s(dense_layer_segments(s, nullptr)) == Approx(ops_s(s, ops, {"q_up", "kv_up", "rope"})).epsilon(1e-12));
    s.recompute_modules = only(RecomputeModule::layernorm);
    CHECK(recompute_s(dense_layer_segments(s, nullptr)) ==
          Approx(ops_s(s, ops, {"norm1", "norm2", "q_norm", "kv_norm"})).epsilon(1e-12));
  }
}

namespace {

/// The TP collectives or all-to-alls (`kind`) of a layer's recompute, by label.
std::vector<std::string> labels(const LayerSegments& layer, SegmentKind kind) {
  std::vector<std::string> out;
  for (const Segment& seg : layer.recompute)
    if (seg.kind == kind) out.push_back(seg.label);
  return out;
}

}  // namespace

TEST_CASE("mlp and moe repeat whole blocks, their collectives included") {
  SECTION("llama 3 70b (tp 8, sp): mlp repeats the norm, the SwiGLU FFN and its all-gather and reduce-scatter") {
    ScenarioSpec s = load_scenario(source_path("scenarios/llama3-70b-h100-1024.yaml"), {"recompute=none"});
    REQUIRE(s.sequence_parallel);
    const std::vector<ComputeOp> ops =
        layer_forward_ops(s.model, s.microbatch, s.layout.tp, s.sequence_parallel, s.attention, s.layout.cp);
    s.recompute_modules = only(RecomputeModule::mlp);
    const LayerSegments layer = dense_layer_segments(s, nullptr);
    CHECK(recompute_s(layer) == Approx(ops_s(s, ops, {"norm2", "ffn_gate", "ffn_up", "swiglu", "ffn_down"})).epsilon(1e-12));
    CHECK(labels(layer, SegmentKind::tp_comm) == std::vector<std::string>{"mlp all-gather", "mlp output reduce-scatter"});
    const Bytes tokens_x_hidden = Bytes(s.microbatch) * s.model.seq_len * s.model.hidden;
    for (const Segment& seg : layer.recompute)
      if (seg.kind == SegmentKind::tp_comm) CHECK(seg.tp_bytes == 2 * tokens_x_hidden);  // 16-bit, the whole microbatch
    // With layernorm too the norm runs once.
    s.recompute_modules.add(RecomputeModule::layernorm);
    CHECK(recompute_s(dense_layer_segments(s, nullptr)) == Approx(recompute_s(layer) + ops_s(s, ops, {"norm1"})).epsilon(1e-12));
  }
  SECTION("deepseek-v3: moe repeats the router, shared and routed experts, and both all-to-alls") {
    // In BF16, so that the ops are the plain ones (FP8 adds input quantization before each GEMM).
    ScenarioSpec s = load_scenario(source_path("scenarios/deepseek-v3-h800-2048.yaml"), {"recompute=none", "precision=bf16"});
    const ExpertRows rows{4096, 4096};
    const MoeLayerOps ops = moe_layer_forward_ops(s.model, s.microbatch, s.layout.tp, s.sequence_parallel, s.attention,
                                                  rows.own, s.layout.cp);
    const MoeTrafficIds traffic{3, 5, 7};
    s.recompute_modules = only(RecomputeModule::moe);
    const LayerSegments layer = moe_layer_segments(s, nullptr, traffic, rows);
    Seconds block_s = ops_s(s, ops.before_dispatch, {"router", "shared_gate", "shared_up", "shared_swiglu", "shared_down"});
    for (const ComputeOp& op : ops.experts) block_s += op_time(s.gpu, s.precision, op);
    CHECK(block_s > 0);
    CHECK(recompute_s(layer) == Approx(block_s).epsilon(1e-12));
    CHECK(labels(layer, SegmentKind::ep_comm) == std::vector<std::string>{"moe dispatch", "moe combine"});
    std::vector<int> ids;
    for (const Segment& seg : layer.recompute)
      if (seg.kind == SegmentKind::ep_comm) ids.push_back(seg.traffic);
    CHECK(ids == std::vector<int>{traffic.dispatch, traffic.combine});  // the forward's own all-to-alls
    // experts and activation add nothing the block does not repeat already.
    s.recompute_modules.add(RecomputeModule::experts).add(RecomputeModule::moe_act);
    CHECK(recompute_s(moe_layer_segments(s, nullptr, traffic, rows)) == Approx(block_s).epsilon(1e-12));
    // A dense layer of the same model is untouched by moe.
    CHECK(dense_layer_segments(s, nullptr).recompute.empty());
  }
  SECTION("deepseek-v3 at tp 2 with sp: shared_experts repeats the shared expert, its all-gather and its reduce-scatter") {
    ScenarioSpec s = load_scenario(source_path("scenarios/deepseek-v3-h800-2048.yaml"),
                                   {"recompute=none", "precision=bf16", "parallel.tp=2", "parallel.dp=64",
                                    "parallel.sequence_parallel=true"});
    const ExpertRows rows{4096, 4096};
    const MoeLayerOps ops = moe_layer_forward_ops(s.model, s.microbatch, s.layout.tp, s.sequence_parallel, s.attention,
                                                  rows.own, s.layout.cp);
    s.recompute_modules = only(RecomputeModule::shared_experts);
    const LayerSegments layer = moe_layer_segments(s, nullptr, {3, 5, 7}, rows);
    CHECK(recompute_s(layer) ==
          Approx(ops_s(s, ops.before_dispatch, {"shared_gate", "shared_up", "shared_swiglu", "shared_down"})).epsilon(1e-12));
    CHECK(labels(layer, SegmentKind::tp_comm) == std::vector<std::string>{"mlp all-gather", "shared experts output reduce-scatter"});
    CHECK(labels(layer, SegmentKind::ep_comm).empty());
    // Under moe the whole block runs once, the shared experts in it.
    s.recompute_modules.add(RecomputeModule::moe);
    const LayerSegments both = moe_layer_segments(s, nullptr, {3, 5, 7}, rows);
    CHECK(labels(both, SegmentKind::ep_comm) == std::vector<std::string>{"moe dispatch", "moe combine"});
    CHECK(recompute_s(both) > recompute_s(layer));
  }
}

TEST_CASE("deepseek-v3 on 2048 h800s fits 80 GB with its recompute plan and not with selective recompute") {
  // The plan (report 3.2.3 and 3.3.3): RMSNorms and MLA up-projections recomputed, the MoE SwiGLU's
  // output recomputed with its inputs cached in FP8. Per token and MoE layer, FP8 GEMM inputs at
  // q = 1 + 4/128 B (a 4-B scale per 1x128 tile), h = 7168, 128 heads, d_qk = 192, d_v = 128:
  const double h = 7168, heads = 128, q = 1 + 4.0 / 128, latents = 1536 + 512, shared = 2048, routed = 8 * 2048;
  const double norm_inputs = 4 * h + 2 * latents, masks = 2 * h, lse = 4 * heads, attn_out = q * heads * 128;
  const double plan = norm_inputs + masks + lse + attn_out + 4 * (shared + routed) * q / 2;
  const double selective = norm_inputs + masks + attn_out + q * (2 * h + latents) /*norm outputs*/ +
                           2 * heads * (192 + 192 + 128) /*Q, K, V*/ + 4 * (shared + routed) + q * (shared + routed);
  CHECK(plan == Approx(102528));
  CHECK(selective == Approx(304704));

  const std::string scenario = source_path("scenarios/deepseek-v3-h800-2048.yaml");
  const nlohmann::json with_plan = test::cli_json("run --fold assume " + scenario);
  const nlohmann::json with_selective = test::cli_json("run --fold assume " + scenario + " --set recompute=selective --allow-oom");
  const double gib80 = 80.0 * (1ULL << 30);
  for (const auto& stage : with_plan["stages"]) {
    INFO("pipeline rank " << stage["stage"]);
    CHECK(stage["memory_bytes"]["total"].get<double>() < gib80);
  }
  // Rank 1 holds stages 1 and 14, eight MoE layers and no head: its activations scale with the
  // per-token bytes alone (same layers, same microbatches in flight).
  const auto& plan_1 = with_plan["stages"][1]["memory_bytes"];
  const auto& selective_1 = with_selective["stages"][1]["memory_bytes"];
  CHECK(plan_1["activations"].get<double>() / selective_1["activations"].get<double>() ==
        Approx(plan / selective).epsilon(1e-6));
  CHECK(selective_1["total"].get<double>() > gib80);
  const auto oom = run_cli("run --fold assume " + scenario + " --set recompute=selective");
  CHECK(oom.exit_code == 2);
  CHECK_THAT(oom.stderr_text, Catch::Contains("pipeline stage 0 needs"));  // the first that does not fit
}

namespace {

/// The Llama 3 70B or DeepSeek-V3 scenario with its recompute line replaced, paths made absolute.
std::string scenario_with(const std::string& shipped, const std::string& from, const std::string& to) {
  std::string text = test::replaced_all(test::shipped_with(shipped, from, to), "cluster: clusters/",
                                        "cluster: " + source_path("scenarios/clusters/"), shipped);
  const std::size_t at = text.find("model: models/");
  if (at != std::string::npos) text.replace(at, 14, "model: " + source_path("scenarios/models/"));
  return text;
}

void require_error(const std::string& text, const std::string& needle, const std::string& field,
                   const std::string& expected) {
  const std::string file = test::temp_file(text);
  const auto r = run_cli("run --fold assume " + file);
  INFO(r.stderr_text);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK_THAT(r.stderr_text, Catch::StartsWith("error: " + file + ":" + std::to_string(test::line_of(text, needle)) +
                                              ": " + field + ": " + expected));
}

const std::string kLlama = "scenarios/llama3-70b-h100-1024.yaml";
const std::string kDeepSeekPlan = "recompute: {modules: [layernorm, mla_up_proj, moe_act]}";

}  // namespace

TEST_CASE("bad recompute modules are errors at their line") {
  SECTION("an unknown module") {
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: {modules: [layernorm, swiglu]}"), "recompute:",
                  "recompute.modules[1]",
                  "expected a module, one of: layernorm, core_attn, mla_up_proj, activation, moe_act, experts, mlp, moe, "
                  "shared_experts; got 'swiglu'");
  }
  SECTION("a module the model has no part for is rejected, not ignored") {
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: {modules: [mla_up_proj]}"), "recompute:",
                  "recompute.modules[0]", "expected a module llama3-70b");
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: {modules: [core_attn, moe_act]}"), "recompute:",
                  "recompute.modules[1]", "expected a module llama3-70b");
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: {modules: [moe]}"), "recompute:",
                  "recompute.modules[0]", "expected a module llama3-70b");
    // mlp on a model whose every layer is MoE: DeepSeek-V3 without its three dense layers.
    const std::string model = test::temp_file(test::replaced_all(
        test::shipped_with("scenarios/models/deepseek-v3.yaml", "dense_layers: 3", "dense_layers: 0"), "ffn_hidden: 18432\n", "",
        "the model"));
    const std::string all_moe = test::replaced_all(scenario_with("scenarios/deepseek-v3-h800-2048.yaml", kDeepSeekPlan,
                                                                 "recompute: {modules: [moe, mlp]}"),
                                                   source_path("scenarios/models/deepseek-v3.yaml"), model, "the scenario");
    require_error(all_moe, "recompute:", "recompute.modules[1]", "expected a module deepseek-v3");
    // shared_experts on a model without shared experts: DeepSeek-V3 with none.
    const std::string unshared = test::temp_file(test::shipped_with("scenarios/models/deepseek-v3.yaml", "shared_experts: 1", "shared_experts: 0"));
    require_error(test::replaced_all(scenario_with("scenarios/deepseek-v3-h800-2048.yaml", kDeepSeekPlan,
                                                   "recompute: {modules: [shared_experts]}"),
                                     source_path("scenarios/models/deepseek-v3.yaml"), unshared, "the scenario"),
                  "recompute:", "recompute.modules[0]", "expected a module deepseek-v3");
  }
  SECTION("a module twice, an empty list, a key other than modules, a word other than the modes") {
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: {modules: [layernorm, layernorm]}"),
                  "recompute:", "recompute.modules[1]", "expected each module once");
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: {modules: []}"), "recompute:",
                  "recompute.modules", "expected a list of modules to recompute");
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: {module: [layernorm]}"), "recompute:",
                  "recompute.module", "unknown key (expected one of: modules)");
    require_error(scenario_with(kLlama, "recompute: selective", "recompute: layernorm"), "recompute:", "recompute",
                  "expected one of: none, selective, full, or {modules: [...]}; got 'layernorm'");
  }
  SECTION("deepseek-v3's own plan is accepted and named in the report") {
    const std::string file = test::temp_file(scenario_with("scenarios/deepseek-v3-h800-2048.yaml", kDeepSeekPlan,
                                                           "recompute: {modules: [experts, core_attn]}"));
    const auto r = run_cli("run --fold assume " + file + " --allow-oom");
    INFO(r.stderr_text);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.stdout_text, Catch::Contains("core_attn+experts recompute"));
  }
}

TEST_CASE("a bad mtp_depth is an error at its line") {
  const std::string model = "scenarios/models/deepseek-v3.yaml";
  for (const char* bad : {"mtp_depth: -1", "mtp_depth: 1.5", "mtp_depth: 17"}) {
    INFO(bad);
    const std::string text = test::shipped_with(model, "mtp_depth: 1", bad);
    const std::string model_file = test::temp_file(text);
    const std::string scenario = test::temp_file(scenario_with("scenarios/deepseek-v3-h800-2048.yaml",
                                                               "model: models/deepseek-v3.yaml", "model: " + model_file));
    const auto r = run_cli("run --fold assume " + scenario);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.stderr_text, Catch::StartsWith("error: " + model_file + ":" +
                                                std::to_string(test::line_of(text, "mtp_depth")) + ": mtp_depth: expected"));
  }
}
