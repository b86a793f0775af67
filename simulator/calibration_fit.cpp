#include "simulator/calibration_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "simulator/collective_sweep.hpp"
#include "simulator/training_run.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

double squared_log_error(double predicted, double measured) {
  const double e = std::log(std::max(predicted, 1e-300) / measured);
  return e * e;
}

/// nccl-tests rows predicted by the simulator on one cluster whose link efficiencies change
/// between calls. The graph and router are built once; each call builds an engine, which reads
/// the links' capacities (line rate x efficiency) afresh.
class BusbwModel {
 public:
  explicit BusbwModel(const ClusterSpec& spec) : cluster_(std::make_unique<Cluster>(build_cluster(spec))), router_(*cluster_) {}

  void set_efficiency(const std::string& link_type, double e) { cluster_->spec.link_types.at(link_type).bandwidth_efficiency = e; }
  const ClusterSpec& spec() const { return cluster_->spec; }

  /// Simulated busbw (GB/s) of each listed row, as `clustersim collective --algo auto` reports it.
  std::vector<double> predict(const NcclTestsFile& file, const std::vector<const NcclTestsRow*>& rows) const {
    FabricEngine engine(*cluster_);
    SweepSpec sweep;
    sweep.op = file.op;
    for (int g = 0; g < file.ranks; ++g) sweep.ranks.push_back(g);
    const std::vector<const Algorithm*> algorithms = candidate_algorithms(*cluster_, sweep);
    std::vector<double> out;
    for (const NcclTestsRow* row : rows) {
      if (row->size_bytes == 0 || algorithms.empty()) {
        out.push_back(0);
        continue;
      }
      CollectiveRequest req{file.op, sweep.ranks, row->size_bytes, default_channels(*cluster_), Protocol{},
                            file.op == Op::broadcast ? std::max(row->root, 0) : 0};
      out.push_back(best_collective(engine, router_, algorithms, nccl_protocols(), req).busbw_GBps);
    }
    return out;
  }

 private:
  std::unique_ptr<Cluster> cluster_;  // the router keeps a reference: its address must not move
  Router router_;
};

/// The bandwidth-bound rows of a file (see kBandwidthBoundFraction).
std::vector<const NcclTestsRow*> bandwidth_bound_rows(const NcclTestsFile& file) {
  double peak = 0;
  for (const NcclTestsRow& r : file.rows) peak = std::max(peak, r.busbw_GBps);
  if (peak <= 0) throw UserError(file.file, 0, "busbw", "expected a measured bus bandwidth above 0 in some row");
  std::vector<const NcclTestsRow*> out;
  for (const NcclTestsRow& r : file.rows)
    if (r.busbw_GBps >= kBandwidthBoundFraction * peak) out.push_back(&r);
  return out;
}

void check_fits_cluster(const NcclTestsFile& file, const ClusterSpec& cluster) {
  if (file.ranks > cluster.gpu_count())
    throw UserError(file.file, 0, "ranks",
                    "expected at most the " + std::to_string(cluster.gpu_count()) + " GPUs of cluster " + cluster.name +
                        " (" + cluster.file + "), got " + std::to_string(file.ranks));
  if (file.op == Op::all_to_all && static_cast<long>(file.ranks) * (file.ranks - 1) > kMaxAllToAllFlows)
    throw UserError(file.file, 0, "ranks",
                    "expected at most " + std::to_string(max_all_to_all_ranks()) + " GPUs for an all-to-all, got " +
                        std::to_string(file.ranks));
}

double rms(const std::vector<double>& squared) {
  double sum = 0;
  for (double s : squared) sum += s;
  return squared.empty() ? 0 : std::sqrt(sum / static_cast<double>(squared.size()));
}

}  // namespace

