// The memory model and the GPU catalog: a layer's activations against Korthikanti et al.'s closed
// forms, Adam state per parameter, the first pipeline stage against Korthikanti Figure 1, and the
// shipped catalog's datasheet figures and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"
#include "topologies/cluster_spec.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/memory_model.hpp"

using clustersim::test::error_of;
using clustersim::test::shipped_catalog;

namespace {

using clustersim::ActivationLayout;
using clustersim::Bytes;
using clustersim::ModelSpec;
using clustersim::Recompute;
using clustersim::StageLoad;
using clustersim::UserError;
using clustersim::activation_bytes_per_layer;
using clustersim::stage_memory;
using clustersim::state_bytes;
using Catch::Matchers::Contains;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

ModelSpec gpt(int layers, int hidden, int heads, int ffn_hidden, int seq_len, int vocab) {
  ModelSpec m;
  m.name = "test";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = ffn_hidden;
  m.vocab = vocab;
  m.seq_len = seq_len;
  return m;
}

// Korthikanti et al. 2022, Figure 1 (published.yaml memory_per_gpu_gib), with the layouts of their
// Table 5: data parallel 1, seq 2048, vocab 51200. Figure 1 needs Table 5's microbatch 4 for the
// 22B model (microbatch 1 gives a quarter of 59.25 GiB) and its interleaving (v = 3) for 175B and
// 530B: the first stage holds L (1 + (p-1)/(p v)) layers' worth, i.e. p + (p-1)/v microbatches.
struct Figure1Row {
  std::string model;
  int layers, hidden, heads, ffn;
  int tp, pp, virtual_stages, microbatch;
  double params_and_optimizer_gib, activations_none_gib, activations_seqsel_gib;

  ModelSpec spec() const { return gpt(layers, hidden, heads, ffn, 2048, 51200); }
  double in_flight() const { return virtual_stages > 1 ? pp + double(pp - 1) / virtual_stages : pp; }
};
const std::vector<Figure1Row> kFigure1 = {
    {"megatron-22B", 48, 6144, 64, 24576, 8, 1, 1, 4, 45.56, 59.25, 9.56},
    {"gpt3-175B", 96, 12288, 96, 49152, 8, 8, 3, 1, 45.56, 66.84, 12.35},
    {"turing-530B", 105, 20480, 128, 81920, 8, 35, 3, 1, 31.64, 114.02, 23.08},
    {"megatron-1T", 128, 25600, 160, 102400, 8, 64, 1, 1, 32.96, 131.25, 26.56},
};

}  // namespace

TEST_CASE("A layer stores Korthikanti's activation bytes for each parallelism and recompute mode") {
  // s b h (34 + 5 a s/h) and its tensor-parallel forms, written out for s=8 b=2 h=16 a=4 t=2.
  const long s = 8, b = 2, h = 16, a = 4, t = 2;
  const ModelSpec m = gpt(1, h, a, 4 * h, s, 100);
  CHECK(activation_bytes_per_layer(m, b, 1, false, Recompute::none) == s * b * h * 34 + 5 * a * s * s * b);
  CHECK(activation_bytes_per_layer(m, b, t, false, Recompute::none) ==
        s * b * h * (10 + 24 / t) + 5 * a * s * s * b / t);
  CHECK(activation_bytes_per_layer(m, b, t, true, Recompute::none) == s * b * h * 34 / t + 5 * a * s * s * b / t);
  CHECK(activation_bytes_per_layer(m, b, t, false, Recompute::selective) == s * b * h * (10 + 24 / t));
  CHECK(activation_bytes_per_layer(m, b, t, true, Recompute::selective) == s * b * h * 34 / t);
  CHECK(activation_bytes_per_layer(m, b, t, false, Recompute::full) == 2 * s * b * h);
  // With sequence parallelism the stored layer input is the rank's sequence shard.
  CHECK(activation_bytes_per_layer(m, b, t, true, Recompute::full) == 2 * s * b * h / t);
  // The numbers themselves, so a wrong closed form above cannot hide.
  CHECK(activation_bytes_per_layer(m, b, 1, false, Recompute::none) == 11264);
  CHECK(activation_bytes_per_layer(m, b, t, true, Recompute::none) == 5632);
}

