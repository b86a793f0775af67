// `clustersim calibrate`: fit the link efficiencies and in-training efficiencies to the user's own
// nccl-tests output and measured iteration times, write them as a calibration file a scenario can
// include, and report the residual of every input row (simulator/calibration_fit.hpp says how).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>

#include "simulator/calibration_fit.hpp"
#include "simulator/cli/commands.hpp"
#include "topologies/cluster_overrides.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

constexpr double kMaxIteration_s = 1e7;  // the calibration file's bound: four months

struct Options {
  std::string cluster;
  std::vector<std::string> nccl_tests;
  std::string gpus;
  std::vector<std::string> iterations;
  std::string out;
  std::string name;
  std::string json, csv;
  std::vector<std::string> sets;  // --set: cluster.* on --cluster and the --iteration scenarios; scenario keys on those
};

/// "SCENARIO=SECONDS": a scenario and the iteration time measured running it.
IterationMeasurement read_iteration(const std::string& text, const std::vector<std::string>& sets) {
  const std::size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UserError("command line", 0, "--iteration", "expected SCENARIO=SECONDS (a measured iteration time), got '" + text + "'");
  const std::string path = text.substr(0, eq);
  IterationMeasurement m;
  m.measured_s = parse_number(text.substr(eq + 1), "--iteration", 1e-6, kMaxIteration_s);
  check_input_path(path, "--iteration");
  m.scenario = named_by("--iteration", path, [&] { return load_scenario(path, sets); });
  return m;
}

/// "+1.23%"; a residual that rounds to zero prints as +0.00%, never -0.00%.
std::string percent(double fraction) {
  const double hundredths = std::round(1e4 * fraction);
  return fmt::format("{:+.2f}%", hundredths == 0 ? 0.0 : hundredths / 100);
}

std::string describe_files(const std::vector<std::string>& files, const std::vector<NcclTestsFile>& read) {
  std::string out;
  for (const std::string& f : files)
    for (const NcclTestsFile& n : read)
      if (n.file == f) out += fmt::format("{}{} ({}, {} GPUs)", out.empty() ? "" : ", ", f, to_string(n.op), n.ranks);
  return out;
}

Calibration make_calibration(const Options& o, const ClusterSpec& cluster, const std::vector<NcclTestsFile>& files,
                             const LinkFitResult& links, const IterationFitResult& gpus) {
  Calibration c;
  c.name = !o.name.empty() ? o.name : !o.out.empty() ? std::filesystem::path(o.out).stem().string() : cluster.name + "-calibration";
  c.fitted_on = cluster.name;
  c.description = fmt::format("fitted by clustersim calibrate on cluster {} ({}) to {} nccl-tests file(s) and {} measured iteration(s)",
                              cluster.name, cluster.file, files.size(), gpus.residuals.size());
  for (const LinkFit& l : links.links)
    if (l.constrained) c.link_types.push_back({l.link_type, l.efficiency,
                            fmt::format("clustersim calibrate: {} bandwidth-bound rows (busbw >= {:.0f}% of the file's peak) of {}; "
                                        "rms error {:.2f}%",
                                        l.fitted_rows, 100 * kBandwidthBoundFraction, describe_files(l.files, files),
                                        100 * l.rms_log_error),
                            {}});
  for (const GpuFit& g : gpus.gpus) {
    std::string measured;
    for (const CalibrationResidual& r : gpus.residuals)
      if (std::find(g.scenarios.begin(), g.scenarios.end(), r.source) != g.scenarios.end())
        measured += fmt::format("{}{} measured at {:g} s", measured.empty() ? "" : ", ", r.source, r.measured);
    c.gpus.push_back({g.gpu, g.fraction,
                      fmt::format("clustersim calibrate: iteration times {}; rms error {:.2f}%", measured, 100 * g.rms_log_error),
                      {}});
  }
  c.residuals = links.residuals;
  c.residuals.insert(c.residuals.end(), gpus.residuals.begin(), gpus.residuals.end());
  return c;
}

