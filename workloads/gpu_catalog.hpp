#pragma once
// The GPU catalog (scenarios/gpus.yaml): peak FLOP/s by datatype, HBM size and bandwidth, by GPU
// name. Cluster files name a GPU; the compute and memory models look it up here.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topologies/units.hpp"
#include "topologies/yaml_reader.hpp"

namespace clustersim {

/// Achieved fraction of peak for one GEMM, saturating in its size. Calibrated once per GPU from a
/// named measurement; absent until then.
struct GemmEfficiency {
  double max_fraction = 1.0;            // what the largest GEMMs reach, in (0, 1]
  double half_saturation_flops = 0.0;   // the GEMM size (FLOPs) that reaches max_fraction / 2
  std::string source;

  double fraction_of_peak(double gemm_flops) const {
    return max_fraction * gemm_flops / (gemm_flops + half_saturation_flops);
  }
};

/// Achieved fraction of peak for the flash-attention core, saturating in the sequence length (keys
/// per query), in the FLOPs the kernel executes (a causal kernel skips the masked half).
struct AttentionEfficiency {
  double max_fraction = 1.0;  // what long sequences reach, in (0, 1]
  double half_seq_len = 0.0;  // the sequence length (tokens) that reaches max_fraction / 2
  std::string source;

  double fraction_of_peak(double seq_len) const { return max_fraction * seq_len / (seq_len + half_seq_len); }
};

/// Achieved fraction of HBM bandwidth for a streaming kernel (one load and one store stream).
struct HbmEfficiency {
  double fraction = 1.0;
  std::string source;
};

/// Unfused attention's batched matmuls (QK^T, scores x V and their gradients): their inner or outer
/// dimension is one head's width, so each runs its math at peak but writes or reads the s x s score
/// matrix at this fraction of HBM bandwidth, not overlapped with the math.
struct ScoreMatmulEfficiency {
  double score_hbm_fraction = 1.0;
  std::string source;
};

/// The fraction of the calibrated speed that kernels keep inside a training step. The curves above
/// come from kernel benchmarks, which time one kernel in a loop; a training layer runs dozens of
/// different kernels back to back, at sustained power, with launch gaps between them. Fitted once
/// per GPU to published per-layer times; without it, 1 (benchmark speed).
struct InTrainingEfficiency {
  double fraction = 1.0;
  std::string source;
};

/// Streaming multiprocessors (AMD: compute units), the pool a communication kernel takes its CUDA
/// blocks from: while an NCCL collective or DeepEP's kernels run beside compute, the compute keeps
/// (count - held) / count of the GPU (simulator/pass_times.hpp). From the vendor's documents.
struct StreamingMultiprocessors {
  int count = 0;
  /// false where a measurement of compute beside communication on this GPU shows no slowdown the
  /// SM share would explain (the source says which): its compute keeps full speed.
  bool interference = true;
  std::string source;
};

/// A calibration the catalog states it does not have, and why: `uncalibrated: {parameter: reason}`.
struct UncalibratedNote {
  std::string parameter;  // "in_training_efficiency", "fp8_gemm_efficiency", ...
  std::string reason;
};

/// A parameter a run uses without a cited calibration: what the model falls back to instead.
/// Missing from the catalog and not explained there, its reason is "no source in the catalog".
struct UncalibratedParameter {
  std::string gpu, parameter, reason, fallback;
  /// "H200-SXM in_training_efficiency (reason; using fallback)": the line run prints.
  std::string describe() const;
};

/// FP8 or an OCP MX format ("mxfp8", "mxfp6", "mxfp4"): GEMM inputs of at most one byte.
inline bool is_eight_bit(const std::string& dtype) { return dtype == "fp8" || dtype.rfind("mxfp", 0) == 0; }

struct GpuModel {
  std::string name;
  std::map<std::string, double> peak_flops_per_s;  // dense, by datatype ("bf16", "fp8", ...)
  Bytes hbm_bytes = 0;
  BytesPerSecond hbm_bandwidth_Bps = 0;
  std::optional<GemmEfficiency> gemm_efficiency;
  std::optional<GemmEfficiency> fp8_gemm_efficiency;  // FP8 GEMMs; absent: gemm_efficiency at the fp8 peak
  std::optional<AttentionEfficiency> attention_efficiency;
  std::optional<HbmEfficiency> hbm_efficiency;
  std::optional<ScoreMatmulEfficiency> score_matmul_efficiency;
  std::optional<InTrainingEfficiency> in_training_efficiency;
  std::optional<StreamingMultiprocessors> streaming_multiprocessors;
  std::vector<UncalibratedNote> uncalibrated;  // the catalog's own reasons, in file order
  std::string source;
  // Where the entry is written, so a missing calibration can be reported there.
  std::string catalog_file;
  int catalog_line = 0;
  std::string catalog_path;

