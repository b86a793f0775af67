// Model files and their counts: every shipped model loads; parameter counts match published sizes;
// FLOP counts per operation add up to Narayanan et al.'s closed form.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "support.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model.hpp"
#include "workloads/model_math.hpp"

namespace {

using clustersim::ModelSpec;
using clustersim::UserError;
using clustersim::YamlField;
using Catch::Matchers::Contains;

using clustersim::test::relative_error;
using clustersim::test::shipped_model;

// Narayanan et al., SC'21, Table 1 (also /work/shared/reference/published.yaml): V 51200, s 2048.
struct Table1Row {
  std::string file;
  double params_b;  // as printed, to 0.1 B
  int heads, hidden, layers;
};
const std::vector<Table1Row> kTable1 = {
    {"megatron-1.7b", 1.7, 24, 2304, 24},        {"megatron-3.6b", 3.6, 32, 3072, 30},
    {"megatron-7.5b", 7.5, 32, 4096, 36},        {"megatron-18.4b", 18.4, 48, 6144, 40},
    {"megatron-39.1b", 39.1, 64, 8192, 48},      {"megatron-76.1b", 76.1, 80, 10240, 60},
    {"megatron-145.6b", 145.6, 96, 12288, 80},   {"megatron-310.1b", 310.1, 128, 16384, 96},
    {"megatron-529.6b", 529.6, 128, 20480, 105}, {"megatron-1t", 1008.0, 160, 25600, 128},
};
constexpr double kV = 51200, kS = 2048;

}  // namespace

TEST_CASE("Every shipped model file loads and is named after its file") {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(clustersim::test::source_path("scenarios/models")))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 17);  // Table 1 (10), Korthikanti (3 not in it), Llama 3 (3), the 2T sketch
  for (const fs::path& path : files) {
    INFO(path.string());
    const ModelSpec m = clustersim::load_model_spec(path.string());
    CHECK(m.name == path.stem().string());
    CHECK(clustersim::parameter_count(m) > 1e9);
  }
}

TEST_CASE("Table 1 models match the printed shapes and Narayanan parameter counts") {
  for (const Table1Row& row : kTable1) {
    INFO(row.file);
    const ModelSpec m = shipped_model(row.file);
    REQUIRE(m.heads == row.heads);
    REQUIRE(m.hidden == row.hidden);
    REQUIRE(m.layers == row.layers);
    REQUIRE((m.vocab == kV && m.seq_len == kS && m.ffn_hidden == 4 * m.hidden && m.kv_heads == m.heads));
    const double l = m.layers, h = m.hidden;
    // Narayanan et al. SC'21, section 5.1: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)).
    const double narayanan = 12 * l * h * h * (1 + 13 / (12 * h) + (kV + kS) / (12 * l * h));
    const double count = clustersim::parameter_count(m);
    // It leaves out the final LayerNorm (weight + bias, 2h); every other weight agrees.
    CHECK(count - narayanan == Approx(2 * h).epsilon(1e-6));
    // The table prints 0.1 B: the count rounds to it (1.652 B prints as 1.7).
    CHECK(std::abs(count / 1e9 - row.params_b) <= 0.05);
  }
}

TEST_CASE("Llama 3 parameter counts are within 2 percent of the model cards") {
  // Meta's model cards: 8.03 B, 70.6 B, 405.9 B.
  const std::vector<std::pair<std::string, double>> cards = {
      {"llama3-8b", 8.03e9}, {"llama3-70b", 70.6e9}, {"llama3-405b", 405.9e9}};
  for (const auto& [file, published] : cards) {
    INFO(file);
    const double count = clustersim::parameter_count(shipped_model(file));
    INFO("count " << count << " published " << published);
    CHECK(relative_error(count, published) < 0.02);
  }
}

TEST_CASE("Nemotron-4 340B: an ungated squared-ReLU FFN in Llama's family, and its 340B parameters") {
  const ModelSpec m = shipped_model("nemotron4-340b");
  CHECK(m.ffn == clustersim::FfnType::squared_relu);
  // Llama's family with two FFN matrices: per layer Q, K, V (8 KV heads of 192), the output projection,
  // up and down, two weight-only norms; untied input and output embeddings and the final norm.
  const double l = m.layers, h = m.hidden, f = m.ffn_hidden, v = m.vocab, kv = 8.0 * 192;
  const double closed = l * (h * (h + 2 * kv) + h * h + 2 * h * f + 2 * h) + 2 * v * h + h;
  CHECK(relative_error(clustersim::parameter_count(m), closed) < 1e-12);
  CHECK(relative_error(clustersim::parameter_count(m), 340e9) < 0.01);  // the report's name for it
  // The layer computes up, the activation and down, with rotary positions and no gate.
  std::vector<std::string> names;
  for (const clustersim::ComputeOp& op : clustersim::layer_forward_ops(m, 1, 8, true)) names.push_back(op.name);
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  CHECK(has("ffn_up"));
  CHECK(has("squared_relu"));
  CHECK(has("ffn_down"));
  CHECK(has("rope"));
  CHECK_FALSE(has("ffn_gate"));
  CHECK_FALSE(has("gelu"));
}

TEST_CASE("Korthikanti models are within 1 percent of their nominal sizes") {
  // Korthikanti et al. 2022 name them by size: 22B, GPT-3 175B, Turing-NLG 530B.
  const std::vector<std::pair<std::string, double>> nominal = {
      {"megatron-22b", 22e9}, {"gpt3-175b", 175e9}, {"turing-nlg-530b", 530e9}};
  for (const auto& [file, size] : nominal) {
    INFO(file);
    CHECK(relative_error(clustersim::parameter_count(shipped_model(file)), size) < 0.01);
  }
}

