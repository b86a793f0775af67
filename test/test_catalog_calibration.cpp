// The catalog's newer calibrations against the measurements they were fitted to (scenarios/gpus.yaml
// names each): H100's in-training efficiency from a Transformer Engine layer's profiled GEMMs, B200's
// from a kernel's throttled throughput at sustained power, the FP8 GEMM curves of Hopper and B200
// from FP8 kernel benchmarks; and the `uncalibrated` map's errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "support.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/compute_model.hpp"

using namespace clustersim;
using clustersim::test::error_of;
using clustersim::test::relative_error;
using clustersim::test::shipped_gpu;

namespace {

ComputeOp gemm_of(long m, long n, long k) {
  ComputeOp op;
  op.name = "gemm";
  op.kind = ComputeKind::gemm;
  op.shape = {m, n, k};
  op.flops = 2.0 * double(m) * double(n) * double(k);
  return op;
}

/// The GPU as a kernel benchmark sees it: the in-training efficiency left out.
GpuModel benchmarked(const std::string& name) {
  GpuModel gpu = shipped_gpu(name);
  gpu.in_training_efficiency.reset();
  return gpu;
}

double tflops(const GpuModel& gpu, const std::string& dtype, long m, long n, long k) {
  const ComputeOp op = gemm_of(m, n, k);
  return op.flops / op_time(gpu, dtype, op) / 1e12;
}

struct Measured {
  long m, n, k;
  double tflops;
};

UserError catalog_error(const std::string& entry, const std::string& peaks = "{bf16: 100, fp8: 200}") {
  const std::string text =
      "gpus:\n"
      "  - name: X\n"
      "    peak_tflops: " + peaks + "\n"
      "    hbm_GB: 80\n"
      "    hbm_bandwidth_TBps: 2\n"
      "    in_training_efficiency: {fraction: 0.9, source: test}\n" +
      entry +
      "    source: test\n";
  return error_of([&] { parse_gpu_catalog(YamlField::load_string(text, "g.yaml")); });
}

}  // namespace

TEST_CASE("H100's in-training efficiency reproduces the GEMMs of a profiled Transformer Engine layer") {
  // NVIDIA/Fuser PR #4844: nsys kernel times of te.TransformerLayer forward, GPT-3 175B (hidden
  // 12288, FFN 4h), batch 1, sequence 2048, tensor parallel 8 on H100 80GB HBM3, per GPU, in us.
  const GpuModel& h100 = shipped_gpu("H100-SXM");
  auto us = [&](long m, long n, long k) { return op_time(h100, "bf16", gemm_of(m, n, k)) * 1e6; };
  const double qkv = us(2048, 4608, 12288), proj = us(2048, 12288, 1536);
  const double ffn = us(2048, 6144, 12288) + us(2048, 12288, 6144);
  CHECK(relative_error(qkv, 288.4) <= 0.07);
  CHECK(relative_error(proj, 109.7) <= 0.07);
  CHECK(relative_error(ffn, 384.7 + 401.2) <= 0.01);
  CHECK(relative_error(qkv + proj + ffn, 1184.0) <= 0.005);  // the fit: the four together
}

TEST_CASE("The Hopper FP8 curve reproduces DeepGEMM's H800 benchmarks on DeepSeek-V3's shapes within 10%") {
  // deepseek-ai/DeepGEMM README at 55ab91f, H800 SXM5, TFLOP/s; the grouped rows are 4 x 8192 rows.
  const std::vector<Measured> rows = {{4096, 2112, 7168, 1009}, {4096, 24576, 1536, 1125}, {4096, 7168, 16384, 1426},
                                      {4096, 4096, 7168, 1265}, {4096, 7168, 2048, 1168},  {32768, 4096, 7168, 1346},
                                      {32768, 7168, 2048, 1214}};
  for (const char* name : {"H800-SXM", "H100-SXM", "H200-SXM"}) {
    const GpuModel gpu = benchmarked(name);
    REQUIRE(gpu.fp8_gemm_efficiency);
    for (const Measured& r : rows) {
      INFO(name << " " << r.m << "x" << r.n << "x" << r.k);
      CHECK(relative_error(tflops(gpu, "fp8", r.m, r.n, r.k), r.tflops) <= 0.10);
    }
  }
}

TEST_CASE("FP8 GEMMs on Hopper stay short of twice bf16, as the kernels measure") {
  // DeepGEMM's largest FP8 rate on these shapes, 1426 TFLOP/s, is 1.8x OpenXLA's 783.3 bf16 at
  // 4096^3; with the bf16 curve at the FP8 peak every GEMM would be exactly 2x.
  const GpuModel h800 = benchmarked("H800-SXM");
  for (long side : {4096L, 8192L, 16384L}) {
    const double ratio = tflops(h800, "fp8", side, side, side) / tflops(h800, "bf16", side, side, side);
    INFO(side << "^3: " << ratio);
    CHECK(ratio > 1.3);
    CHECK(ratio < 1.7);
  }
}

TEST_CASE("A small FP8 GEMM runs at the bf16 rate, not under it") {
  // 1024^3 (2.1 GFLOP) is far below the FP8 fit points, where the FP8 curve alone reads 89 TFLOP/s
  // against bf16's 248; DeepGEMM's 128-row GEMMs measure at about the bf16 rate there.
  const GpuModel h800 = benchmarked("H800-SXM");
  const double flops = 2.0 * 1024 * 1024 * 1024;
  REQUIRE(h800.fp8_gemm_efficiency->fraction_of_peak(flops) * 1979 < 100);
  CHECK(tflops(h800, "fp8", 1024, 1024, 1024) == Approx(tflops(h800, "bf16", 1024, 1024, 1024)).epsilon(1e-9));
}

