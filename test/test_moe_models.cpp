// Mixture-of-experts and multi-head latent attention: the shipped MoE models match their published
// sizes, an MoE layer's FLOPs follow from one expert's, MLA's counts follow its projections, and
// every malformed moe: or attention: block is a UserError naming the file, line and field.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "support.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/model.hpp"
#include "workloads/model_math.hpp"

namespace {

using clustersim::ModelSpec;
using clustersim::UserError;
using clustersim::YamlField;
using Catch::Matchers::Contains;

using clustersim::test::relative_error;
using clustersim::test::shipped_model;

/// A small model with every MoE and MLA field; each bad-input case edits one line of it.
const std::string kTiny =
    "name: tiny-moe\n"
    "layers: 4\n"
    "hidden: 256\n"
    "heads: 4\n"
    "attention:\n"
    "  type: mla\n"
    "  q_lora_rank: 64\n"
    "  kv_lora_rank: 32\n"
    "  qk_nope_head_dim: 32\n"
    "  qk_rope_head_dim: 16\n"
    "  v_head_dim: 32\n"
    "ffn: swiglu\n"
    "ffn_hidden: 1024\n"
    "moe:\n"
    "  routed_experts: 8\n"
    "  shared_experts: 1\n"
    "  top_k: 2\n"
    "  expert_ffn_hidden: 128\n"
    "  dense_layers: 1\n"
    "  dropless: true\n"
    "  node_limit: 2\n"
    "vocab: 1000\n"
    "seq_len: 128\n"
    "tied_embeddings: false\n";

/// kTiny with the one line `from` replaced by `to` (which may span lines).
std::string tiny_with(const std::string& from, const std::string& to) {
  clustersim::test::line_of(kTiny, from);  // exactly one occurrence
  std::string text = kTiny;
  text.replace(text.find(from), from.size(), to);
  return text;
}

ModelSpec parse(const std::string& text) {
  return clustersim::parse_model_spec(YamlField::load_string(text, "tiny-moe.yaml"));
}

/// The error names tiny-moe.yaml, the line where `at` is written, `field` and says `expected`.
void expect_error(const std::string& text, const std::string& at, const std::string& field,
                  const std::string& expected) {
  const UserError e = clustersim::test::error_of([&] { parse(text); });
  INFO(e.what());
  CHECK(e.file() == "tiny-moe.yaml");
  CHECK(e.line() == clustersim::test::line_of(text, at));
  CHECK(e.field_path() == field);
  CHECK_THAT(e.what(), Contains("tiny-moe.yaml:" + std::to_string(e.line())) && Contains(expected));
}

}  // namespace

TEST_CASE("MoE model files load with their experts and attention") {
  const ModelSpec ds = shipped_model("deepseek-v3");
  REQUIRE((ds.mla && ds.moe));
  CHECK(ds.mla->qk_head_dim() == 192);
  CHECK(ds.kv_heads == ds.heads);
  CHECK(ds.moe->dense_layers == 3);
  CHECK(ds.moe->node_limit == 4);
  CHECK_FALSE(ds.moe->capacity_factor);  // dropless
  CHECK((!ds.is_moe_layer(2) && ds.is_moe_layer(3) && ds.is_moe_layer(60)));
  CHECK(ds.moe_layer_count() == 58);

  const ModelSpec mixtral = shipped_model("mixtral-8x7b");
  REQUIRE(mixtral.moe);
  CHECK_FALSE(mixtral.mla);
  CHECK(mixtral.ffn_hidden == 0);  // every layer is MoE
  CHECK((mixtral.is_moe_layer(0) && mixtral.moe_layer_count() == 32));
  CHECK(mixtral.moe->shared_experts == 0);
  CHECK_FALSE(mixtral.moe->node_limit);

  const ModelSpec llama = shipped_model("llama3-70b");
  CHECK((!llama.moe && !llama.mla && !llama.is_moe_layer(0) && llama.moe_layer_count() == 0));
}

TEST_CASE("DeepSeek-V3 counts match the technical report and its weight notes") {
  const ModelSpec m = shipped_model("deepseek-v3");
  const double total = clustersim::parameter_count(m);
  const double active = clustersim::active_parameter_count(m);
  INFO("total " << total << " active " << active);
  // DeepSeek-V3 Technical Report (arXiv 2412.19437), abstract: 671B total, 37B activated per token,
  // the 14B multi-token prediction module excluded.
  CHECK(relative_error(total, 671e9) < 0.01);
  // README_WEIGHTS.md (Hugging Face deepseek-ai/DeepSeek-V3): 36.6B activated, including the 0.9B
  // output head; DeepSeek leaves the input embedding lookup out, this count keeps it in.
  const double embedding = double(m.vocab) * m.hidden;
  CHECK(relative_error(active - embedding, 36.6e9) < 0.01);
  CHECK(std::round((active - embedding) / 1e9) == 37);  // the report's 37B, rounded
}