  /// Dense peak in FLOP/s, or nothing when the GPU cannot run `dtype` (FP8 on an A100).
  std::optional<double> peak_flops(const std::string& dtype) const;
  /// The same, for a datatype a user asked for at `asked_by`: a GPU without it is a UserError
  /// there, naming the GPU and the datatypes it does have.
  double peak_flops_or_fail(const std::string& dtype, const YamlField& asked_by) const;
  /// "bf16, fp16, fp8": for messages.
  std::string datatypes() const;
  /// The fraction of the `dtype` peak a GEMM of `flops` reaches; needs gemm_efficiency. FP8 takes
  /// fp8_gemm_efficiency where present, but never runs slower than the same GEMM in bf16: the FP8
  /// curves are fitted on training-sized GEMMs, and below them FP8 kernels measure at about the
  /// bf16 rate (DeepGEMM's 128-row GEMMs: 0.9x to 1.4x of H800's bf16 curve), not under it.
  /// Without an FP8 curve, the bf16 one at the 8-bit peak.
  double gemm_fraction_of_peak(const std::string& dtype, double flops) const;
  /// The share of this GPU's SMs that a communication kernel holding `held_sms` of them takes from
  /// the compute running beside it: held / count, at most 1; 0 without an SM count (uncalibrated:
  /// no interference) or where the catalog measured none (StreamingMultiprocessors::interference).
  double sm_share(int held_sms) const;
  /// The parameters a run at `precision` uses without a calibration, each with its fallback:
  /// in_training_efficiency (fallback 1), streaming_multiprocessors (no interference) and, in 8-bit, a GEMM curve measured in that datatype
  /// (fallback: the bf16 curve at the 8-bit peak). Parameters without a fallback (gemm_efficiency,
  /// attention_efficiency, ...) are not here: timing an op that needs one is an error.
  std::vector<UncalibratedParameter> uncalibrated_parameters(const std::string& precision) const;
  /// Every calibration field this entry leaves out, in the catalog's order (fp8_gemm_efficiency only
  /// where the GPU runs fp8): what `clustersim list` marks.
  std::vector<std::string> missing_calibrations() const;
};

/// The catalog's optional calibration fields, in the order an entry lists them.
const std::vector<std::string>& calibration_fields();

class GpuCatalog {
 public:
  explicit GpuCatalog(std::string file = "") : file_(std::move(file)) {}

  /// nullptr when no GPU has that name.
  const GpuModel* find(const std::string& name) const;
  /// The GPU named by a user's field (a cluster's `gpu:`); an unknown name is a UserError there
  /// that lists the catalog.
  const GpuModel& find_or_fail(const YamlField& name_field) const;
  std::vector<std::string> names() const;
  const std::string& file() const { return file_; }

  void add(GpuModel gpu) { gpus_.push_back(std::move(gpu)); }

 private:
  std::string file_;
  std::vector<GpuModel> gpus_;  // in file order, so listings read like the file
};

/// The datatypes a catalog may list; anything else is a typo and a UserError.
const std::vector<std::string>& known_datatypes();

/// Reads and validates a catalog. Throws UserError on any bad field.
GpuCatalog load_gpu_catalog(const std::string& path);
GpuCatalog parse_gpu_catalog(const YamlField& root);

}  // namespace clustersim
