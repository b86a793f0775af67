// The compute model: roofline closed forms, the calibrated A100 and H100 against the published
// kernel measurements they were calibrated from (scenarios/gpus.yaml names each), a layer's ops
// against model_math's FLOP counts, kernel-table overrides and their errors, and how an
// uncalibrated GPU is reported.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model.hpp"
#include "workloads/model_math.hpp"

using clustersim::test::error_of;
using clustersim::test::shipped_catalog;
using clustersim::test::shipped_model;

namespace {

using namespace clustersim;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

/// A shipped GPU as a kernel benchmark sees it. These tests hold the curves against benchmarks,
/// which time kernels alone, so the catalog's in-training efficiency is left out.
const GpuModel& benchmarked_gpu(const std::string& name) {
  static std::map<std::string, GpuModel> gpus;
  auto it = gpus.find(name);
  if (it == gpus.end()) {
    GpuModel gpu = test::shipped_gpu(name);
    gpu.in_training_efficiency.reset();
    it = gpus.emplace(name, std::move(gpu)).first;
  }
  return it->second;
}

/// 100 TFLOP/s and 1 TB/s with every efficiency 1: times are closed forms.
GpuModel ideal_gpu() {
  GpuModel gpu;
  gpu.name = "ideal";
  gpu.peak_flops_per_s["bf16"] = 100e12;
  gpu.hbm_bandwidth_Bps = 1e12;
  gpu.gemm_efficiency = GemmEfficiency{1.0, 0.0, "test"};
  gpu.attention_efficiency = AttentionEfficiency{1.0, 0.0, "test"};
  gpu.hbm_efficiency = HbmEfficiency{1.0, "test"};
  return gpu;
}

ComputeOp op_of(ComputeKind kind, double flops, Bytes bytes) {
  ComputeOp op;
  op.name = "x";
  op.kind = kind;
  op.flops = flops;
  op.hbm_bytes = bytes;
  return op;
}

ComputeOp gemm_of(long m, long n, long k) {
  ComputeOp op = op_of(ComputeKind::gemm, 2.0 * m * n * k, 0);
  op.name = "gemm";
  op.shape = {m, n, k};
  return op;
}

/// TFLOP/s the model predicts for a GEMM, as a benchmark reports it.
double gemm_tflops(const GpuModel& gpu, long m, long n, long k) {
  const ComputeOp op = gemm_of(m, n, k);
  return op.flops / op_time(gpu, "bf16", op) / 1e12;
}

void check_within_5_percent(double predicted, double published) {
  INFO("predicted " << predicted << ", published " << published);
  CHECK(std::abs(predicted - published) / published <= 0.05);
}

}  // namespace

TEST_CASE("A pure-compute op at efficiency 1 takes its FLOPs over peak") {
  const ComputeOp op = op_of(ComputeKind::gemm, 3e12, 0);
  CHECK(op_time(ideal_gpu(), "bf16", op) == Approx(3e12 / 100e12));
}