TEST_CASE("Mixtral counts are within 1 percent of Mistral's published totals and actives") {
  // Mistral AI: Mixtral 8x7B 46.7B total, 12.9B per token (blog, 2023-12-11; Jiang et al. 2024);
  // Mixtral 8x22B 141B total, 39B active (blog, 2024-04-17). Both count the input embedding.
  struct Published {
    std::string file;
    double total, active;
  };
  for (const Published& p : {Published{"mixtral-8x7b", 46.7e9, 12.9e9}, Published{"mixtral-8x22b", 141e9, 39e9}}) {
    INFO(p.file);
    const ModelSpec m = shipped_model(p.file);
    INFO("total " << clustersim::parameter_count(m) << " active " << clustersim::active_parameter_count(m));
    CHECK(relative_error(clustersim::parameter_count(m), p.total) < 0.01);
    CHECK(relative_error(clustersim::active_parameter_count(m), p.active) < 0.01);
  }
}

TEST_CASE("The GPT-4-class model matches SemiAnalysis's reported estimate") {
  // SemiAnalysis, GPT-4 Architecture (2023), an estimate, not an official figure: ~111B per expert's
  // MLP set, ~55B shared attention, 16 experts (16 x 111 + 55 = 1831B, "~1.8T"), ~280B per token.
  const ModelSpec m = shipped_model("gpt4-class-1.8t");
  REQUIRE(m.moe);
  const clustersim::LayerParameters layer = clustersim::layer_parameter_count(m, 0);
  const double expert_mlp_set = m.layers * layer.routed_experts / m.moe->routed_experts;
  CHECK(relative_error(expert_mlp_set, 111e9) < 0.01);
  CHECK(relative_error(m.layers * layer.attention, 55e9) < 0.01);
  CHECK(relative_error(clustersim::parameter_count(m), 16 * 111e9 + 55e9) < 0.01);
  CHECK(relative_error(clustersim::parameter_count(m), 1.8e12) < 0.02);
  CHECK(relative_error(clustersim::active_parameter_count(m), 280e9) < 0.01);
}

TEST_CASE("Dense models count every weight as active and keep their closed-form counts") {
  // Llama-style: l (h (h + 2 kv) + h^2 + 3 h f + 2 h) + 2 V h + h; GPT-style adds biases, LayerNorm
  // biases and positions: l (12 h^2 + 13 h) + V h + s h + 2 h (Narayanan et al.'s P plus the final norm).
  const ModelSpec llama = shipped_model("llama3-8b");
  const double h = llama.hidden, kv = double(llama.kv_heads) * llama.head_dim();
  const double llama_count =
      llama.layers * (h * (h + 2 * kv) + h * h + 3 * h * llama.ffn_hidden + 2 * h) + 2.0 * llama.vocab * h + h;
  CHECK(clustersim::parameter_count(llama) == llama_count);
  CHECK(clustersim::active_parameter_count(llama) == llama_count);

  const ModelSpec gpt = shipped_model("gpt3-175b");
  const double g = gpt.hidden;
  const double gpt_count = gpt.layers * (12 * g * g + 13 * g) + double(gpt.vocab) * g + gpt.seq_len * g + 2 * g;
  CHECK(clustersim::parameter_count(gpt) == gpt_count);
  CHECK(clustersim::active_parameter_count(gpt) == gpt_count);
  const clustersim::LayerParameters layer = clustersim::layer_parameter_count(gpt, 5);
  CHECK(layer.routed_experts == 0);
  CHECK(gpt.layers * layer.total() + double(gpt.vocab) * g + gpt.seq_len * g + 2 * g == gpt_count);
}