TEST_CASE("The B200 FP8 curve reproduces OpenXLA's measured FP8 GEMMs") {
  // OpenXLA matmul table (ROCm/xla commit ea2c45f), sm_100_B200, f8e4m3fn x f8e4m3fn -> bf16:
  // 2048^3 and 4096^3 are the fit points, the other two are checks.
  const GpuModel b200 = benchmarked("B200");
  for (const Measured& r : std::vector<Measured>{
           {2048, 2048, 2048, 1427.7}, {4096, 4096, 4096, 2765.0}, {1024, 4096, 4096, 1938.0}, {4096, 4096, 2048, 2485.0}}) {
    INFO(r.m << "x" << r.n << "x" << r.k);
    CHECK(relative_error(tflops(b200, "fp8", r.m, r.n, r.k), r.tflops) <= 0.05);
  }
}

TEST_CASE("B200's in-training efficiency is its sustained over its burst throughput, and slows every op by it") {
  // flashinfer PR #2899 on B200, one compute-bound kernel timed 100 times back to back: 1450 TFLOP/s
  // at its peak (iterations 10-19), 1237 once the clocks have throttled (70-79). The catalog's
  // curves are bursts; a training step runs at sustained power.
  const GpuModel& b200 = shipped_gpu("B200");
  REQUIRE(b200.in_training_efficiency);
  CHECK(b200.in_training_efficiency->fraction == Approx(1237.0 / 1450.0).margin(5e-4));
  CHECK(b200.uncalibrated_parameters("bf16").empty());
  for (const std::string dtype : {"bf16", "fp8"})
    CHECK(tflops(b200, dtype, 8192, 8192, 8192) ==
          Approx(tflops(benchmarked("B200"), dtype, 8192, 8192, 8192) * b200.in_training_efficiency->fraction).epsilon(1e-9));
}

TEST_CASE("MX formats and GPUs without an FP8 curve fall back on the bf16 curve at the 8-bit peak") {
  // Exactly twice bf16's rate (fp8 peak = 2 x bf16 on MI300X; mxfp8 = 2 x bf16 on MI355X).
  const GpuModel mi300x = benchmarked("MI300X"), mi355x = benchmarked("MI355X");
  CHECK(tflops(mi300x, "fp8", 4096, 4096, 4096) ==
        Approx(tflops(mi300x, "bf16", 4096, 4096, 4096) * (2615.0 / 1307.0)).epsilon(1e-9));
  CHECK(tflops(mi355x, "mxfp8", 4096, 4096, 4096) ==
        Approx(tflops(mi355x, "bf16", 4096, 4096, 4096) * (5033.0 / 2517.0)).epsilon(1e-9));
}

TEST_CASE("A GPU states the parameters it falls back on, with the catalog's reason") {
  const GpuModel& h200 = shipped_gpu("H200-SXM");
  const auto bf16 = h200.uncalibrated_parameters("bf16");
  REQUIRE(bf16.size() == 1);
  CHECK(bf16[0].parameter == "in_training_efficiency");
  CHECK_THAT(bf16[0].reason, Catch::Contains("no per-layer or in-training kernel measurement on H200"));
  CHECK(h200.uncalibrated_parameters("fp8").size() == 1);  // its FP8 curve is calibrated
  CHECK(shipped_gpu("A100-SXM-80GB").uncalibrated_parameters("bf16").empty());
  CHECK(shipped_gpu("H100-SXM").uncalibrated_parameters("fp8").empty());
  const auto mx = shipped_gpu("MI355X").uncalibrated_parameters("mxfp8");
  REQUIRE(mx.size() == 2);
  CHECK(mx[1].parameter == "mxfp8 GEMM curve");
}

TEST_CASE("A parameter the catalog leaves out without a reason is uncalibrated with no source") {
  GpuModel gpu = shipped_gpu("A100-SXM-80GB");
  gpu.in_training_efficiency.reset();
  const auto u = gpu.uncalibrated_parameters("bf16");
  REQUIRE(u.size() == 1);
  CHECK(u[0].describe() == "A100-SXM-80GB in_training_efficiency (no source in the catalog; using 1, kernels at their "
                           "benchmark speed)");
}

TEST_CASE("An uncalibrated entry for a parameter the GPU calibrates is a UserError at it") {
  const UserError e = catalog_error("    uncalibrated: {in_training_efficiency: not measured}\n");
  CHECK(e.field_path() == "gpus[0].uncalibrated.in_training_efficiency");
  CHECK(e.line() == 7);
  CHECK_THAT(e.expected(), Catch::Contains("in_training_efficiency is calibrated above"));
}

TEST_CASE("An uncalibrated entry naming no calibration parameter is a UserError at it") {
  const UserError e = catalog_error("    uncalibrated: {gemm_efficency: typo}\n");
  CHECK(e.field_path() == "gpus[0].uncalibrated.gemm_efficency");
  CHECK_THAT(e.expected(), Catch::Contains("unknown calibration parameter"));
}

TEST_CASE("An uncalibrated entry without a reason is a UserError at it") {
  const UserError e = catalog_error("    uncalibrated: {gemm_efficiency: ''}\n");
  CHECK(e.field_path() == "gpus[0].uncalibrated.gemm_efficiency");
  CHECK_THAT(e.expected(), Catch::Contains("the reason"));
}

TEST_CASE("An FP8 curve on a GPU without an fp8 peak is a UserError at it") {
  const UserError e =
      catalog_error("    fp8_gemm_efficiency: {max_fraction: 0.5, half_gflop: 1, source: test}\n", "{bf16: 100}");
  CHECK(e.field_path() == "gpus[0].fp8_gemm_efficiency");
  CHECK(e.line() == 7);
}