void print_report(const ClusterSpec& cluster, const std::vector<NcclTestsFile>& files, const LinkFitResult& links,
                  const IterationFitResult& gpus, std::ostream& out) {
  out << fmt::format("# clustersim calibrate: cluster {} ({})\n", cluster.name, cluster.file);
  if (!links.links.empty()) {
    out << fmt::format("# link efficiencies: simulated busbw (collective --algo auto) against rows at >= {:.0f}% of "
                             "each file's peak busbw\n",
                             100 * kBandwidthBoundFraction);
    out << fmt::format("# {:<10} {:>8} {:>8} {:>5} {:>10}  {}\n", "link type", "cluster", "fitted", "rows", "rms error", "files");
    for (const LinkFit& l : links.links)
      out << fmt::format("  {:<10} {:>8.4f} {:>8} {:>5} {:>9.2f}%  {}\n", l.link_type, l.cluster_efficiency,
                               l.constrained ? fmt::format("{:.4f}", l.efficiency) : "kept", l.fitted_rows, 100 * l.rms_log_error, describe_files(l.files, files));
  }
  if (!gpus.gpus.empty()) {
    out << "# in-training efficiency: simulated iteration (run) against measured iteration times\n";
    out << fmt::format("# {:<14} {:>8} {:>8} {:>9} {:>10}\n", "GPU", "catalog", "fitted", "scenarios", "rms error");
    for (const GpuFit& g : gpus.gpus)
      out << fmt::format("  {:<14} {:>8} {:>8.4f} {:>9} {:>9.2f}%\n", g.gpu,
                               g.catalog_fraction ? fmt::format("{:.4f}", *g.catalog_fraction) : "none", g.fraction,
                               g.scenarios.size(), 100 * g.rms_log_error);
  }
  for (const LinkFit& l : links.links)
    if (!l.constrained)
      out << fmt::format("note: {} kept at the cluster's {:.4f}: its files' bandwidth-bound rows hardly depend on it "
                               "(another link is their bottleneck in the model), so they cannot calibrate it\n",
                               l.link_type, l.cluster_efficiency);
  for (const LinkFit& l : links.links)
    if (l.at_bound && l.constrained)
      out << fmt::format("note: {} fitted at the bound 1.0: the measurements exceed what its line rate allows in the "
                               "model; check the cluster's bandwidth for it\n", l.link_type);
  for (const GpuFit& g : gpus.gpus)
    if (g.at_bound)
      out << fmt::format("note: {} fitted at the bound 1.0: the measured iterations are faster than the model at "
                               "benchmark speed\n", g.gpu);

  if (!links.residuals.empty()) {
    out << "\n# nccl-tests residuals (error = predicted / measured - 1; fitted: bandwidth-bound rows)\n";
    std::size_t width = 9;
    for (const CalibrationResidual& r : links.residuals) width = std::max(width, r.source.size());
    out << fmt::format("# {:<{}} {:<14} {:>5} {:>12} {:>9} {:>9} {:>8} {}\n", "file:line", width, "op", "GPUs", "size (B)",
                             "measured", "predicted", "error", "fitted");
    for (const CalibrationResidual& r : links.residuals)
      out << fmt::format("  {:<{}} {:<14} {:>5} {:>12} {:>9.2f} {:>9.2f} {:>8} {}\n", r.source, width, r.what, r.gpus,
                               r.size_bytes, r.measured, r.predicted, percent(r.error()), r.fitted ? "yes" : "no");
  }
  if (!gpus.residuals.empty()) {
    out << "\n# iteration residuals (error = predicted / measured - 1)\n";
    std::size_t width = 8;
    for (const CalibrationResidual& r : gpus.residuals) width = std::max(width, r.source.size());
    out << fmt::format("# {:<{}} {:>6} {:>12} {:>13} {:>8}\n", "scenario", width, "GPUs", "measured (s)", "predicted (s)", "error");
    for (const CalibrationResidual& r : gpus.residuals)
      out << fmt::format("  {:<{}} {:>6} {:>12.4f} {:>13.4f} {:>8}\n", r.source, width, r.gpus, r.measured, r.predicted,
                               percent(r.error()));
  }
}