double golden_section_minimum(const std::function<double(double)>& f, double lo, double hi, double tol, int* evaluations) {
  const double shrink = (std::sqrt(5.0) - 1) / 2;  // 0.618...
  double a = lo, b = hi;
  double c = b - shrink * (b - a), d = a + shrink * (b - a);
  double fc = f(c), fd = f(d);
  int calls = 2;
  while (b - a > tol) {
    if (fc <= fd) {  // the minimum lies in [a, d]
      b = d;
      d = c;
      fd = fc;
      c = b - shrink * (b - a);
      fc = f(c);
    } else {         // in [c, b]
      a = c;
      c = d;
      fc = fd;
      d = a + shrink * (b - a);
      fd = f(d);
    }
    ++calls;
  }
  if (evaluations) *evaluations = calls;
  return (a + b) / 2;
}

std::string link_type_measured(const ClusterSpec& cluster, int ranks) {
  return ranks <= cluster.node.gpus ? cluster.node.scale_up_link.type : cluster.node.nic_link.type;
}

LinkFitResult fit_link_efficiencies(const ClusterSpec& cluster, const std::vector<NcclTestsFile>& files) {
  LinkFitResult result;
  result.calibrated = cluster;
  if (files.empty()) return result;
  for (const NcclTestsFile& f : files) check_fits_cluster(f, cluster);
  // Scale-up link type first: the NICs' fit then sees the fitted NVLink inside each node.
  std::vector<std::string> order;
  const std::string scale_up = cluster.node.scale_up_link.type;
  if (std::any_of(files.begin(), files.end(), [&](const NcclTestsFile& f) { return link_type_measured(cluster, f.ranks) == scale_up; }))
    order.push_back(scale_up);
  for (const NcclTestsFile& f : files) {
    const std::string t = link_type_measured(cluster, f.ranks);
    if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
  }

  BusbwModel model(cluster);
  for (const std::string& type : order) {
    LinkFit fit;
    fit.link_type = type;
    fit.cluster_efficiency = cluster.efficiency(type);
    std::vector<std::pair<const NcclTestsFile*, std::vector<const NcclTestsRow*>>> data;
    for (const NcclTestsFile& f : files)
      if (link_type_measured(cluster, f.ranks) == type) {
        data.emplace_back(&f, bandwidth_bound_rows(f));
        fit.files.push_back(f.file);
        fit.fitted_rows += static_cast<int>(data.back().second.size());
      }
    auto predictions = [&](double e) {
      model.set_efficiency(type, e);
      std::vector<double> out;
      for (const auto& [file, rows] : data)
        for (double p : model.predict(*file, rows)) out.push_back(p);
      return out;
    };
    std::vector<double> measured;
    for (const auto& [file, rows] : data)
      for (const NcclTestsRow* r : rows) measured.push_back(r->busbw_GBps);
    auto squared_errors = [&](double e) {
      const std::vector<double> predicted = predictions(e);
      std::vector<double> out;
      for (std::size_t i = 0; i < predicted.size(); ++i) out.push_back(squared_log_error(predicted[i], measured[i]));
      return out;
    };
    // Mean d ln(busbw) / d ln(efficiency) over the fitted rows, from e to e * (1 + step).
    auto sensitivity = [&](double e, double step) {
      const std::vector<double> at = predictions(e), moved = predictions(e * (1 + step));
      double sum = 0;
      for (std::size_t i = 0; i < at.size(); ++i) sum += std::abs(std::log(moved[i] / at[i]) / std::log1p(step));
      return at.empty() ? 0 : sum / static_cast<double>(at.size());
    };
    auto objective = [&](double e) {
      double sum = 0;
      for (double s : squared_errors(e)) sum += s;
      return sum;
    };
    fit.efficiency = golden_section_minimum(objective, kMinFittedEfficiency, 1.0, kEfficiencyTolerance, &fit.evaluations);
    fit.at_bound = fit.efficiency > 1.0 - kEfficiencyTolerance;
    fit.constrained = sensitivity(fit.efficiency, -kSensitivityStep) >= kMinSensitivity &&
                      (fit.at_bound || sensitivity(fit.efficiency, kSensitivityStep) >= kMinSensitivity);
    if (!fit.constrained) fit.efficiency = fit.cluster_efficiency;
    fit.rms_log_error = rms(squared_errors(fit.efficiency));
    model.set_efficiency(type, fit.efficiency);
    result.links.push_back(fit);
  }

  // Residuals of every row, the latency-bound ones too (they show what the fit cannot reach).
  for (const NcclTestsFile& f : files) {
    std::vector<const NcclTestsRow*> all;
    for (const NcclTestsRow& r : f.rows) all.push_back(&r);
    const std::vector<const NcclTestsRow*> bound = bandwidth_bound_rows(f);
    const std::vector<double> predicted = model.predict(f, all);
    for (std::size_t i = 0; i < all.size(); ++i) {
      CalibrationResidual r;
      r.kind = CalibrationResidual::Kind::nccl_tests;
      r.source = f.file + ":" + std::to_string(all[i]->line);
      r.what = to_string(f.op);
      r.size_bytes = all[i]->size_bytes;
      r.gpus = f.ranks;
      r.measured = all[i]->busbw_GBps;
      r.predicted = predicted[i];
      r.fitted = std::find(bound.begin(), bound.end(), all[i]) != bound.end();
      result.residuals.push_back(r);
    }
  }
  result.calibrated = model.spec();
  return result;
}

