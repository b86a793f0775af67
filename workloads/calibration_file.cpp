#include "workloads/calibration_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

// The cluster files' efficiency range (cluster_spec.cpp); an in-training efficiency shares it.
constexpr double kMinEfficiency = 1e-3;
constexpr double kMaxBusbw_GBps = 1e6;       // the cluster files' bandwidth bound
constexpr double kMaxIteration_s = 1e7;      // four months for one iteration
constexpr double kMaxErrorPercent = 1e6;
constexpr long kMaxGpus = 1L << 22;          // the clusters' GPU bound

FileLocation where(const YamlField& f) { return {f.file(), f.line(), f.path()}; }

/// A row's source: required and not empty. A figure without one cannot be checked or trusted.
std::string read_source(const YamlField& row, const std::string& what) {
  auto s = row.find("source");
  if (!s) row.fail("expected source: " + what);
  std::string text = s->as_string();
  if (text.find_first_not_of(" \t") == std::string::npos) s->fail("expected " + what + ", got an empty source");
  return text;
}

/// The keys of a mapping, in file order.
std::vector<std::string> keys_of(const YamlField& f, const std::string& what) {
  if (!f.is_map()) f.fail("expected a mapping of " + what);
  std::vector<std::string> out;
  for (const auto& kv : f.node()) {
    if (!kv.first.IsScalar()) f.fail("expected " + what);
    out.push_back(kv.first.Scalar());
  }
  return out;
}