nlohmann::ordered_json residuals_json(const std::vector<CalibrationResidual>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const CalibrationResidual& r : rows) {
    const bool nccl = r.kind == CalibrationResidual::Kind::nccl_tests;
    nlohmann::ordered_json j{{"source", r.source}, {"what", r.what}, {"gpus", r.gpus}};
    if (nccl) j["size_bytes"] = r.size_bytes;
    // nccl-tests rows compare bus bandwidths, iteration rows times: the unit is in the name.
    j[nccl ? "measured_busbw_GBps" : "measured_iteration_s"] = r.measured;
    j[nccl ? "busbw_GBps" : "iteration_s"] = r.predicted;
    j["error"] = r.error();
    if (nccl) j["fitted"] = r.fitted;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::ordered_json calibrate_json(const Options& o, const ClusterSpec& cluster, const std::vector<IterationMeasurement>& measured,
                                      const LinkFitResult& links, const IterationFitResult& gpus) {
  nlohmann::ordered_json iterations = nlohmann::ordered_json::array();
  for (const IterationMeasurement& m : measured)
    iterations.push_back({{"scenario_file", m.scenario.file}, {"measured_iteration_s", m.measured_s}});
  nlohmann::ordered_json j = json_document("calibrate", {{"cluster", cluster.name},
                                                         {"cluster_file", o.cluster},
                                                         {"overrides", o.sets},
                                                         {"nccl_tests", o.nccl_tests},
                                                         {"iterations", iterations},
                                                         {"out", o.out.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.out)}});
  j["links"] = nlohmann::ordered_json::array();
  for (const LinkFit& l : links.links)
    j["links"].push_back({{"link_type", l.link_type}, {"efficiency", l.efficiency}, {"cluster_efficiency", l.cluster_efficiency},
                          {"constrained", l.constrained}, {"at_bound", l.at_bound}, {"fitted_rows", l.fitted_rows},
                          {"rms_log_error", l.rms_log_error}, {"files", l.files}});
  j["gpus"] = nlohmann::ordered_json::array();
  for (const GpuFit& g : gpus.gpus)
    j["gpus"].push_back({{"gpu", g.gpu}, {"efficiency", g.fraction},
                         {"catalog_efficiency", g.catalog_fraction ? nlohmann::ordered_json(*g.catalog_fraction) : nlohmann::ordered_json()},
                         {"at_bound", g.at_bound}, {"rms_log_error", g.rms_log_error}, {"scenario_files", g.scenarios}});
  j["nccl_tests_residuals"] = residuals_json(links.residuals);
  j["iteration_residuals"] = residuals_json(gpus.residuals);
  return j;
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit link and in-training efficiencies to your own nccl-tests output and iteration times");
  cmd->add_option("nccl_tests", o->nccl_tests, "nccl-tests output files, as all_reduce_perf etc. print them");
  cmd->add_option("--cluster", o->cluster, "cluster YAML the measurements were taken on")->required();
  cmd->add_option("--gpus,-g", o->gpus, "GPUs of a file without nccl-tests' '#  Rank' device lines");
  cmd->add_option("--iteration", o->iterations, "SCENARIO=SECONDS: a measured iteration time (repeatable)");
  cmd->add_option("--out,-o", o->out, "write the calibration file (YAML) here");
  cmd->add_option("--name", o->name, "the calibration's name (default: the --out file's stem)");
  cmd->add_option("--json", o->json, "also write the fit and residuals as JSON (- or /dev/stdout: to stdout, without the text)");
  cmd->add_option("--csv", o->csv, "also write every input row's residual as CSV, JSON's field names (- or /dev/stdout: to stdout, without the text)");
  cmd->add_option("--set", o->sets,
                  "override a field first: cluster.PATH=VALUE on the --cluster and the --iteration scenarios' clusters; "
                  "a scenario key on the --iteration scenarios (repeatable)");
  cmd->callback([o] {
    if (o->nccl_tests.empty() && o->iterations.empty())
      throw UserError("command line", 0, "nccl_tests",
                      "expected nccl-tests output files and/or --iteration SCENARIO=SECONDS (see clustersim calibrate --help)");
    std::vector<std::string> cluster_sets;
    for (const std::string& set : o->sets) {
      if (is_cluster_override(set)) cluster_sets.push_back(set);
      else if (o->iterations.empty())
        throw UserError("command line", 0, "--set",
                        "expected cluster.PATH=VALUE (a field of the --cluster file); a scenario key needs --iteration "
                        "SCENARIO=SECONDS to apply to; got '" + set + "'");
    }
    check_input_path(o->cluster, "--cluster");
    const ClusterSpec cluster =
        named_by("--cluster", o->cluster, [&] { return load_cluster_spec_with(o->cluster, cluster_sets, "--cluster"); });
    std::optional<int> gpus;
    if (!o->gpus.empty()) gpus = static_cast<int>(parse_integer(o->gpus, "--gpus", 2, cluster.gpu_count()));
    std::vector<NcclTestsFile> files;
    for (const std::string& f : o->nccl_tests) {
      check_input_path(f, "nccl_tests");
      files.push_back(read_nccl_tests(f, gpus, "nccl_tests"));
    }
    std::vector<IterationMeasurement> measured;
    for (const std::string& it : o->iterations) measured.push_back(read_iteration(it, o->sets));
    if (!o->out.empty()) check_output_path(o->out, "--out");
    if (!o->json.empty()) check_json_path(o->json);
    check_csv_path(o->csv, o->json);

    const LinkFitResult links = fit_link_efficiencies(cluster, files);
    const IterationFitResult gpu_fit = fit_in_training_efficiency(measured, links.links);
    std::ostringstream text;
    print_report(cluster, files, links, gpu_fit, text);
    if (!o->out.empty()) {
      const bool any = std::any_of(links.links.begin(), links.links.end(), [](const LinkFit& l) { return l.constrained; });
      if (!any && gpu_fit.gpus.empty())
        throw UserError(o->out, 0, "--out", "nothing to write: the measurements constrain no link type and no GPU (see the notes without --out)");
      write_file(o->out, calibration_yaml(make_calibration(*o, cluster, files, links, gpu_fit)), "--out");
      text << "\nwrote " << o->out << "\n";
    }
    const nlohmann::ordered_json document = calibrate_json(*o, cluster, measured, links, gpu_fit);
    if (!o->json.empty()) write_json(o->json, document);
    if (!o->csv.empty()) {
      // Both residual tables in one, each row saying which it is (their measured columns differ).
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const char* table : {"nccl_tests_residuals", "iteration_residuals"})
        for (const auto& r : document[table]) {
          nlohmann::ordered_json row{{"table", table}};
          row.update(r);
          rows.push_back(std::move(row));
        }
      write_csv(o->csv, rows);
    }
    if (table_to_stdout(o->json, o->csv)) std::cout << text.str();
  });
}

}  // namespace clustersim::cli