TEST_CASE("One DeepSeek-V3 MLA attention layer has the closed-form parameter count") {
  const ModelSpec m = shipped_model("deepseek-v3");
  const double h = 7168, a = 128, dq = 1536, dc = 512, dn = 128, dr = 64, dv = 128;
  // DeepSeek-V3 report, equations 1-10: W^DQ h x d_c', W^UQ and W^QR d_c' x a (d_h + d_h^R),
  // W^DKV h x d_c, W^KR h x d_h^R, W^UK and W^UV d_c x a d_h, W^O a d_h x h; an RMSNorm on each
  // latent (d_c' + d_c); and the layer's pre-attention RMSNorm (h).
  const double mla = h * dq + dq * a * (dn + dr) + h * dc + h * dr + dc * a * (dn + dv) + a * dv * h + dq + dc;
  CHECK(mla == 187107328.0);
  for (int layer : {0, 3, 60}) {
    INFO("layer " << layer);
    CHECK(clustersim::layer_parameter_count(m, layer).attention == mla + h);
  }
  // The dense layers' FFN and the MoE layers' router, shared and routed experts.
  CHECK(clustersim::layer_parameter_count(m, 2).ffn == 3 * h * 18432 + h);
  const clustersim::LayerParameters moe = clustersim::layer_parameter_count(m, 3);
  CHECK(moe.ffn == h * 256 + 1 * 3 * h * 2048 + h);
  CHECK(moe.routed_experts == 256 * 3 * h * 2048);
}

TEST_CASE("With uniform routing an MoE layer's expert FLOPs equal tokens x top-k x one expert's FLOPs") {
  for (const std::string file : {"deepseek-v3", "mixtral-8x7b", "gpt4-class-1.8t"}) {
    INFO(file);
    const ModelSpec m = shipped_model(file);
    const double h = m.hidden, f = m.moe->expert_ffn_hidden;
    const double matrices = m.ffn == clustersim::FfnType::swiglu ? 3 : 2;  // gate, up, down
    const double one_expert = 2 * matrices * h * f;
    CHECK(clustersim::expert_ffn_flops_per_token(m) == one_expert);
    const int last = m.layers - 1;
    const double tokens = 2.0 * m.seq_len;
    const auto flops = clustersim::layer_forward_flops(m, last, 2, 1);
    CHECK(flops.expert_flops == Approx(tokens * m.moe->top_k * one_expert));
    CHECK(flops.ffn_flops == Approx(tokens * m.moe->shared_experts * one_expert));  // shared experts
    CHECK(flops.router_flops == Approx(2 * tokens * h * m.moe->routed_experts));
    // Tensor parallelism splits every term evenly.
    const auto split = clustersim::layer_forward_flops(m, last, 2, 4);
    CHECK(split.expert_flops * 4 == Approx(flops.expert_flops));
    CHECK(split.router_flops * 4 == Approx(flops.router_flops));
    CHECK(split.total_flops() * 4 == Approx(flops.total_flops()));
  }
  // DeepSeek-V3's first three layers are dense: ffn_hidden 18432, no router, no experts.
  const ModelSpec ds = shipped_model("deepseek-v3");
  const auto dense = clustersim::layer_forward_flops(ds, 2, 1, 1);
  CHECK(dense.ffn_flops == Approx(6.0 * ds.seq_len * ds.hidden * 18432));
  CHECK((dense.router_flops == 0 && dense.expert_flops == 0));
}

TEST_CASE("MLA forward FLOPs follow its projections and head widths") {
  const ModelSpec m = shipped_model("deepseek-v3");
  const double s = m.seq_len, h = 7168, a = 128, dq = 1536, dc = 512, dn = 128, dr = 64, dv = 128;
  const auto one = clustersim::layer_forward_flops(m, 0, 1, 1);
  // 2 FLOPs per multiply-add: down-projections h (d_c' + d_c + d_h^R), up-projections
  // d_c' a (d_h + d_h^R) + d_c a (d_h + d_v); scores a (d_h + d_h^R) and context a d_v per key.
  CHECK(one.qkv_flops == Approx(2 * s * (h * (dq + dc + dr) + dq * a * (dn + dr) + dc * a * (dn + dv))));
  CHECK(one.attention_core_flops == Approx(2 * s * s * a * (dn + dr + dv)));
  CHECK(one.attn_out_flops == Approx(2 * s * a * dv * h));
  const auto split = clustersim::layer_forward_flops(m, 0, 1, 8);
  CHECK(split.qkv_flops * 8 == Approx(one.qkv_flops));
  CHECK(split.attention_core_flops * 8 == Approx(one.attention_core_flops));
  CHECK(split.attn_out_flops * 8 == Approx(one.attn_out_flops));
}