TEST_CASE("A pure-memory op takes its bytes over the bandwidth") {
  const ComputeOp op = op_of(ComputeKind::elementwise, 0, 5'000'000'000);
  CHECK(op_time(ideal_gpu(), "bf16", op) == Approx(5e9 / 1e12));
}

TEST_CASE("An op takes the larger of its compute and memory times") {
  // 1 TFLOP is 10 ms at 100 TFLOP/s; 20 GB is 20 ms at 1 TB/s, 5 GB is 5 ms.
  CHECK(op_time(ideal_gpu(), "bf16", op_of(ComputeKind::gemm, 1e12, 20'000'000'000)) == Approx(0.020));
  CHECK(op_time(ideal_gpu(), "bf16", op_of(ComputeKind::gemm, 1e12, 5'000'000'000)) == Approx(0.010));
}

TEST_CASE("Efficiencies derate their side of the roofline") {
  GpuModel gpu = ideal_gpu();
  gpu.gemm_efficiency = GemmEfficiency{0.5, 0.0, "test"};
  gpu.hbm_efficiency = HbmEfficiency{0.25, "test"};
  CHECK(op_time(gpu, "bf16", op_of(ComputeKind::gemm, 1e12, 0)) == Approx(1e12 / (100e12 * 0.5)));
  CHECK(op_time(gpu, "bf16", op_of(ComputeKind::elementwise, 0, 1'000'000'000)) == Approx(1e9 / (1e12 * 0.25)));
  // A causal attention kernel executes half the counted square.
  ComputeOp attention = op_of(ComputeKind::attention, 1e12, 0);
  attention.shape = {1, 4096, 128};
  attention.causal = true;
  CHECK(op_time(gpu, "bf16", attention) == Approx(0.5e12 / 100e12));
}

TEST_CASE("The in-training efficiency slows every modelled op by its fraction, but not measured kernels") {
  GpuModel gpu = ideal_gpu();
  gpu.in_training_efficiency = InTrainingEfficiency{0.8, "test"};
  gpu.score_matmul_efficiency = ScoreMatmulEfficiency{1.0, "test"};
  CHECK(op_time(gpu, "bf16", op_of(ComputeKind::gemm, 1e12, 0)) == Approx(1e12 / 100e12 / 0.8));
  CHECK(op_time(gpu, "bf16", op_of(ComputeKind::optimizer, 0, 1'000'000'000)) == Approx(1e9 / 1e12 / 0.8));
  ComputeOp scores = op_of(ComputeKind::gemm, 1e12, 0);
  scores.score_bytes = 1'000'000'000;
  CHECK(op_time(gpu, "bf16", scores) == Approx((1e12 / 100e12 + 1e9 / 1e12) / 0.8));
  KernelTable measured;
  REQUIRE(measured.add("ideal", "gemm", "bf16", {64, 64, 64}, 2e-3));
  CHECK(op_time(gpu, "bf16", gemm_of(64, 64, 64), &measured) == Approx(2e-3));
}

TEST_CASE("The GEMM efficiency curve rises monotonically and saturates at max_fraction") {
  for (const char* name : {"A100-SXM-80GB", "H100-SXM", "H200-SXM", "MI355X"}) {
    INFO(name);
    const GemmEfficiency& e = benchmarked_gpu(name).gemm_efficiency.value();
    double previous = 0;
    for (double flops = 1e6; flops <= 1e16; flops *= 2) {
      const double f = e.fraction_of_peak(flops);
      CHECK(f > previous);
      CHECK(f < e.max_fraction);
      previous = f;
    }
    CHECK(e.fraction_of_peak(1e16) == Approx(e.max_fraction).epsilon(1e-5));
  }
}

TEST_CASE("The calibrated H100 reproduces the published bf16 GEMM throughputs within 5%") {
  const GpuModel& h100 = benchmarked_gpu("H100-SXM");
  // OpenXLA's measured sm_90 matmul table (matmul_interpolator_data.h, tensorflow commit 372d578b):
  // the two calibration points and one more.
  check_within_5_percent(gemm_tflops(h100, 2048, 2048, 2048), 632.0);
  check_within_5_percent(gemm_tflops(h100, 4096, 4096, 4096), 783.3);
  check_within_5_percent(gemm_tflops(h100, 1024, 2048, 2048), 524.3);
  // Bekman, ml-engineering, Maximum Achievable Matmul FLOPS table (H100 SXM, two software versions).
  check_within_5_percent(gemm_tflops(h100, 2048, 2048, 13312), 794.5);
  check_within_5_percent(gemm_tflops(h100, 6144, 17920, 2816), 792.1);
}

TEST_CASE("8-bit training keeps attention, the output head and the router in bf16") {
  const GpuModel& h100 = benchmarked_gpu("H100-SXM");
  const ModelSpec m = shipped_model("llama3-70b");
  for (const ComputeOp& op : layer_forward_ops(m, 1, 8, true)) {
    INFO(op.name);
    const bool sixteen = op.kind == ComputeKind::attention;
    if (op.kind == ComputeKind::gemm || sixteen) {
      const Seconds fp8 = op_time(h100, "fp8", op), bf16 = op_time(h100, "bf16", op);
      if (sixteen) CHECK(fp8 == bf16);
      else CHECK(fp8 < bf16);
    }
  }
  const ComputeOp logits = logits_forward_op(m, 1, 8);
  CHECK(op_time(h100, "fp8", logits) == op_time(h100, "bf16", logits));
  for (const ComputeOp& op : backward_ops({logits})) CHECK(op_time(h100, "fp8", op) == op_time(h100, "bf16", op));
}

TEST_CASE("The cross-entropy streams Megatron's passes over each logit of its vocabulary shard") {
  // GPT-3 175B, microbatch 1, tp 8: 2048 tokens x 51200 / 8 logits. Forward: cast 6, max 4, subtract
  // 8, exp 8, sum 4, normalise 8; backward: scale 8, cast back 6.
  const CrossEntropyOps ce = cross_entropy_ops(shipped_model("gpt3-175b"), 1, 8);
  const double logits = 2048.0 * 51200 / 8;
  CHECK(ce.forward.hbm_bytes == Bytes(38 * logits));
  CHECK(ce.backward.hbm_bytes == Bytes(14 * logits));
  CHECK(ce.backward.pass == OpPass::backward_input);
}

TEST_CASE("The optimizer step streams Megatron's passes over each parameter") {
  // Clip-norm read 4; Adam reads 16 and writes 12; master to 16-bit copy 6; zeroing an fp32 gradient
  // buffer 4. fp16: zeroing its 16-bit buffer 2, casting it to fp32 main gradients 6, and the
  // unscale-and-check 8.
  CHECK(optimizer_op(1e9, 4, false).hbm_bytes == Bytes(42e9));
  CHECK(optimizer_op(1e9, 2, true).hbm_bytes == Bytes(54e9));
}

TEST_CASE("The calibrated A100 reproduces the published fp16 GEMM throughputs within 5%") {
  const GpuModel& a100 = benchmarked_gpu("A100-SXM-80GB");
  // EleutherAI/cookbook (Anthony et al. 2024) sizing/results/gemm_data/mm/m_sweep/a100.out: the two
  // calibration points and one more.
  check_within_5_percent(gemm_tflops(a100, 2048, 4096, 2048), 193.2);
  check_within_5_percent(gemm_tflops(a100, 4096, 4096, 4096), 239.1);
  check_within_5_percent(gemm_tflops(a100, 8192, 4096, 8192), 251.5);
  // Horace He (thonking.ai): cuBLAS 8192^3 with random inputs.
  check_within_5_percent(gemm_tflops(a100, 8192, 8192, 8192), 257);
  // The same cookbook's Megatron-shaped GEMMs (h_sweep.out, 8192 tokens, tensor parallel 8, slowest
  // of 200 runs): GPT-3 175B's QKV and FFN down-projection.
  check_within_5_percent(gemm_tflops(a100, 8192, 3 * 12288 / 8, 12288), 251.0);
  check_within_5_percent(gemm_tflops(a100, 8192, 12288, 4 * 12288 / 8), 246.8);
}

TEST_CASE("The calibrated A100 reproduces unfused attention's batched matmuls within 6%") {
  // EleutherAI/cookbook sizing/results/transformer_data/h_sweep.out, tensor parallel 8: 128 heads of
  // width h / 128, microbatch 4, sequence 2048, so 64 (sequence, head) pairs per GPU. Measured
  // TFLOP/s of QK^T and of scores x V; the model times both, as one layer's forward runs them.
  struct Point {
    long hidden;
    double qk_tflops, av_tflops;
  };
  const GpuModel& a100 = benchmarked_gpu("A100-SXM-80GB");
  for (const Point& p : std::vector<Point>{{8192, 57.6, 77.1}, {12288, 76.4, 102.2}, {16384, 92.6, 134.4},
                                           {20480, 104.4, 139.7}, {24576, 112.1, 163.2}}) {
    INFO("hidden " << p.hidden);
    ModelSpec m;
    m.hidden = p.hidden;
    m.heads = m.kv_heads = 128;
    m.ffn_hidden = 4 * p.hidden;
    m.vocab = 1;
    m.seq_len = 2048;
    double model_s = 0, flops = 0;
    for (const ComputeOp& op : layer_forward_ops(m, 4, 8, false, AttentionKernel::unfused))
      if (op.score_bytes > 0) {
        model_s += op_time(a100, "fp16", op);
        flops = op.flops;  // QK^T and scores x V do the same FLOPs
      }
    const double measured_s = flops / (p.qk_tflops * 1e12) + flops / (p.av_tflops * 1e12);
    INFO("model " << model_s * 1e3 << " ms, measured " << measured_s * 1e3 << " ms");
    CHECK(std::abs(model_s - measured_s) / measured_s <= 0.06);
  }
}

TEST_CASE("Calibrated flash attention reproduces FlashAttention-2 forward plus backward within 5%") {
  // Dao 2023 (arXiv:2307.08691) Figures 4d (A100) and 7d (H100): causal, head dim 128, 16 heads,
  // batch 16k / seq_len, TFLOP/s counted as the paper does: 3.5x the forward, causal = half square.
  struct Point {
    const char* gpu;
    int seq_len;
    double tflops;
  };
  const std::vector<Point> points = {
      {"A100-SXM-80GB", 512, 99},  {"A100-SXM-80GB", 1024, 133}, {"A100-SXM-80GB", 2048, 155},
      {"A100-SXM-80GB", 4096, 173}, {"A100-SXM-80GB", 8192, 182}, {"A100-SXM-80GB", 16384, 189},
      {"H100-SXM", 512, 163},       {"H100-SXM", 1024, 221},      {"H100-SXM", 2048, 265},
      {"H100-SXM", 4096, 294},      {"H100-SXM", 8192, 308},      {"H100-SXM", 16384, 328},
  };
  for (const Point& p : points) {
    INFO(p.gpu << " at sequence length " << p.seq_len);
    ModelSpec m;
    m.hidden = 2048;
    m.heads = m.kv_heads = 16;
    m.ffn_hidden = 8192;
    m.vocab = 1;
    m.seq_len = p.seq_len;
    const int batch = 16384 / p.seq_len;
    std::vector<ComputeOp> ops = layer_forward_ops(m, batch, 1, false);
    const ComputeOp forward = *std::find_if(ops.begin(), ops.end(), [](const auto& op) { return op.kind == ComputeKind::attention; });
    const ComputeOp backward = backward_ops({forward}).front();
    const GpuModel& gpu = benchmarked_gpu(p.gpu);
    const Seconds t = op_time(gpu, "bf16", forward) + op_time(gpu, "bf16", backward);
    check_within_5_percent(3.5 * (forward.flops / 2) / t / 1e12, p.tflops);
  }
}

TEST_CASE("Calibrated element-wise ops stream at the published bandwidth") {
  // RRZE-HPC gpu-benches gpu-stream, SCALE kernel at full occupancy: A100 80GB 1737 GB/s; the H100
  // value is its PCIe part's fraction, 1704 of 2000 GB/s.
  const ComputeOp op = op_of(ComputeKind::elementwise, 0, 10'000'000'000);
  check_within_5_percent(1e10 / op_time(benchmarked_gpu("A100-SXM-80GB"), "bf16", op) / 1e9, 1737);
  const GpuModel& h100 = benchmarked_gpu("H100-SXM");
  check_within_5_percent(1e10 / op_time(h100, "bf16", op) / h100.hbm_bandwidth_Bps, 1704.0 / 2000.0);
}

TEST_CASE("A layer's GEMM and attention FLOPs add up to model_math's count") {
  struct Case {
    const char* model;
    int microbatch, tp;
  };
  // Llama 3 8B at tp 16 holds a replica of one of its 8 KV heads per GPU.
  for (const Case& c : std::vector<Case>{{"gpt3-175b", 1, 8}, {"megatron-1.7b", 4, 1}, {"llama3-70b", 2, 8}, {"llama3-8b", 1, 16}}) {
    INFO(c.model << " microbatch " << c.microbatch << " tp " << c.tp);
    const ModelSpec m = shipped_model(c.model);
    const LayerFlops want = layer_forward_flops(m, c.microbatch, c.tp);
    double qkv = 0, attention = 0, attn_out = 0, ffn = 0, other = 0;
    for (const ComputeOp& op : layer_forward_ops(m, c.microbatch, c.tp, true)) {
      if (op.name == "qkv") qkv += op.flops;
      else if (op.name == "attention") attention += op.flops;
      else if (op.name == "attn_out") attn_out += op.flops;
      else if (op.name.rfind("ffn_", 0) == 0) ffn += op.flops;
      else other += op.flops;
    }
    CHECK(qkv == Approx(want.qkv_flops));
    CHECK(attention == Approx(want.attention_core_flops));
    CHECK(attn_out == Approx(want.attn_out_flops));
    CHECK(ffn == Approx(want.ffn_flops));
    CHECK(other == 0);  // element-wise FLOPs are free, as model_math counts
  }
}

TEST_CASE("Backward ops mirror the forward ops with twice the GEMM FLOPs") {
  const ModelSpec m = shipped_model("gpt3-175b");
  const auto forward = layer_forward_ops(m, 1, 8, true);
  const auto backward = backward_ops(forward);
  double f_gemm = 0, b_gemm = 0, f_attention = 0, b_attention = 0;
  for (const auto& op : forward) (op.kind == ComputeKind::gemm ? f_gemm : f_attention) += op.flops;
  for (const auto& op : backward) (op.kind == ComputeKind::gemm ? b_gemm : b_attention) += op.flops;
  CHECK(b_gemm == Approx(2 * f_gemm));
  CHECK(b_attention == Approx(2.5 * f_attention));  // FlashAttention-2: five matmuls to two
  // Reverse order: the last forward op (the FFN's dropout + residual) is differentiated first.
  CHECK(backward.front().name == forward.back().name + ".bwd");
  CHECK(backward.front().hbm_bytes == 2 * forward.back().hbm_bytes);
  // qkv: forward 2048 x 4608 x 12288; dgrad 2048 x 12288 x 4608; wgrad 12288 x 4608 x 2048.
  const auto dgrad = std::find_if(backward.begin(), backward.end(), [](const auto& op) { return op.name == "qkv.dgrad"; });
  REQUIRE(dgrad != backward.end());
  CHECK(dgrad->pass == OpPass::backward_input);
  CHECK(dgrad->shape == OpShape{2048, 12288, 4608});
  CHECK((dgrad + 1)->name == "qkv.wgrad");
  CHECK((dgrad + 1)->pass == OpPass::backward_weight);
  CHECK((dgrad + 1)->shape == OpShape{12288, 4608, 2048});
}

TEST_CASE("Sequence parallelism divides norm and residual traffic by the tensor-parallel size") {
  const ModelSpec m = shipped_model("gpt3-175b");
  const auto plain = layer_forward_ops(m, 1, 8, false);
  const auto sp = layer_forward_ops(m, 1, 8, true);
  REQUIRE(plain.size() == sp.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    INFO(plain[i].name);
    const bool sequence_region = plain[i].name.rfind("norm", 0) == 0 || plain[i].name.rfind("dropout", 0) == 0;
    CHECK(sp[i].hbm_bytes * (sequence_region ? 8 : 1) == plain[i].hbm_bytes);
  }
  // norm1 on 2048 tokens of 12288: read and write 2 bytes each.
  CHECK(plain.front().hbm_bytes == Bytes(4) * 2048 * 12288);
}

TEST_CASE("A kernel-table row overrides the model for its exact shape only") {
  const GpuModel& a100 = benchmarked_gpu("A100-SXM-80GB");
  const ComputeOp qkv = layer_forward_ops(shipped_model("gpt3-175b"), 1, 8, true)[1];
  REQUIRE(qkv.name == "qkv");
  const KernelTable table = parse_kernel_table(
      "gpu,op,dtype,m,n,k,time_us\nA100-SXM-80GB,qkv,bf16,2048,4608,12288,1234.5\n", "k.csv");
  const OpTime measured = estimate_op_time(a100, "bf16", qkv, &table);
  CHECK(measured.source == TimeSource::kernel_table);
  CHECK(measured.seconds == Approx(1234.5e-6));
  CHECK(op_time(a100, "bf16", qkv, &table) == Approx(1234.5e-6));
  ComputeOp other = qkv;
  other.shape.m = 4096;
  CHECK(estimate_op_time(a100, "bf16", other, &table).source == TimeSource::calibrated);
  CHECK(estimate_op_time(a100, "fp16", qkv, &table).source == TimeSource::calibrated);
}

TEST_CASE("A kernel table may order its columns freely and carry comments") {
  const KernelTable table = parse_kernel_table(
      "# measured with nsys\ntime_us, op, gpu, dtype, k, n, m\n\n  10 , attention , H100-SXM , bf16 , 128 , 2048 , 16\n",
      "k.csv");
  REQUIRE(table.size() == 1);
  CHECK(table.find("H100-SXM", "attention", "bf16", OpShape{16, 2048, 128}).value() == Approx(10e-6));
}

TEST_CASE("A malformed kernel-table row is a UserError naming file line and column") {
  const std::string header = "gpu,op,dtype,m,n,k,time_us\n";
  auto error = [&](const std::string& rows) { return error_of([&] { parse_kernel_table(header + rows, "k.csv"); }); };
  const UserError letters = error("X,qkv,bf16,2048,4608,12288,1\nX,qkv,bf16,2k,4608,12288,1\n");
  CHECK(letters.file() == "k.csv");
  CHECK(letters.line() == 3);
  CHECK(letters.field_path() == "m");
  CHECK_THAT(letters.what(), Contains("'2k'"));
  const UserError negative = error("X,qkv,bf16,1,2,3,-5\n");
  CHECK(negative.line() == 2);
  CHECK(negative.field_path() == "time_us");
  // A finite but absurd kernel time would overflow the iteration: times run from 1 ns to 1000 s.
  const UserError huge = error("X,qkv,bf16,1,2,3,1e308\n");
  CHECK(huge.field_path() == "time_us");
  CHECK_THAT(huge.what(), Contains("expected a number from 0.001 to 1e+09 us; got '1e308'"));
  const UserError short_row = error("X,qkv,bf16,1,2,3\n");
  CHECK(short_row.field_path() == "time_us");
  const UserError empty = error("X,,bf16,1,2,3,4\n");
  CHECK(empty.field_path() == "op");
  const UserError twice = error("X,qkv,bf16,1,2,3,4\nX,qkv,bf16,1,2,3,5\n");
  CHECK(twice.line() == 3);
  CHECK_THAT(twice.what(), Contains("twice"));
  const UserError column = error_of([] { parse_kernel_table("gpu,op,dtype,m,n,k,time_ms\n", "k.csv"); });
  CHECK(column.line() == 1);
  CHECK(column.field_path() == "time_ms");
  const UserError missing = error_of([] { parse_kernel_table("gpu,op,dtype,m,n,k\n", "k.csv"); });
  CHECK(missing.field_path() == "time_us");
}

TEST_CASE("A kernel table loads from a file and a missing file is a UserError") {
  const std::string path = test::temp_file("gpu,op,dtype,m,n,k,time_us\nB200,logits,bf16,1,2,3,7\n", ".csv");
  CHECK(load_kernel_table(path).size() == 1);
  CHECK(error_of([] { load_kernel_table("/nonexistent/kernels.csv"); }).file() == "/nonexistent/kernels.csv");
}

TEST_CASE("An uncalibrated GPU is timed at peak and flagged and op_time refuses it") {
  // GB200 has datasheet figures but no GEMM calibration: estimate_op_time falls back to efficiency 1
  // and says so; op_time names the catalog entry to calibrate.
  const GpuModel& gb200 = benchmarked_gpu("GB200");
  REQUIRE_FALSE(gb200.gemm_efficiency);
  const ComputeOp op = gemm_of(8192, 8192, 8192);
  const OpTime estimate = estimate_op_time(gb200, "bf16", op);
  CHECK(estimate.source == TimeSource::uncalibrated);
  CHECK(estimate.seconds == Approx(op.flops / 2500e12));
  const UserError e = error_of([&] { op_time(gb200, "bf16", op); });
  CHECK_THAT(e.file(), EndsWith("gpus.yaml"));
  CHECK(e.line() > 0);
  CHECK(e.field_path() == "gpus[5].gemm_efficiency");
  CHECK_THAT(e.what(), Contains("GB200"));
  // Measured times make it usable op by op.
  KernelTable table;
  REQUIRE(table.add("GB200", "gemm", "bf16", op.shape, 1e-3));
  CHECK(op_time(gb200, "bf16", op, &table) == Approx(1e-3));
}

namespace {

/// The UserError of a one-GPU catalog whose sixth line is `entry`.
UserError catalog_error(const std::string& entry) {
  const std::string text =
      "gpus:\n"
      "  - name: X\n"
      "    peak_tflops: {bf16: 100}\n"
      "    hbm_GB: 80\n"
      "    hbm_bandwidth_TBps: 2\n"
      "    " + entry + "\n"
      "    source: test\n";
  return error_of([&] { parse_gpu_catalog(YamlField::load_string(text, "g.yaml")); });
}

}  // namespace

TEST_CASE("A catalog efficiency above 1 is a UserError at its field") {
  const UserError e = catalog_error("hbm_efficiency: {fraction: 1.2, source: test}");
  CHECK(e.field_path() == "gpus[0].hbm_efficiency.fraction");
  CHECK(e.line() == 6);
}

TEST_CASE("An in-training efficiency of 0 is a UserError at its field") {
  const UserError e = catalog_error("in_training_efficiency: {fraction: 0, source: test}");
  CHECK(e.field_path() == "gpus[0].in_training_efficiency.fraction");
  CHECK(e.line() == 6);
}

TEST_CASE("Unfused attention does the flash kernel's GEMM FLOPs and moves the scores through HBM") {
  // GPT-3 175B, microbatch 1, tp 8: 12 heads per GPU, s = 2048, so 12 x 2048^2 scores per layer.
  const ModelSpec m = shipped_model("gpt3-175b");
  auto core = [](const std::vector<ComputeOp>& ops) {
    double flops = 0, bytes = 0;
    for (const ComputeOp& op : ops)
      if (op.attention_core) {
        flops += op.flops;
        if (op.kind == ComputeKind::elementwise) bytes += static_cast<double>(op.hbm_bytes);
      }
    return std::pair{flops, bytes};
  };
  const auto flash = core(layer_forward_ops(m, 1, 8, false, AttentionKernel::flash));
  const auto unfused = core(layer_forward_ops(m, 1, 8, false, AttentionKernel::unfused));
  CHECK(unfused.first == Approx(flash.first).epsilon(1e-12));
  // Softmax reads and writes 2-byte scores (4 B); dropout reads, writes and keeps a 1-byte mask (5 B).
  CHECK(unfused.second == Approx(12.0 * 2048 * 2048 * (4 + 5)).epsilon(1e-12));
  // Its backward GEMMs are both input gradients: there is no weight in QK^T or scores x V.
  for (const ComputeOp& op : backward_ops(layer_forward_ops(m, 1, 8, false, AttentionKernel::unfused)))
    if (op.name.rfind("attn_scores", 0) == 0 || op.name.rfind("attn_context", 0) == 0)
      CHECK(op.pass == OpPass::backward_input);
  const GpuModel& a100 = benchmarked_gpu("A100-SXM-80GB");
  double t_flash = 0, t_unfused = 0;
  for (const ComputeOp& op : layer_forward_ops(m, 1, 8, false, AttentionKernel::flash)) t_flash += op_time(a100, "bf16", op);
  for (const ComputeOp& op : layer_forward_ops(m, 1, 8, false, AttentionKernel::unfused))
    t_unfused += op_time(a100, "bf16", op);
  CHECK(t_unfused > t_flash);
}

namespace {

/// Forward plus backward TFLOP/s of the flash-attention core at one sequence length, counted as the
/// benchmarks do: 3.5x the forward's executed FLOPs (causal = half of model_math's square).
double flash_fwd_bwd_tflops(const GpuModel& gpu, int seq_len, int heads, int batch) {
  ModelSpec m;
  m.heads = m.kv_heads = heads;
  m.hidden = heads * 128;  // head dim 128
  m.ffn_hidden = 4 * m.hidden;
  m.vocab = 1;
  m.seq_len = seq_len;
  std::vector<ComputeOp> ops = layer_forward_ops(m, batch, 1, false);
  const ComputeOp forward = *std::find_if(ops.begin(), ops.end(), [](const auto& op) { return op.kind == ComputeKind::attention; });
  const ComputeOp backward = backward_ops({forward}).front();
  const Seconds t = op_time(gpu, "bf16", forward) + op_time(gpu, "bf16", backward);
  return 3.5 * (forward.flops / 2) / t / 1e12;
}

/// Forward + backward from a benchmark's separate forward and backward TFLOP/s (backward 2.5x FLOPs).
double fwd_bwd_of(double forward_tflops, double backward_tflops) {
  return 3.5 / (1 / forward_tflops + 2.5 / backward_tflops);
}

void check_within(double predicted, double published, double tolerance) {
  INFO("predicted " << predicted << ", published " << published << ", tolerance " << tolerance);
  CHECK(std::abs(predicted - published) / published <= tolerance);
}

}  // namespace

TEST_CASE("The calibrated H200 reproduces its GEMM and cuDNN attention measurements within 5%") {
  const GpuModel& h200 = benchmarked_gpu("H200-SXM");
  // GEMM: the H100's OpenXLA fit (same GH100 die), and Bekman's MAMF note "H200 is the same".
  check_within_5_percent(gemm_tflops(h200, 2048, 2048, 2048), 632.0);
  check_within_5_percent(gemm_tflops(h200, 4096, 4096, 4096), 783.3);
  check_within_5_percent(gemm_tflops(h200, 2048, 2048, 13312), 794.5);
  // cudnn-frontend 3929da2 h200_919_only_cudnn/llama3.1: cuDNN 9.19.1, causal, batch 1, 64 heads.
  // 2k and 8k are the fit; 4k, 16k and 32k the check.
  struct Point {
    int seq_len;
    double fwd, bwd;
  };
  for (const Point& p : std::vector<Point>{{2048, 484, 370}, {4096, 591, 474}, {8192, 644, 541}, {16384, 673, 579}, {32768, 688, 581}}) {
    INFO("sequence length " << p.seq_len);
    check_within_5_percent(flash_fwd_bwd_tflops(h200, p.seq_len, 64, 1), fwd_bwd_of(p.fwd, p.bwd));
  }
  // RMSNorm forward 8192 x 8192 bf16, torch.compile: 4176 GB/s.
  const ComputeOp op = op_of(ComputeKind::elementwise, 0, 10'000'000'000);
  check_within_5_percent(1e10 / op_time(h200, "bf16", op) / 1e9, 4176.3);
}

TEST_CASE("The calibrated GB200 reproduces cuDNN attention to 16k and its RMSNorm bandwidth") {
  const GpuModel& gb200 = benchmarked_gpu("GB200");
  // cudnn-frontend 3929da2 llama3.1/gb200: cuDNN 9.22.0, causal, batch 2, 64 heads. 2k and 8k are the
  // fit, 4k the check within 5%. At 16k the measured backward stops gaining (1332 -> 1328 TFLOP/s)
  // while the curve must still rise: 7% there, said so in the catalog's source.
  struct Point {
    int seq_len;
    double fwd, bwd, tolerance;
  };
  for (const Point& p : std::vector<Point>{{2048, 1097, 885, 0.05}, {4096, 1408, 1148, 0.05}, {8192, 1574, 1332, 0.05}, {16384, 1708, 1328, 0.07}}) {
    INFO("sequence length " << p.seq_len);
    check_within(flash_fwd_bwd_tflops(gb200, p.seq_len, 64, 2), fwd_bwd_of(p.fwd, p.bwd), p.tolerance);
  }
  // cuDNN RMSNorm forward 16384 x 4096 bf16: 6424.6 GB/s.
  const ComputeOp op = op_of(ComputeKind::elementwise, 0, 10'000'000'000);
  check_within_5_percent(1e10 / op_time(gb200, "bf16", op) / 1e9, 6424.6);
}

TEST_CASE("The calibrated B200 reproduces cuDNN attention at 2k and 8k, within the catalog's stated gaps elsewhere") {
  // cudnn-frontend bb37575 artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv, pyt_cudnn: cuDNN
  // 9.13.1, causal, batch 1, 128 query heads. 2k and 8k are the fit; the measured rate rises faster
  // than the curve to 8k and flattens after it, so 4k reads 10% under and 16k 17% over (gpus.yaml).
  struct Point {
    int seq_len;
    double fwd, bwd, tolerance;
  };
  for (const Point& p : std::vector<Point>{{2048, 478.921, 371.486, 0.01}, {8192, 1171.278, 942.509, 0.01},
                                           {4096, 855.678, 701.265, 0.11}, {16384, 1332.415, 1074.776, 0.18}}) {
    INFO("sequence length " << p.seq_len);
    check_within(flash_fwd_bwd_tflops(benchmarked_gpu("B200"), p.seq_len, 128, 1), fwd_bwd_of(p.fwd, p.bwd), p.tolerance);
  }
}

TEST_CASE("The calibrated MI355X reproduces PyTorch GEMMs, MAMF and AITER attention within 5%") {
  const GpuModel& mi355x = benchmarked_gpu("MI355X");
  // HipKittens f09e968 mi355x_bf16_gemm.json, PyTorch: 4096^3 and 8192^3 the fit, 16384^3 the check;
  // Bekman's MAMF 1565.0 at 12288x8192x8192 (ROCm 7.0.2) the second check.
  check_within_5_percent(gemm_tflops(mi355x, 4096, 4096, 4096), 1138.5);
  check_within_5_percent(gemm_tflops(mi355x, 8192, 8192, 8192), 1521.3);
  check_within_5_percent(gemm_tflops(mi355x, 16384, 16384, 16384), 1559.8);
  check_within_5_percent(gemm_tflops(mi355x, 12288, 8192, 8192), 1565.0);
  // AITER flash_attn_func (HipKittens' reference), causal, batch 16, 16 heads: 2k and 8k the fit,
  // 4k and 16k the check. 1k lies 15% below the curve, which the catalog's source says.
  struct Point {
    int seq_len;
    double fwd, bwd;
  };
  for (const Point& p : std::vector<Point>{{2048, 876.3, 673.1}, {4096, 1069.0, 876.8}, {8192, 1173.2, 1034.1}, {16384, 1247.4, 1108.7}}) {
    INFO("sequence length " << p.seq_len);
    check_within_5_percent(flash_fwd_bwd_tflops(mi355x, p.seq_len, 16, 16), fwd_bwd_of(p.fwd, p.bwd));
  }
}

TEST_CASE("Element-wise ops on B200 and MI300X stream at their published bandwidth") {
  const ComputeOp op = op_of(ComputeKind::elementwise, 0, 10'000'000'000);
  // NVIDIA/cutlass PR #2917, CuTe DSL RMSNorm 32768 x 16384 bf16 on B200: 6516.67 GB/s.
  check_within_5_percent(1e10 / op_time(benchmarked_gpu("B200"), "bf16", op) / 1e9, 6516.67);
  // RRZE-HPC gpu-benches 1038c5d gpu-stream/mi300x.txt, SCALE at full occupancy: 3997 GB/s.
  check_within_5_percent(1e10 / op_time(benchmarked_gpu("MI300X"), "bf16", op) / 1e9, 3997);
}

TEST_CASE("GPUs without two published kernel points keep those curves uncalibrated") {
  // GB200: one GEMM point (a best-shape search); MI300X: no attention sweep. Their estimates say so
  // rather than guess.
  const ComputeOp gemm = gemm_of(8192, 8192, 8192);
  CHECK_FALSE(benchmarked_gpu("GB200").gemm_efficiency);
  CHECK(estimate_op_time(benchmarked_gpu("GB200"), "bf16", gemm).source == TimeSource::uncalibrated);
  ComputeOp attention = op_of(ComputeKind::attention, 1e12, 0);
  attention.shape = {64, 8192, 128};
  CHECK_FALSE(benchmarked_gpu("MI300X").attention_efficiency);
  CHECK(estimate_op_time(benchmarked_gpu("MI300X"), "bf16", attention).source == TimeSource::uncalibrated);
}

TEST_CASE("The calibrated B200 and MI300X reproduce OpenXLA's measured bf16 GEMMs") {
  // OpenXLA's matmul table (ROCm/xla commit ea2c45f, matmul_interpolator_data.h), median of five:
  // 2048^3 and 4096^3 are the calibration points; B200's 1024^3 is a third.
  const GpuModel& b200 = benchmarked_gpu("B200");
  check_within_5_percent(gemm_tflops(b200, 2048, 2048, 2048), 985.8);
  check_within_5_percent(gemm_tflops(b200, 4096, 4096, 4096), 1416.9);
  check_within_5_percent(gemm_tflops(b200, 1024, 1024, 1024), 288.0);
  const GpuModel& mi300x = benchmarked_gpu("MI300X");
  check_within_5_percent(gemm_tflops(mi300x, 2048, 2048, 2048), 393.4);
  check_within_5_percent(gemm_tflops(mi300x, 4096, 4096, 4096), 583.1);
  // HipKittens' PyTorch means on B200 (commit f09e968) at training sizes, within 10%: the measured
  // 8192^3 dips below 4096^3, which no saturating curve follows.
  for (const auto& [n, tflops] : {std::pair(4096L, 1469.6), std::pair(8192L, 1374.5), std::pair(16384L, 1490.7)}) {
    INFO(n << "^3");
    CHECK(std::abs(gemm_tflops(b200, n, n, n) / tflops - 1) <= 0.10);
  }
}