IterationFitResult fit_in_training_efficiency(std::vector<IterationMeasurement> measured, const std::vector<LinkFit>& links) {
  for (IterationMeasurement& m : measured)
    for (const LinkFit& l : links) {
      auto t = m.scenario.cluster.link_types.find(l.link_type);
      if (t != m.scenario.cluster.link_types.end()) t->second.bandwidth_efficiency = l.efficiency;
    }
  // One fit per GPU model, in the order the GPUs first appear.
  std::vector<std::string> gpus;
  for (const IterationMeasurement& m : measured)
    if (std::find(gpus.begin(), gpus.end(), m.scenario.gpu.name) == gpus.end()) gpus.push_back(m.scenario.gpu.name);

  IterationFitResult result;
  std::map<const IterationMeasurement*, Seconds> predicted;
  for (const std::string& gpu : gpus) {
    std::vector<IterationMeasurement*> mine;
    for (IterationMeasurement& m : measured)
      if (m.scenario.gpu.name == gpu) mine.push_back(&m);
    GpuFit fit;
    fit.gpu = gpu;
    if (mine.front()->scenario.gpu.in_training_efficiency) fit.catalog_fraction = mine.front()->scenario.gpu.in_training_efficiency->fraction;
    for (const IterationMeasurement* m : mine) fit.scenarios.push_back(m->scenario.file);
    auto times = [&](double fraction) {
      std::vector<Seconds> out;
      for (IterationMeasurement* m : mine) {
        m->scenario.gpu.in_training_efficiency = InTrainingEfficiency{fraction, "fit"};
        out.push_back(run_training(m->scenario, false).iteration_s);
      }
      return out;
    };
    auto objective = [&](double fraction) {
      const std::vector<Seconds> t = times(fraction);
      double sum = 0;
      for (std::size_t i = 0; i < t.size(); ++i) sum += squared_log_error(t[i], mine[i]->measured_s);
      return sum;
    };
    fit.fraction = golden_section_minimum(objective, kMinFittedEfficiency, 1.0, kEfficiencyTolerance, &fit.evaluations);
    fit.at_bound = fit.fraction > 1.0 - kEfficiencyTolerance;
    const std::vector<Seconds> t = times(fit.fraction);
    std::vector<double> squared;
    for (std::size_t i = 0; i < t.size(); ++i) {
      squared.push_back(squared_log_error(t[i], mine[i]->measured_s));
      predicted[mine[i]] = t[i];
    }
    fit.rms_log_error = rms(squared);
    result.gpus.push_back(fit);
  }
  for (const IterationMeasurement& m : measured) {
    CalibrationResidual r;
    r.kind = CalibrationResidual::Kind::iteration;
    r.source = m.scenario.file;
    r.what = m.scenario.name;
    r.gpus = m.scenario.gpus();
    r.measured = m.measured_s;
    r.predicted = predicted.at(&m);
    r.fitted = true;
    result.residuals.push_back(r);
  }
  return result;
}

}  // namespace clustersim