TEST_CASE("Training FLOPs per op equal Narayanan's closed form for Table 1 models") {
  const long batch = 512;
  for (const Table1Row& row : kTable1) {
    INFO(row.file);
    const ModelSpec m = shipped_model(row.file);
    const double l = m.layers, h = m.hidden;
    // Narayanan et al. SC'21, section 5.1, with full recompute: 96 B s l h^2 (1 + s/6h + V/16lh).
    const double with_recompute = 96 * batch * kS * l * h * h * (1 + kS / (6 * h) + kV / (16 * l * h));
    CHECK(relative_error(clustersim::training_flops_per_iteration(m, batch, true), with_recompute) < 1e-9);
    // Without recompute the layers run 3 forwards instead of 4: 72 B s l h^2 (1 + s/6h) + 6 B s V h.
    const double without = 72 * batch * kS * l * h * h * (1 + kS / (6 * h)) + 6 * batch * kS * kV * h;
    CHECK(relative_error(clustersim::training_flops_per_iteration(m, batch, false), without) < 1e-9);
  }
}

TEST_CASE("Model FLOPs per token are 6N plus 12 l s h with N the matmul weights") {
  for (const std::string file : {"megatron-1t", "gpt3-175b", "llama3-8b", "llama3-405b", "nemotron4-340b"}) {
    INFO(file);
    const ModelSpec m = shipped_model(file);
    const double l = m.layers, h = m.hidden, s = m.seq_len, f = m.ffn_hidden, v = m.vocab;
    const double kv = double(m.kv_heads) * m.head_dim();
    const double ffn_weights = (m.ffn == clustersim::FfnType::swiglu ? 3 : 2) * h * f;
    const double matmul_weights = l * (h * (h + 2 * kv) + h * h + ffn_weights) + v * h;  // + output head
    const double palm = 6 * matmul_weights + 12 * l * s * h;  // Chowdhery et al. 2022, appendix B
    CHECK(relative_error(clustersim::model_flops_per_token(m), palm) < 1e-12);
    CHECK(relative_error(clustersim::model_flops_per_token(m) * 64 * s,
                         clustersim::training_flops_per_iteration(m, 64, false)) < 1e-12);
  }
}

TEST_CASE("Layer FLOPs split evenly over tensor parallel GPUs and scale with the microbatch") {
  const ModelSpec m = shipped_model("gpt3-175b");
  const auto one = clustersim::layer_forward_flops(m, 1, 1);
  const double h = m.hidden, s = m.seq_len;
  // Per sequence: QKV 6 s h^2, core 4 s^2 h, output 2 s h^2, FFN 16 s h^2 (Narayanan's 24 h^2 + 4 s h).
  CHECK(one.qkv_flops == Approx(6 * s * h * h));
  CHECK(one.attention_core_flops == Approx(4 * s * s * h));
  CHECK(one.attn_out_flops == Approx(2 * s * h * h));
  CHECK(one.ffn_flops == Approx(16 * s * h * h));
  const auto split = clustersim::layer_forward_flops(m, 4, 8);
  CHECK(split.qkv_flops * 8 == Approx(4 * one.qkv_flops));
  CHECK(split.attention_core_flops * 8 == Approx(4 * one.attention_core_flops));
  CHECK(split.attn_out_flops * 8 == Approx(4 * one.attn_out_flops));
  CHECK(split.ffn_flops * 8 == Approx(4 * one.ffn_flops));
  CHECK(clustersim::logits_forward_flops(m, 4, 8) * 8 == Approx(4 * 2 * s * h * m.vocab));
}

TEST_CASE("GQA layers replicate KV heads when tensor parallel exceeds kv_heads") {
  const ModelSpec m = shipped_model("llama3-8b");  // 32 heads of 128, 8 KV heads, SwiGLU ffn 14336
  const double h = m.hidden, s = m.seq_len, hd = m.head_dim();
  const auto one = clustersim::layer_forward_flops(m, 1, 1);
  CHECK(one.qkv_flops == Approx(2 * s * h * (h + 2 * 8 * hd)));
  CHECK(one.ffn_flops == Approx(6 * s * h * m.ffn_hidden));
  const auto eight = clustersim::layer_forward_flops(m, 1, 8);  // one KV head per GPU
  CHECK(eight.qkv_flops == Approx(one.qkv_flops / 8));
  const auto sixteen = clustersim::layer_forward_flops(m, 1, 16);  // 2 query heads + a KV replica
  CHECK(sixteen.qkv_flops == Approx(2 * s * h * hd * (2 + 2 * 1)));
  CHECK(sixteen.attention_core_flops == Approx(one.attention_core_flops / 16));
}

TEST_CASE("Heads that do not divide hidden name the file line and field") {
  const std::string text =
      "name: bad\n"
      "layers: 2\n"
      "hidden: 1000\n"
      "heads: 3\n"
      "ffn_hidden: 4000\n"
      "ffn: gelu\n"
      "vocab: 100\n"
      "seq_len: 16\n"
      "tied_embeddings: true\n";
  try {
    clustersim::parse_model_spec(YamlField::load_string(text, "bad-model.yaml"));
    FAIL("expected a UserError");
  } catch (const UserError& e) {
    INFO(e.what());
    CHECK(e.file() == "bad-model.yaml");
    CHECK(e.line() == 4);
    CHECK(e.field_path() == "heads");
    CHECK_THAT(e.what(), Contains("bad-model.yaml:4") && Contains("heads") && Contains("divisor of hidden"));
  }
}