TEST_CASE("MoE model FLOPs per token are 6 N_active plus the attention term") {
  // PaLM (Chowdhery et al. 2022, appendix B) with N the matmul weights a token uses.
  SECTION("Mixtral 8x7B with grouped-query attention") {
    const ModelSpec m = shipped_model("mixtral-8x7b");
    const double l = m.layers, h = m.hidden, s = m.seq_len, v = m.vocab, f = m.moe->expert_ffn_hidden;
    const double kv = double(m.kv_heads) * m.head_dim();
    const double per_layer = h * (h + 2 * kv) + h * h + h * m.moe->routed_experts + m.moe->top_k * 3 * h * f;
    const double palm = 6 * (l * per_layer + v * h) + 12 * l * s * h;
    CHECK(relative_error(clustersim::model_flops_per_token(m), palm) < 1e-12);
    CHECK(relative_error(clustersim::model_flops_per_token(m) * 16 * s,
                         clustersim::training_flops_per_iteration(m, 16, false)) < 1e-12);
  }
  SECTION("DeepSeek-V3 with MLA and three dense layers") {
    const ModelSpec m = shipped_model("deepseek-v3");
    const double h = 7168, a = 128, dq = 1536, dc = 512, dn = 128, dr = 64, dv = 128, s = m.seq_len;
    const double mla = h * dq + dq * a * (dn + dr) + h * (dc + dr) + dc * a * (dn + dv) + a * dv * h;
    const double dense_ffn = 3 * h * 18432, moe_ffn = h * 256 + (1 + 8) * 3 * h * 2048;
    const double n_active = 61 * mla + 3 * dense_ffn + 58 * moe_ffn + 129280 * h;
    // The multi-token prediction module (depth 1): one more MoE layer, its 2h x h projection and a
    // second pass through the output head (report section 2.2).
    REQUIRE(m.mtp_depth == 1);
    const double n_mtp = mla + moe_ffn + 2 * h * h + 129280 * h;
    const double palm = 6 * (n_active + n_mtp) + 6 * (61 + 1) * s * a * (dn + dr + dv);
    CHECK(relative_error(clustersim::model_flops_per_token(m), palm) < 1e-12);
    // Full recompute adds one forward of every layer: 3 dense and 58 MoE, and the MTP module's block.
    const double recompute = clustersim::training_flops_per_iteration(m, 4, true) -
                             clustersim::training_flops_per_iteration(m, 4, false);
    const double forwards = 3 * clustersim::layer_forward_flops(m, 0, 4, 1).total_flops() +
                            (58 + 1) * clustersim::layer_forward_flops(m, 3, 4, 1).total_flops();
    CHECK(relative_error(recompute, forwards) < 1e-12);
  }
}

TEST_CASE("Expert capacity is the capacity factor times an expert's uniform share") {
  const ModelSpec dropless = parse(kTiny);
  CHECK_FALSE(clustersim::expert_capacity_tokens(dropless, 4096));
  const ModelSpec capped = parse(tiny_with("  dropless: true\n", "  capacity_factor: 1.25\n"));
  REQUIRE(capped.moe->capacity_factor);
  // Switch Transformer: capacity = factor x tokens x top_k / experts = 1.25 x 4096 x 2 / 8.
  CHECK(clustersim::expert_capacity_tokens(capped, 4096) == Approx(1280));
  // Neither given: dropless by default.
  CHECK_FALSE(parse(tiny_with("  dropless: true\n", "")).moe->capacity_factor);
}

TEST_CASE("A small MoE model with MLA counts its parameters in closed form") {
  const ModelSpec m = parse(kTiny);
  const double h = 256, a = 4, dq = 64, dc = 32, dn = 32, dr = 16, dv = 32, f = 1024, fe = 128, V = 1000;
  const double attention = h * dq + dq * a * (dn + dr) + h * (dc + dr) + dc * a * (dn + dv) + a * dv * h + dq + dc + h;
  const double dense = attention + 3 * h * f + h;
  const double moe_base = attention + h * 8 + 1 * 3 * h * fe + h;  // router and the shared expert
  const double outside = 2 * V * h + h;
  CHECK(clustersim::parameter_count(m) == dense + 3 * (moe_base + 8 * 3 * h * fe) + outside);
  CHECK(clustersim::active_parameter_count(m) == dense + 3 * (moe_base + 2 * 3 * h * fe) + outside);
}

TEST_CASE("top_k above routed_experts names moe.top_k") {
  expect_error(tiny_with("  top_k: 2\n", "  top_k: 9\n"), "top_k: 9", "moe.top_k",
               "expected an integer from 1 to 8 experts (routed_experts)");
}

TEST_CASE("top_k below 1 names moe.top_k") {
  expect_error(tiny_with("  top_k: 2\n", "  top_k: 0\n"), "top_k: 0", "moe.top_k",
               "expected an integer from 1 to 8 experts (routed_experts)");
}