TEST_CASE("SwiGLU and grouped-query attention scale the split activations by ffn_hidden and kv_heads") {
  // s=8 b=2 h=16 a=4 kv=2 (head dim 4) f=32: Q 2sbh, K+V 4 s b (kv*4), projection input 2sbh,
  // SwiGLU gate+up 4sbf and down input 2sbf, all over t; 10 s b h whole; scores 5 a s^2 b / t.
  const long s = 8, b = 2, h = 16, a = 4, kv = 2, f = 32;
  ModelSpec m = gpt(1, h, a, f, s, 100);
  m.kv_heads = kv;
  m.ffn = clustersim::FfnType::swiglu;
  const long kv_width = kv * (h / a);
  CHECK(activation_bytes_per_layer(m, b, 1, false, Recompute::none) ==
        10 * s * b * h + 4 * s * b * h + 4 * s * b * kv_width + 6 * s * b * f + 5 * a * s * s * b);
  CHECK(activation_bytes_per_layer(m, b, 2, true, Recompute::selective) ==
        (10 * s * b * h + 4 * s * b * h + 4 * s * b * kv_width + 6 * s * b * f) / 2);
  // t = 4 > kv = 2: each rank keeps one whole KV head (width 4), not half of one.
  CHECK(activation_bytes_per_layer(m, b, 4, true, Recompute::selective) ==
        (10 * s * b * h + 4 * s * b * h + 6 * s * b * f) / 4 + 4 * s * b * (h / a));
}

TEST_CASE("Mixed-precision Adam holds 18 bytes per parameter and the distributed optimizer shards 12") {
  const double params = 1e9;
  const auto plain = state_bytes(params, 8, false);
  CHECK(plain.weights == Bytes(2e9));
  CHECK(plain.gradients == Bytes(4e9));
  CHECK(plain.optimizer == Bytes(12e9));
  CHECK(plain.total() == Bytes(18e9));
  // Megatron Core distributed-optimizer guide: 6 + 12/d bytes per parameter.
  const auto sharded = state_bytes(params, 8, true);
  CHECK(sharded.total() == Bytes((6 + 12.0 / 8) * params));
  CHECK(sharded.weights == plain.weights);
  CHECK(sharded.gradients == plain.gradients);
}

TEST_CASE("Stage memory adds embedding and output extras and the recompute workspace to the layers") {
  const long s = 8, b = 2, h = 16, a = 4, t = 2, v = 100;
  const ModelSpec m = gpt(4, h, a, 4 * h, s, v);
  const ActivationLayout layout{b, t, true, Recompute::selective};
  StageLoad stage;
  stage.params_on_rank = 1000;
  stage.layers = 2;
  stage.in_flight_microbatches = 3;

  const Bytes per_layer = s * b * h * 34 / t;
  const auto middle = stage_memory(m, layout, stage);
  CHECK(middle.activations == 3 * 2 * per_layer);
  CHECK(middle.recompute_workspace == 5 * a * s * s * b / t);  // one layer's attention scores
  CHECK(middle.weights + middle.gradients + middle.optimizer == 18 * 1000);
  CHECK(middle.total == 18 * 1000 + middle.activations + middle.recompute_workspace);

  // Korthikanti 4.4: embedding dropout mask s b h / t per in-flight microbatch on the first stage;
  // final LayerNorm and output-layer inputs 4 s b h / t and fp32 logits 4 s b V / t on the last.
  stage.first_stage = stage.last_stage = true;
  const auto both = stage_memory(m, layout, stage);
  CHECK(both.activations == 3 * (2 * per_layer + s * b * h / t + 4 * s * b * h / t + 4 * s * b * v / t));
}