CalibrationResidual read_residual(const YamlField& f) {
  f.expect_keys({"nccl_tests", "scenario", "op", "size_bytes", "gpus", "measured_GBps", "predicted_GBps", "measured_s",
                 "predicted_s", "error_percent", "fitted"});
  CalibrationResidual r;
  auto nccl = f.find("nccl_tests");
  auto scenario = f.find("scenario");
  if (!nccl == !scenario)
    f.fail("expected the measurement this residual is of: nccl_tests: FILE:LINE or scenario: FILE (one of them)");
  const std::string unit = nccl ? "GBps" : "s";
  const double max = nccl ? kMaxBusbw_GBps : kMaxIteration_s;
  if (nccl) {
    r.kind = CalibrationResidual::Kind::nccl_tests;
    r.source = nccl->as_string();
    r.what = f.child("op").as_string();
    r.size_bytes = static_cast<Bytes>(f.child("size_bytes").as_integer_in(0, std::numeric_limits<long>::max(), "bytes"));
  } else {
    r.kind = CalibrationResidual::Kind::iteration;
    r.source = scenario->as_string();
    if (f.find("op")) f.child("op").fail("expected op only on an nccl_tests residual");
  }
  if (r.source.empty()) f.fail("expected the measurement's file, got an empty name");
  r.gpus = static_cast<int>(f.child("gpus").as_integer_in(1, kMaxGpus, "GPUs"));
  r.measured = f.child("measured_" + unit).as_number_in(0, max, unit == "s" ? "s" : "GB/s");
  r.predicted = f.child("predicted_" + unit).as_number_in(0, max, unit == "s" ? "s" : "GB/s");
  f.child("error_percent").as_number_in(-100, kMaxErrorPercent, "%");
  r.fitted = f.child("fitted").as_bool();
  return r;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// A string as a YAML double-quoted scalar.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

Calibration parse_calibration(const YamlField& root) {
  root.expect_keys({"name", "description", "fitted_on", "link_types", "gpus", "residuals"});
  Calibration c;
  c.file = root.file();
  c.name = root.child("name").as_string();
  if (auto d = root.find("description")) c.description = d->as_string();
  c.fitted_on = root.child("fitted_on").as_string();
  if (auto types = root.find("link_types"))
    for (const std::string& name : keys_of(*types, "link type names")) {
      const YamlField t = types->child(name);
      t.expect_keys({"bandwidth_efficiency", "source"});
      LinkCalibration l;
      l.link_type = name;
      l.bandwidth_efficiency = t.child("bandwidth_efficiency").as_number_in(kMinEfficiency, 1, "(a fraction of line rate)");
      l.source = read_source(t, "the measurements this efficiency was fitted to");
      l.at = where(t);
      c.link_types.push_back(l);
    }
  if (auto gpus = root.find("gpus"))
    for (const std::string& name : keys_of(*gpus, "GPU names")) {
      const YamlField g = gpus->child(name);
      g.expect_keys({"in_training_efficiency", "source"});
      GpuCalibration e;
      e.gpu = name;
      e.in_training_efficiency = g.child("in_training_efficiency").as_number_in(kMinEfficiency, 1, "(a fraction)");
      e.source = read_source(g, "the measured iteration times this efficiency was fitted to");
      e.at = where(g);
      c.gpus.push_back(e);
    }
  if (c.link_types.empty() && c.gpus.empty())
    root.fail("expected link_types or gpus: a calibration file that calibrates something");
  if (auto rows = root.find("residuals"))
    for (std::size_t i = 0; i < rows->size(); ++i) c.residuals.push_back(read_residual(rows->element(i)));
  return c;
}

Calibration load_calibration(const std::string& path, const std::string& named_by) {
  return parse_calibration(YamlField::load_file(path, named_by));
}

std::string calibration_yaml(const Calibration& c) {
  std::string out;
  out += "# Calibration from measurements on the user's own cluster, written by `clustersim calibrate`.\n";
  out += "# A scenario includes it with `calibration: FILE`: link_types replace the cluster file's\n";
  out += "# bandwidth_efficiency, gpus the catalog's in_training_efficiency; residuals give `run` its band.\n";
  out += "name: " + quoted(c.name) + "\n";
  if (!c.description.empty()) out += "description: " + quoted(c.description) + "\n";
  out += "fitted_on: " + quoted(c.fitted_on) + "\n";
  if (!c.link_types.empty()) {
    out += "link_types:\n";
    for (const LinkCalibration& l : c.link_types)
      out += "  " + l.link_type + ":\n    bandwidth_efficiency: " + fixed(l.bandwidth_efficiency, 4) +
             "\n    source: " + quoted(l.source) + "\n";
  }
  if (!c.gpus.empty()) {
    out += "gpus:\n";
    for (const GpuCalibration& g : c.gpus)
      out += "  " + g.gpu + ":\n    in_training_efficiency: " + fixed(g.in_training_efficiency, 4) +
             "\n    source: " + quoted(g.source) + "\n";
  }
  if (!c.residuals.empty()) {
    out += "residuals:  # error_percent = predicted / measured - 1\n";
    for (const CalibrationResidual& r : c.residuals) {
      if (r.kind == CalibrationResidual::Kind::nccl_tests)
        out += "  - {nccl_tests: " + quoted(r.source) + ", op: " + r.what + ", size_bytes: " + std::to_string(r.size_bytes) +
               ", gpus: " + std::to_string(r.gpus) + ", measured_GBps: " + fixed(r.measured, 2) +
               ", predicted_GBps: " + fixed(r.predicted, 2) + ", ";
      else
        out += "  - {scenario: " + quoted(r.source) + ", gpus: " + std::to_string(r.gpus) + ", measured_s: " +
               fixed(r.measured, 6) + ", predicted_s: " + fixed(r.predicted, 6) + ", ";
      out += "error_percent: " + fixed(100 * r.error(), 2) + ", fitted: " + (r.fitted ? "true" : "false") + "}\n";
    }
  }
  return out;
}

void apply_link_calibration(const Calibration& c, ClusterSpec& cluster) {
  for (const LinkCalibration& l : c.link_types) {
    auto t = cluster.link_types.find(l.link_type);
    if (t == cluster.link_types.end()) {
      std::string known;
      for (const auto& [name, _] : cluster.link_types) known += (known.empty() ? "" : ", ") + name;
      throw UserError(l.at.file, l.at.line, l.at.path,
                      "expected a link type of cluster " + cluster.name + " (" + known + "), got '" + l.link_type + "'");
    }
    t->second.bandwidth_efficiency = l.bandwidth_efficiency;
  }
}

void apply_calibration(const Calibration& c, ClusterSpec& cluster, GpuModel& gpu, const GpuCatalog& catalog) {
  apply_link_calibration(c, cluster);
  for (const GpuCalibration& g : c.gpus) {
    if (!catalog.find(g.gpu)) {
      std::string known;
      for (const std::string& name : catalog.names()) known += (known.empty() ? "" : ", ") + name;
      throw UserError(g.at.file, g.at.line, g.at.path,
                      "expected a GPU of the catalog " + catalog.file() + " (" + known + "), got '" + g.gpu + "'");
    }
    if (g.gpu == gpu.name) gpu.in_training_efficiency = InTrainingEfficiency{g.in_training_efficiency, g.source + " (" + c.file + ")"};
  }
}

std::optional<PredictionBand> prediction_band(const Calibration& c, int gpus) {
  auto rows_of = [&](bool iteration) {
    std::vector<const CalibrationResidual*> out;
    for (const CalibrationResidual& r : c.residuals)
      if (iteration ? r.kind == CalibrationResidual::Kind::iteration : r.kind == CalibrationResidual::Kind::nccl_tests && r.fitted)
        out.push_back(&r);
    return out;
  };
  std::vector<const CalibrationResidual*> rows = rows_of(true);
  const bool iteration = rows.size() >= 2;
  if (!iteration) rows = rows_of(false);
  if (rows.empty()) return std::nullopt;
  PredictionBand band;
  band.iteration_times = iteration;
  double nearest = std::numeric_limits<double>::infinity();
  for (const CalibrationResidual* r : rows) {
    band.largest_gpus = std::max(band.largest_gpus, r->gpus);
    const double distance = std::abs(std::log2(static_cast<double>(r->gpus) / gpus));
    // Ties go to the larger count: extrapolating down in scale is safer than up.
    if (distance < nearest - 1e-12 || (distance < nearest + 1e-12 && r->gpus > band.at_gpus)) {
      nearest = distance;
      band.at_gpus = r->gpus;
    }
  }
  for (const CalibrationResidual* r : rows)
    if (r->gpus == band.at_gpus) {
      band.max_abs_error = std::max(band.max_abs_error, std::abs(r->error()));
      ++band.rows;
    }
  return band;
}

}  // namespace clustersim