TEST_CASE("dense_layers beyond the layers names moe.dense_layers") {
  expect_error(tiny_with("  dense_layers: 1\n", "  dense_layers: 5\n"), "dense_layers: 5", "moe.dense_layers",
               "expected fewer than layers (4)");
  // All four dense leaves no MoE layer: rejected as well.
  expect_error(tiny_with("  dense_layers: 1\n", "  dense_layers: 4\n"), "dense_layers: 4", "moe.dense_layers",
               "expected fewer than layers (4)");
}

TEST_CASE("Both capacity_factor and dropless name moe.dropless") {
  expect_error(tiny_with("  dropless: true\n", "  capacity_factor: 1.0\n  dropless: true\n"), "dropless: true",
               "moe.dropless", "expected either capacity_factor or dropless, not both");
  expect_error(tiny_with("  dropless: true\n", "  dropless: false\n"), "dropless: false", "moe.dropless",
               "expected true");
}

TEST_CASE("Non-positive MoE and MLA sizes name their field") {
  struct Case {
    std::string from, to, field, expected;
  };
  const std::vector<Case> cases = {
      {"  routed_experts: 8\n", "  routed_experts: 0\n", "moe.routed_experts", "expected an integer from 1 to"},
      {"  expert_ffn_hidden: 128\n", "  expert_ffn_hidden: -128\n", "moe.expert_ffn_hidden",
       "expected an integer from 1 to"},
      {"  shared_experts: 1\n", "  shared_experts: -1\n", "moe.shared_experts", "expected an integer from 0"},
      {"  dense_layers: 1\n", "  dense_layers: -1\n", "moe.dense_layers", "expected an integer from 0"},
      {"  dropless: true\n", "  capacity_factor: 0\n", "moe.capacity_factor", "expected a number from 0.001 to 1000"},
      {"  node_limit: 2\n", "  node_limit: 0\n", "moe.node_limit", "expected an integer from 1 to"},
      {"  q_lora_rank: 64\n", "  q_lora_rank: 0\n", "attention.q_lora_rank", "expected an integer from 1 to"},
      {"  kv_lora_rank: 32\n", "  kv_lora_rank: -32\n", "attention.kv_lora_rank", "expected an integer from 1 to"},
      {"  qk_nope_head_dim: 32\n", "  qk_nope_head_dim: 0\n", "attention.qk_nope_head_dim",
       "expected an integer from 1 to"},
      {"  qk_rope_head_dim: 16\n", "  qk_rope_head_dim: 0\n", "attention.qk_rope_head_dim",
       "expected an integer from 1 to"},
      {"  v_head_dim: 32\n", "  v_head_dim: 0\n", "attention.v_head_dim", "expected an integer from 1 to"},
  };
  for (const Case& c : cases) {
    INFO(c.to);
    std::string at = c.to.substr(2, c.to.size() - 3);  // the edited line without indent or newline
    expect_error(tiny_with(c.from, c.to), at, c.field, c.expected);
  }
}

TEST_CASE("Unknown keys in moe and attention name the key") {
  expect_error(tiny_with("  top_k: 2\n", "  top_k: 2\n  experts_per_token: 2\n"), "experts_per_token: 2",
               "moe.experts_per_token", "unknown key");
  expect_error(tiny_with("  v_head_dim: 32\n", "  v_head_dim: 32\n  kv_heads: 4\n"), "  kv_heads: 4",
               "attention.kv_heads", "unknown key");
  // A standard attention block takes no MLA widths.
  expect_error(tiny_with("  type: mla\n", "  type: standard\n"), "q_lora_rank: 64", "attention.q_lora_rank",
               "unknown key");
  expect_error(tiny_with("  type: mla\n", "  type: latent\n"), "type: latent", "attention.type",
               "expected one of: standard, mla");
}

TEST_CASE("MLA takes no kv_heads") {
  expect_error(tiny_with("heads: 4\n", "heads: 4\nkv_heads: 4\n"), "kv_heads: 4", "kv_heads",
               "expected no kv_heads with attention type mla");
}

TEST_CASE("node_limit above top_k names moe.node_limit") {
  expect_error(tiny_with("  node_limit: 2\n", "  node_limit: 3\n"), "node_limit: 3", "moe.node_limit",
               "expected at most top_k (2)");
}

TEST_CASE("ffn_hidden is required with dense layers and refused without them") {
  expect_error(tiny_with("  dense_layers: 1\n", "  dense_layers: 0\n"), "ffn_hidden: 1024", "ffn_hidden",
               "expected no ffn_hidden: every layer is MoE");
  const UserError missing = clustersim::test::error_of([] { parse(tiny_with("ffn_hidden: 1024\n", "")); });
  CHECK(missing.field_path() == "ffn_hidden");
  CHECK_THAT(missing.what(), Contains("missing required field"));
}