TEST_CASE("First-stage activations reproduce Korthikanti Figure 1 within 10 percent") {
  for (const auto& row : kFigure1) {
    INFO(row.model);
    const ModelSpec m = row.spec();
    const int layers_per_stage = row.layers / row.pp;
    auto layers_gib = [&](bool sequence_parallel, Recompute r) {
      const Bytes per_layer = activation_bytes_per_layer(m, row.microbatch, row.tp, sequence_parallel, r);
      return double(per_layer) * layers_per_stage * row.in_flight() / kGiB;
    };
    // Figure 1 counts the transformer layers only.
    CHECK(layers_gib(false, Recompute::none) == Approx(row.activations_none_gib).epsilon(0.10));
    CHECK(layers_gib(true, Recompute::selective) == Approx(row.activations_seqsel_gib).epsilon(0.10));

    // The whole first stage, with Section 4.4's embedding and (p = 1) output extras, stays within 10%.
    StageLoad stage;
    stage.layers = layers_per_stage;
    stage.in_flight_microbatches = row.in_flight();
    stage.first_stage = true;
    stage.last_stage = row.pp == 1;
    const auto none = stage_memory(m, {row.microbatch, row.tp, false, Recompute::none}, stage);
    const auto seqsel = stage_memory(m, {row.microbatch, row.tp, true, Recompute::selective}, stage);
    CHECK(none.activations / kGiB == Approx(row.activations_none_gib).epsilon(0.10));
    CHECK(seqsel.activations / kGiB == Approx(row.activations_seqsel_gib).epsilon(0.10));
  }
}

TEST_CASE("Parameters and optimizer state reproduce Korthikanti Figure 1 within 10 percent") {
  // Figure 1 is 18 B per parameter of the stage's layer weight matrices, 12 h^2 per layer, over t:
  // it leaves out biases, norms and the embedding (which would add 2-11% to the first stage).
  for (const auto& row : kFigure1) {
    INFO(row.model);
    const double h = row.hidden;
    StageLoad stage;
    stage.params_on_rank = 12 * h * h * (row.layers / row.pp) / row.tp;
    const auto mem = stage_memory(row.spec(), {row.microbatch, row.tp, true, Recompute::selective}, stage);
    const double state_gib = double(mem.weights + mem.gradients + mem.optimizer) / kGiB;
    CHECK(state_gib == Approx(row.params_and_optimizer_gib).epsilon(0.10));
  }
}

TEST_CASE("The shipped GPU catalog has the datasheet peaks and memory") {
  const auto& catalog = shipped_catalog();
  const auto* a100 = catalog.find("A100-SXM-80GB");
  const auto* h100 = catalog.find("H100-SXM");
  REQUIRE(a100);
  REQUIRE(h100);
  CHECK(a100->peak_flops("bf16").value() == Approx(312e12));
  CHECK(h100->peak_flops("fp8").value() == Approx(1979e12));
  CHECK(a100->hbm_bytes == Bytes(80) * 1024 * 1024 * 1024);
  CHECK(h100->hbm_bandwidth_Bps == Approx(3.35e12));
  CHECK(catalog.names().size() == 9);  // with A100-PCIe-80GB, the serving validation's card
  const auto* pcie = catalog.find("A100-PCIe-80GB");
  REQUIRE(pcie);
  CHECK(pcie->hbm_bandwidth_Bps == Approx(1.935e12));  // NVIDIA's A100 PCIe 80GB datasheet
  for (const auto& name : catalog.names()) {
    INFO(name);
    CHECK(catalog.find(name)->peak_flops("bf16").has_value());  // every part trains in bf16
  }
}

TEST_CASE("An A100 has no fp8 and asking for it names the GPU and what it runs") {
  const auto& catalog = shipped_catalog();
  const auto* a100 = catalog.find("A100-SXM-80GB");
  REQUIRE(a100);
  CHECK_FALSE(a100->peak_flops("fp8").has_value());
  const auto asked = clustersim::YamlField::load_string("dtype: fp8\n", "run.yaml").child("dtype");
  const UserError e = error_of([&] { a100->peak_flops_or_fail("fp8", asked); });
  CHECK(e.file() == "run.yaml");
  CHECK(e.line() == 1);
  CHECK(e.field_path() == "dtype");
  CHECK_THAT(e.what(), Contains("A100-SXM-80GB") && Contains("bf16, fp16"));
}

TEST_CASE("An unknown GPU is not in the catalog") {
  const auto& catalog = shipped_catalog();
  CHECK(catalog.find("V100") == nullptr);
  const auto asked = clustersim::YamlField::load_string("gpu: V100\n", "c.yaml").child("gpu");
  const UserError e = error_of([&] { catalog.find_or_fail(asked); });
  CHECK(e.field_path() == "gpu");
  CHECK_THAT(e.what(), Contains("H100-SXM") && Contains("'V100'"));
}

