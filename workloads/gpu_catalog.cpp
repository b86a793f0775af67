#include "workloads/gpu_catalog.hpp"

#include <algorithm>
#include <cmath>

namespace clustersim {

namespace {

constexpr double kTera = 1e12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Ranges wide enough for any real accelerator and narrow enough that no finite value makes a time
// or a byte count overflow downstream.
constexpr double kMinPeak_TFLOPs = 1e-3, kMaxPeak_TFLOPs = 1e6;
constexpr double kMaxHbm_GiB = 1e6;
constexpr double kMinHbmBandwidth_TBps = 1e-3, kMaxHbmBandwidth_TBps = 1e4;
constexpr double kMinFraction = 1e-3;
constexpr double kMaxHalfGflop = 1e9;
constexpr double kMaxHalfSeqLen = 1e9;
constexpr int kMaxSms = 100000;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::map<std::string, double> read_peaks(const YamlField& f) {
  if (!f.is_map() || f.node().size() == 0) f.fail("expected a mapping of datatype to dense TFLOP/s");
  std::map<std::string, double> peaks;
  for (const auto& kv : f.node()) {
    if (!kv.first.IsScalar()) f.fail("expected datatype names as keys");
    const std::string dtype = kv.first.Scalar();
    YamlField value = f.child(dtype);
    const auto& known = known_datatypes();
    if (std::find(known.begin(), known.end(), dtype) == known.end())
      value.fail("unknown datatype (expected one of: " + join(known) + ")");
    peaks[dtype] = value.as_number_in(kMinPeak_TFLOPs, kMaxPeak_TFLOPs, "TFLOP/s") * kTera;
  }
  return peaks;
}

Bytes read_hbm(const YamlField& gpu) {
  auto gib = gpu.find("hbm_GiB");
  auto gb = gpu.find("hbm_GB");
  if (gib && gb) gb->fail("expected one of hbm_GiB or hbm_GB, not both");
  if (gb) return static_cast<Bytes>(std::llround(gb->as_number_in(1e-3, kMaxHbm_GiB, "GB") * kGiga));
  return static_cast<Bytes>(std::llround(gpu.child("hbm_GiB").as_number_in(1e-3, kMaxHbm_GiB, "GiB") * kGiB));
}

double read_fraction(const YamlField& f) { return f.as_number_in(kMinFraction, 1.0, "(a fraction)"); }

GemmEfficiency read_gemm_efficiency(const YamlField& f) {
  f.expect_keys({"max_fraction", "half_gflop", "source"});
  GemmEfficiency e;
  e.max_fraction = read_fraction(f.child("max_fraction"));
  e.half_saturation_flops = f.child("half_gflop").as_number_in(1e-6, kMaxHalfGflop, "GFLOP") * kGiga;
  e.source = f.child("source").as_string();
  return e;
}


AttentionEfficiency read_attention_efficiency(const YamlField& f) {
  f.expect_keys({"max_fraction", "half_seq_len", "source"});
  AttentionEfficiency e;
  e.max_fraction = read_fraction(f.child("max_fraction"));
  e.half_seq_len = f.child("half_seq_len").as_number_in(0, kMaxHalfSeqLen, "tokens");
  e.source = f.child("source").as_string();
  return e;
}

/// A {fraction, source} entry (hbm_efficiency, in_training_efficiency).
template <typename Entry>
Entry read_fraction_entry(const YamlField& f) {
  f.expect_keys({"fraction", "source"});
  return Entry{read_fraction(f.child("fraction")), f.child("source").as_string()};
}

StreamingMultiprocessors read_streaming_multiprocessors(const YamlField& f) {
  f.expect_keys({"count", "interference", "source"});
  StreamingMultiprocessors sms;
  sms.count = static_cast<int>(f.child("count").as_integer_in(1, kMaxSms, "SMs"));
  if (auto e = f.find("interference")) sms.interference = e->as_bool();
  sms.source = f.child("source").as_string();
  return sms;
}

ScoreMatmulEfficiency read_score_matmul_efficiency(const YamlField& f) {
  f.expect_keys({"score_hbm_fraction", "source"});
  return ScoreMatmulEfficiency{read_fraction(f.child("score_hbm_fraction")), f.child("source").as_string()};
}

std::vector<UncalibratedNote> read_uncalibrated(const YamlField& gpu, const YamlField& f) {
  if (!f.is_map() || f.node().size() == 0)
    f.fail("expected a mapping of calibration parameter to the reason it has no source");
  std::vector<UncalibratedNote> notes;
  for (const auto& kv : f.node()) {
    if (!kv.first.IsScalar()) f.fail("expected calibration parameter names as keys");
    const std::string parameter = kv.first.Scalar();
    YamlField reason = f.child(parameter);
    const auto& known = calibration_fields();
    if (std::find(known.begin(), known.end(), parameter) == known.end())
      reason.fail("unknown calibration parameter (expected one of: " + join(known) + ")");
    if (gpu.find(parameter)) reason.fail("expected a parameter this GPU leaves out; " + parameter + " is calibrated above");
    notes.push_back({parameter, reason.as_string()});
    if (notes.back().reason.empty()) reason.fail("expected the reason there is no calibration");
  }
  return notes;
}

GpuModel read_gpu(const YamlField& f) {
  f.expect_keys({"name", "peak_tflops", "hbm_GiB", "hbm_GB", "hbm_bandwidth_TBps", "gemm_efficiency", "fp8_gemm_efficiency",
                 "attention_efficiency", "hbm_efficiency", "score_matmul_efficiency", "in_training_efficiency",
                 "streaming_multiprocessors", "uncalibrated", "source"});
  GpuModel gpu;
  gpu.name = f.child("name").as_string();
  gpu.peak_flops_per_s = read_peaks(f.child("peak_tflops"));
  gpu.hbm_bytes = read_hbm(f);
  gpu.hbm_bandwidth_Bps = f.child("hbm_bandwidth_TBps").as_number_in(kMinHbmBandwidth_TBps, kMaxHbmBandwidth_TBps, "TB/s") * kTera;
  if (auto e = f.find("gemm_efficiency")) gpu.gemm_efficiency = read_gemm_efficiency(*e);
  if (auto e = f.find("fp8_gemm_efficiency")) {
    if (!gpu.peak_flops("fp8")) e->fail("expected no FP8 curve for a GPU without an fp8 peak");
    gpu.fp8_gemm_efficiency = read_gemm_efficiency(*e);
  }
  if (auto e = f.find("attention_efficiency")) gpu.attention_efficiency = read_attention_efficiency(*e);
  if (auto e = f.find("hbm_efficiency")) gpu.hbm_efficiency = read_fraction_entry<HbmEfficiency>(*e);
  if (auto e = f.find("score_matmul_efficiency")) gpu.score_matmul_efficiency = read_score_matmul_efficiency(*e);
  if (auto e = f.find("in_training_efficiency")) gpu.in_training_efficiency = read_fraction_entry<InTrainingEfficiency>(*e);
  if (auto e = f.find("streaming_multiprocessors")) gpu.streaming_multiprocessors = read_streaming_multiprocessors(*e);
  if (auto u = f.find("uncalibrated")) gpu.uncalibrated = read_uncalibrated(f, *u);
  gpu.source = f.child("source").as_string();  // required: every figure says where it is from
  gpu.catalog_file = f.file();
  gpu.catalog_line = f.line();
  gpu.catalog_path = f.path();
  return gpu;
}

}  // namespace

// Each is either given with its source or may be listed under `uncalibrated` with the reason it is not.
const std::vector<std::string>& calibration_fields() {
  static const std::vector<std::string> kFields = {"gemm_efficiency",        "fp8_gemm_efficiency",
                                                   "attention_efficiency",   "hbm_efficiency",
                                                   "score_matmul_efficiency", "in_training_efficiency",
                                                   "streaming_multiprocessors"};
  return kFields;
}

const std::vector<std::string>& known_datatypes() {
  static const std::vector<std::string> kNames = {"fp16", "bf16", "fp8", "mxfp8", "mxfp6", "mxfp4"};
  return kNames;
}

std::optional<double> GpuModel::peak_flops(const std::string& dtype) const {
  auto it = peak_flops_per_s.find(dtype);
  if (it == peak_flops_per_s.end()) return std::nullopt;
  return it->second;
}

double GpuModel::peak_flops_or_fail(const std::string& dtype, const YamlField& asked_by) const {
  if (auto peak = peak_flops(dtype)) return *peak;
  asked_by.fail("expected a datatype that " + name + " runs (" + datatypes() + "); got '" + dtype + "'");
}

std::string GpuModel::datatypes() const {
  std::vector<std::string> names;
  for (const auto& [dtype, flops] : peak_flops_per_s) names.push_back(dtype);
  return join(names);
}

double GpuModel::gemm_fraction_of_peak(const std::string& dtype, double flops) const {
  const double bf16_fraction = gemm_efficiency.value().fraction_of_peak(flops);
  const std::optional<double> peak = peak_flops(dtype), bf16_peak = peak_flops("bf16");
  if (dtype != "fp8" || !fp8_gemm_efficiency || !peak || !bf16_peak) return bf16_fraction;
  return std::max(fp8_gemm_efficiency->fraction_of_peak(flops), bf16_fraction * *bf16_peak / *peak);
}

std::vector<UncalibratedParameter> GpuModel::uncalibrated_parameters(const std::string& precision) const {
  auto reason = [this](const std::string& parameter) -> std::string {
    for (const UncalibratedNote& n : uncalibrated)
      if (n.parameter == parameter) return n.reason;
    return "no source in the catalog";
  };
  std::vector<UncalibratedParameter> out;
  if (!in_training_efficiency)
    out.push_back({name, "in_training_efficiency", reason("in_training_efficiency"), "1, kernels at their benchmark speed"});
  if (!streaming_multiprocessors)
    out.push_back({name, "streaming_multiprocessors", reason("streaming_multiprocessors"),
                   "no interference, compute beside communication at full speed"});
  if (is_eight_bit(precision) && gemm_efficiency) {
    if (precision == "fp8" && !fp8_gemm_efficiency)
      out.push_back({name, "fp8_gemm_efficiency", reason("fp8_gemm_efficiency"), "the bf16 gemm_efficiency at the fp8 peak"});
    if (precision != "fp8")  // the catalog has no curve field for the MX formats
      out.push_back({name, precision + " GEMM curve", "no " + precision + " GEMM sweep in the catalog",
                     "the bf16 gemm_efficiency at the " + precision + " peak"});
  }
  return out;
}

std::vector<std::string> GpuModel::missing_calibrations() const {
  const std::map<std::string, bool> present = {{"gemm_efficiency", gemm_efficiency.has_value()},
                                               {"fp8_gemm_efficiency", fp8_gemm_efficiency.has_value() || !peak_flops("fp8")},
                                               {"attention_efficiency", attention_efficiency.has_value()},
                                               {"hbm_efficiency", hbm_efficiency.has_value()},
                                               {"score_matmul_efficiency", score_matmul_efficiency.has_value()},
                                               {"in_training_efficiency", in_training_efficiency.has_value()},
                                               {"streaming_multiprocessors", streaming_multiprocessors.has_value()}};
  std::vector<std::string> out;
  for (const std::string& field : calibration_fields())
    if (!present.at(field)) out.push_back(field);
  return out;
}

double GpuModel::sm_share(int held_sms) const {
  if (!streaming_multiprocessors || !streaming_multiprocessors->interference || held_sms <= 0) return 0;
  return std::min(1.0, double(held_sms) / streaming_multiprocessors->count);
}

std::string UncalibratedParameter::describe() const {
  return gpu + " " + parameter + " (" + reason + "; using " + fallback + ")";
}

const GpuModel* GpuCatalog::find(const std::string& name) const {
  for (const auto& gpu : gpus_)
    if (gpu.name == name) return &gpu;
  return nullptr;
}

const GpuModel& GpuCatalog::find_or_fail(const YamlField& name_field) const {
  const std::string name = name_field.as_string();
  if (const GpuModel* gpu = find(name)) return *gpu;
  name_field.fail("expected a GPU from " + file_ + " (" + join(names()) + "); got '" + name + "'");
}

std::vector<std::string> GpuCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& gpu : gpus_) out.push_back(gpu.name);
  return out;
}

GpuCatalog parse_gpu_catalog(const YamlField& root) {
  root.expect_keys({"gpus"});
  GpuCatalog catalog(root.file());
  YamlField list = root.child("gpus");
  if (list.size() == 0) list.fail("expected at least one GPU");
  for (std::size_t i = 0; i < list.size(); ++i) {
    GpuModel gpu = read_gpu(list.element(i));
    if (catalog.find(gpu.name)) list.element(i).child("name").fail("duplicate GPU name '" + gpu.name + "'");
    catalog.add(std::move(gpu));
  }
  return catalog;
}

GpuCatalog load_gpu_catalog(const std::string& path) { return parse_gpu_catalog(YamlField::load_file(path)); }

}  // namespace clustersim
