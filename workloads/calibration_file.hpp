#pragma once
// A calibration file: link efficiencies and in-training efficiencies measured on the user's own
// cluster (`clustersim calibrate` writes one), each with its source, and the residuals of the fit
// that produced them. A scenario includes one with `calibration: FILE`; its values then replace the
// cluster file's `bandwidth_efficiency` for those link types and the catalog's
// `in_training_efficiency` for that GPU, and `run` prints a prediction band from the residuals.
#include <optional>
#include <string>
#include <vector>

#include "topologies/cluster_spec.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/gpu_catalog.hpp"

namespace clustersim {

/// Where a value is written, for errors about it that only show once it is applied.
struct FileLocation {
  std::string file;
  int line = 0;
  std::string path;
};

struct LinkCalibration {
  std::string link_type;
  double bandwidth_efficiency = 1;
  std::string source;
  FileLocation at;
};

struct GpuCalibration {
  std::string gpu;
  double in_training_efficiency = 1;
  std::string source;
  FileLocation at;
};

/// One input row of the fit: an nccl-tests row (bus bandwidth, GB/s) or a measured iteration (s).
struct CalibrationResidual {
  enum class Kind { nccl_tests, iteration };
  Kind kind = Kind::nccl_tests;
  std::string source;         // nccl-tests: "FILE:LINE"; iteration: the scenario file
  std::string what;           // nccl-tests: the op; iteration: the scenario's name
  Bytes size_bytes = 0;       // nccl-tests only
  int gpus = 0;
  double measured = 0;        // busbw_GBps or seconds
  double predicted = 0;
  bool fitted = false;        // nccl-tests: a bandwidth-bound row the efficiency was fitted to

  /// predicted / measured - 1 (a bandwidth too high is positive, so is a time too long).
  double error() const { return measured > 0 ? predicted / measured - 1 : 0; }
};

struct Calibration {
  std::string file;
  std::string name;
  std::string fitted_on;      // the cluster's name
  std::string description;
  std::vector<LinkCalibration> link_types;
  std::vector<GpuCalibration> gpus;
  std::vector<CalibrationResidual> residuals;
};

/// Reads and validates a calibration file: every efficiency within its range and with a non-empty
/// source, every residual naming the measurement it is of. UserError otherwise.
Calibration load_calibration(const std::string& path, const std::string& named_by = "");
Calibration parse_calibration(const YamlField& root);

/// The file's text: the same fields, deterministic (fixed order and precision).
std::string calibration_yaml(const Calibration& c);

/// Replaces the cluster's efficiency of each link type the file names and, when the file names
/// `gpu`, its in-training efficiency. A link type the cluster does not declare, or a GPU the catalog
/// does not have, is a UserError at its line in the calibration file.
void apply_calibration(const Calibration& c, ClusterSpec& cluster, GpuModel& gpu, const GpuCatalog& catalog);
/// The link types alone (`clustersim collective --calibration`).
void apply_link_calibration(const Calibration& c, ClusterSpec& cluster);

/// The spread of the fit's residuals at the scale closest to `gpus` GPUs: the largest |error| among
/// the rows measured at the GPU count nearest to it (log scale). Iteration times when there are at
/// least two (one is fitted exactly and says nothing), else the bandwidth-bound nccl-tests rows.
struct PredictionBand {
  double max_abs_error = 0;
  int at_gpus = 0;            // the GPU count the rows were measured at
  int rows = 0;
  bool iteration_times = false;
  int largest_gpus = 0;       // the largest GPU count of that kind of row
};
std::optional<PredictionBand> prediction_band(const Calibration& c, int gpus);

}  // namespace clustersim