TEST_CASE("Every shipped cluster names a GPU in the catalog") {
  namespace fs = std::filesystem;
  const auto& catalog = shipped_catalog();
  for (const auto& entry : fs::directory_iterator(clustersim::test::source_path("scenarios/clusters"))) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    CHECK(catalog.find(clustersim::load_cluster_spec(entry.path().string()).gpu) != nullptr);
  }
}

TEST_CASE("A negative TFLOP/s in the catalog is a UserError naming file line and field") {
  const std::string text =
      "gpus:\n"
      "  - name: X\n"
      "    peak_tflops:\n"
      "      bf16: -5\n"
      "    hbm_GiB: 80\n"
      "    hbm_bandwidth_TBps: 2\n"
      "    source: test\n";
  const auto root = clustersim::YamlField::load_string(text, "g.yaml");
  const UserError e = error_of([&] { clustersim::parse_gpu_catalog(root); });
  CHECK(e.file() == "g.yaml");
  CHECK(e.line() == 4);
  CHECK(e.field_path() == "gpus[0].peak_tflops.bf16");
  CHECK_THAT(e.what(), Contains("expected a number from 0.001 to 1e+06 TFLOP/s, got '-5'"));
}

TEST_CASE("A misspelt datatype and a duplicate GPU are UserErrors") {
  const std::string entry = "  - {name: X, peak_tflops: {bf16: 1}, hbm_GiB: 1, hbm_bandwidth_TBps: 1, source: s}\n";
  auto parse = [](const std::string& text) {
    clustersim::parse_gpu_catalog(clustersim::YamlField::load_string(text, "g.yaml"));
  };
  const UserError typo = error_of([&] { parse("gpus:\n  - {name: X, peak_tflops: {bf61: 1}, hbm_GiB: 1, "
                                              "hbm_bandwidth_TBps: 1, source: s}\n"); });
  CHECK(typo.field_path() == "gpus[0].peak_tflops.bf61");
  CHECK_THAT(typo.what(), Contains("unknown datatype"));
  const UserError dup = error_of([&] { parse("gpus:\n" + entry + entry); });
  CHECK(dup.line() == 3);
  CHECK(dup.field_path() == "gpus[1].name");
}

TEST_CASE("A catalog entry may give decimal HBM and a GEMM efficiency curve") {
  const std::string text =
      "gpus:\n"
      "  - name: X\n"
      "    peak_tflops: {bf16: 100}\n"
      "    hbm_GB: 80\n"
      "    hbm_bandwidth_TBps: 2\n"
      "    gemm_efficiency: {max_fraction: 0.8, half_gflop: 2, source: test}\n"
      "    source: test\n";
  const auto catalog = clustersim::parse_gpu_catalog(clustersim::YamlField::load_string(text, "g.yaml"));
  const auto* x = catalog.find("X");
  REQUIRE(x);
  CHECK(x->hbm_bytes == Bytes(80e9));
  REQUIRE(x->gemm_efficiency);
  // max_fraction * F / (F + half): half of 0.8 at F = 2 GFLOP, approaching 0.8 for large GEMMs.
  CHECK(x->gemm_efficiency->fraction_of_peak(2e9) == Approx(0.4));
  CHECK(x->gemm_efficiency->fraction_of_peak(2e15) == Approx(0.8).epsilon(1e-5));
}

TEST_CASE("Flash attention keeps a log-sum-exp per query and head instead of the 5 a s^2 b scores") {
  const clustersim::ModelSpec m = clustersim::load_model_spec(clustersim::test::source_path("scenarios/models/gpt3-175b.yaml"));
  clustersim::StageLoad load;
  load.layers = 1;
  const double t = 8, sb = 2048, a = 96;
  const clustersim::StageMemory unfused = clustersim::stage_memory(m, {1, 8, false, clustersim::Recompute::none, false, false}, load);
  const clustersim::StageMemory flash = clustersim::stage_memory(m, {1, 8, false, clustersim::Recompute::none, false, true}, load);
  CHECK(double(unfused.activations - flash.activations) == Approx(5 * a * 2048 * sb / t - 4 * a * sb / t).epsilon(1e-9));
  // Selective recompute already drops the scores: the two agree there.
  CHECK(clustersim::stage_memory(m, {1, 8, false, clustersim::Recompute::selective, false, false}, load).activations ==
        clustersim::stage_memory(m, {1, 8, false, clustersim::Recompute::selective, false, true}, load).activations);
}
