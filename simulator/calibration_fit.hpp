#pragma once
// Fitting a cluster's calibration to the user's measurements (`clustersim calibrate`). The model is
// the simulator itself: a measured nccl-tests row is compared with `clustersim collective --algo
// auto` for the same op, size and GPUs, and a measured iteration with `clustersim run`. Each
// parameter is found by a one-dimensional golden-section search that minimises the sum of squared
// log errors (predicted / measured), so a 2% miss counts the same on 40 and on 400 GB/s:
//  - one bandwidth efficiency per link type: files measured inside one node fit the scale-up link
//    type (NVLink), files across nodes the NICs' link type; scale-up first, since rings and trees
//    across nodes also cross NVLink. Only bandwidth-bound rows are fitted (measured busbw at least
//    kBandwidthBoundFraction of the file's highest), where the efficiency, not latency, sets the time;
//  - one in-training efficiency per GPU model, from measured iteration times, with the link
//    efficiencies just fitted in place.
// Deterministic: a fixed search interval and tolerance, no randomness.
#include <functional>
#include <string>
#include <vector>

#include "simulator/nccl_tests_text.hpp"
#include "workloads/calibration_file.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

/// Rows at or above this fraction of the file's highest measured busbw are bandwidth-bound: there
/// latency is at most a quarter of the bandwidth term's time on a pipelined ring.
inline constexpr double kBandwidthBoundFraction = 0.8;
/// The search interval and final bracket width of every efficiency.
inline constexpr double kMinFittedEfficiency = 0.02;
inline constexpr double kEfficiencyTolerance = 1e-4;
/// A link type constrains its rows when a 2% change of its efficiency moves their predicted busbw
/// by at least half that (d ln busbw / d ln efficiency >= 0.5), in both directions (downwards
/// only at the bound 1).
inline constexpr double kSensitivityStep = 0.02;
inline constexpr double kMinSensitivity = 0.5;

/// The x in [lo, hi] minimising f, to a bracket narrower than tol (golden-section search: f is
/// taken to be unimodal there; each step keeps the 0.618 of the bracket holding the smaller value).
/// `evaluations` counts the calls of f.
double golden_section_minimum(const std::function<double(double)>& f, double lo, double hi, double tol,
                              int* evaluations = nullptr);

/// The link type whose efficiency a measurement on the cluster's first `ranks` GPUs sets: the
/// scale-up link inside one node, the NICs' link across nodes.
std::string link_type_measured(const ClusterSpec& cluster, int ranks);

struct LinkFit {
  std::string link_type;
  double efficiency = 1;
  double cluster_efficiency = 1;  // the cluster file's value before the fit
  std::vector<std::string> files;
  int fitted_rows = 0;
  double rms_log_error = 0;       // over the fitted rows, at the fitted efficiency
  int evaluations = 0;
  bool at_bound = false;          // the minimum sits at the interval's end: the data ask for more
  // false: the fitted rows hardly depend on this link type (another link is their bottleneck), so
  // the cluster's value is kept and not written to the calibration file.
  bool constrained = true;
};

struct LinkFitResult {
  std::vector<LinkFit> links;                     // scale-up first
  std::vector<CalibrationResidual> residuals;     // every row of every file, at the fitted values
  ClusterSpec calibrated;                         // the cluster with the fitted efficiencies
};

/// Fits the link types the files measure. UserError (at the file) for a file on more GPUs than
/// the cluster has or without any bandwidth.
LinkFitResult fit_link_efficiencies(const ClusterSpec& cluster, const std::vector<NcclTestsFile>& files);

/// A measured iteration of a scenario (its spec already loaded).
struct IterationMeasurement {
  ScenarioSpec scenario;
  Seconds measured_s = 0;
};

struct GpuFit {
  std::string gpu;
  double fraction = 1;
  std::optional<double> catalog_fraction;  // the catalog's, if it has one
  std::vector<std::string> scenarios;
  double rms_log_error = 0;
  int evaluations = 0;
  bool at_bound = false;
};

struct IterationFitResult {
  std::vector<GpuFit> gpus;
  std::vector<CalibrationResidual> residuals;
};

/// Fits one in-training efficiency per GPU model over its measured iterations. `links`: the
/// efficiencies fitted above, applied to each scenario's cluster where it declares that link type.
IterationFitResult fit_in_training_efficiency(std::vector<IterationMeasurement> measured, const std::vector<LinkFit>& links);

}  // namespace clustersim
