// `clustersim compare`: one scenario under several pipeline schedules, one row each - iteration
// time, bubble, MFU, peak memory, pipeline traffic - and optionally their timelines as one SVG.
// Each schedule runs in its own child process (SimGrid holds one platform per process), -j of them at
// a time, rows in the order asked; a schedule that cannot run the scenario gets a row saying why.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <optional>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "simulator/cli/commands.hpp"
#include "simulator/progress.hpp"
#include "simulator/report_timeline.hpp"
#include "simulator/training_run.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

struct CompareOptions {
  std::string scenario;
  std::vector<std::string> schedules, overrides;
  std::string json, csv, svg, kernels, report, catalog, topology_level;
  bool allow_oom = false;
  std::string jobs = "1";
  std::string fold = "exact", tp_collectives = "auto", cp_exchanges = "auto", ep_all_to_alls = "auto",
              zero_collectives = "auto";

  /// Where TP collectives, CP exchanges, MoE all-to-alls and ZeRO's collectives run, as in run (errors
  /// name the option).
  Placements placements() const {
    const FoldMode f = parse_fold(fold);
    return {parse_placement(tp_collectives, f, "--tp-collectives"), parse_placement(cp_exchanges, f, "--cp-exchanges"),
            parse_placement(ep_all_to_alls, f, "--ep-all-to-alls"), parse_placement(zero_collectives, f, "--zero-collectives")};
  }
};

double gib(double bytes) { return bytes / (1ULL << 30); }

/// Chunks per rank for a schedule: what it requires, else the scenario's own, else 2 (an
/// interleaved schedule asked for on a scenario written with one chunk).
int chunks_for(const Schedule& s, int scenario_chunks) {
  if (s.chunks_required() > 0) return s.chunks_required();
  return scenario_chunks > 1 ? scenario_chunks : 2;
}

/// One schedule's row; `scenario_chunks` is the scenario's own virtual_stages, read once by the caller.
nlohmann::ordered_json simulate(const CompareOptions& o, const std::string& name, int scenario_chunks,
                                const KernelTable* kernels) {
  nlohmann::ordered_json row;
  row["schedule"] = name;
  try {
    const Schedule& schedule = *find_schedule(name);
    const int v = chunks_for(schedule, scenario_chunks);
    std::vector<std::string> overrides = o.overrides;
    overrides.push_back("schedule=" + name);
    overrides.push_back("parallel.virtual_stages=" + std::to_string(v));
    const ScenarioSpec s = load_scenario(o.scenario, overrides);
    const FoldMode fold = parse_fold(o.fold);
    const bool drawn = !o.report.empty() || !o.svg.empty();  // both draw report_timeline's picture
    const RunReport r = run_training(s, o.allow_oom, kernels, fold, Solver::fluid, o.placements(), drawn);
    double bubble = 0, peak_activations = 0, peak_total = 0;
    int activation_stage = 0, total_stage = 0;
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const StageReport& st : r.stages) {
      bubble += st.time.bubble_s / r.iteration_s / static_cast<double>(r.stages.size());
      if (st.memory.activations > peak_activations) peak_activations = st.memory.activations, activation_stage = st.pipeline_rank;
      if (st.memory.total > peak_total) peak_total = st.memory.total, total_stage = st.pipeline_rank;
      stages.push_back(stage_json(st));
    }
    row["feasible"] = true;
    row["virtual_stages"] = v;
    row["iteration_s"] = r.iteration_s;
    row["bubble_fraction"] = bubble;
    row["mfu"] = r.mfu;
    row["peak_activation_bytes"] = peak_activations;
    row["peak_activation_stage"] = activation_stage;
    row["peak_total_bytes"] = peak_total;
    row["peak_total_stage"] = total_stage;
    // One pipeline's transfers, for every TP rank (each sends its 1/t share) and every replica.
    row["pp_bytes"] = static_cast<double>(r.iteration.pp_bytes) * s.layout.tp * s.layout.dp;
    row["stages"] = stages;
    row["ranks"] = s.layout.pp;
    if (drawn) row["report"] = report_run_json(report_run(r, fmt::format("{} (v {})", name, v)));
  } catch (const UserError& e) {
    row["feasible"] = false;
    row["why"] = e.what();
    if (!o.report.empty() || !o.svg.empty()) {
      ReportRun none;
      none.name = name;
      none.why = e.what();
      row["report"] = report_run_json(none);
    }
  }
  return row;
}

void print_rows(const std::string& scenario, const std::vector<nlohmann::ordered_json>& rows) {
  std::cout << fmt::format("# clustersim compare: {}\n", scenario);
  std::cout << fmt::format("# {:<14} {:>2} {:>10} {:>7} {:>6} {:>17} {:>17} {:>9}\n", "schedule", "v", "iteration",
                           "bubble", "MFU", "peak activations", "peak total", "pp");
  std::cout << fmt::format("# {:<14} {:>2} {:>10} {:>7} {:>6} {:>17} {:>17} {:>9}\n", "", "", "(s)", "(%)", "(%)",
                           "(GiB, stage)", "(GiB, stage)", "(GB)");
  for (const auto& r : rows) {
    if (!r["feasible"].get<bool>()) {
      std::cout << fmt::format("  {:<14} infeasible: {}\n", r["schedule"].get<std::string>(), r["why"].get<std::string>());
      continue;
    }
    std::cout << fmt::format("  {:<14} {:>2} {:>10.3f} {:>7.1f} {:>6.1f} {:>11.2f} ({:>3}) {:>11.2f} ({:>3}) {:>9.1f}\n",
                             r["schedule"].get<std::string>(), r["virtual_stages"].get<int>(), r["iteration_s"].get<double>(),
                             100 * r["bubble_fraction"].get<double>(), 100 * r["mfu"].get<double>(),
                             gib(r["peak_activation_bytes"].get<double>()), r["peak_activation_stage"].get<int>(),
                             gib(r["peak_total_bytes"].get<double>()), r["peak_total_stage"].get<int>(),
                             r["pp_bytes"].get<double>() / 1e9);
  }
}

/// --svg: the report's timeline (time axis, F/B/W and chunks, streams, a row saying why for each
/// schedule that could not run) as a file of its own.
std::string svg_of(const std::vector<nlohmann::ordered_json>& rows) {
  std::vector<ReportRun> runs;
  for (const auto& r : rows) runs.push_back(report_run_from_json(r["report"]));
  return report_timeline_svg_file(runs);
}

std::string report_of(const ScenarioSpec& scenario, const std::vector<nlohmann::ordered_json>& rows,
                      std::optional<PictureLevel> level) {
  ReportPage page = report_page(scenario, "compare");
  add_topology_picture(page, scenario.cluster, level, scenario.gpus());
  for (const auto& r : rows) page.runs.push_back(report_run_from_json(r["report"]));
  return report_html(page);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand("compare", "one scenario under several pipeline schedules, side by side");
  cmd->add_option("scenario", o->scenario, "scenario YAML")->required();
  cmd->add_option("--schedules", o->schedules, "schedules to compare, e.g. 1f1b,interleaved,zb-h1,zb-v,dualpipev")
      ->delimiter(',')
      ->required();
  cmd->add_option("--set", o->overrides, "override a field: --set parallel.pp=16 (repeatable)");
  cmd->add_option("--catalog", o->catalog, "the GPU catalog to read the cluster's GPU from (default: gpus.yaml beside the cluster file or above it)");
  cmd->add_option("--json", o->json, "write the rows as JSON (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--csv", o->csv, "write the rows as CSV, JSON's field names (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--svg", o->svg, "draw every schedule's per-rank timeline into one SVG, as --report draws it");
  cmd->add_option("--report", o->report, "write a self-contained HTML report: every schedule on one time scale, the cluster");
  cmd->add_option("--topology-level", o->topology_level, "the report's cluster picture: node, leaf or spine (default: the finest with at most 40 boxes)");
  cmd->add_option("--kernels", o->kernels, "CSV of measured kernel times that override the compute model");
  cmd->add_option("-j", o->jobs, "schedules simulated at a time, each in its own process (default 1)");
  cmd->add_flag("--allow-oom", o->allow_oom, "simulate schedules whose stages do not fit in GPU memory")
      ->disable_flag_override();
  cmd->add_option("--fold", o->fold,
                  "data-parallel replicas simulated once for several, as in run: exact (the default), none, all, "
                  "assume");
  cmd->add_option("--tp-collectives", o->tp_collectives, "with --fold exact, none or all, as in run: auto, alone, in-place");
  cmd->add_option("--cp-exchanges", o->cp_exchanges, "with --fold exact, none or all, as in run: auto, alone, in-place");
  cmd->add_option("--ep-all-to-alls", o->ep_all_to_alls, "with --fold exact, none or all, as in run: auto, alone, in-place");
  cmd->add_option("--zero-collectives", o->zero_collectives, "with --fold exact, none or all, as in run: auto, alone, in-place");
  cmd->callback([o] {
    o->placements();  // the options' errors before any row
    check_input_path(o->scenario, "scenario");
    if (!o->kernels.empty()) check_input_path(o->kernels, "--kernels");
    if (!o->catalog.empty()) o->overrides.push_back(catalog_override(o->catalog));
    for (const std::string& name : o->schedules)
      if (!find_schedule(name))
        throw UserError("command line", 0, "--schedules",
                        "expected pipeline schedules from: " + schedule_names() + "; got '" + name + "'");
    // A bad file or override is the user's error, for every row.
    const ScenarioSpec scenario = named_by("scenario", o->scenario, [&] { return load_scenario(o->scenario, o->overrides); });
    const int scenario_chunks = scenario.virtual_stages;
    std::optional<KernelTable> kernels;
    if (!o->kernels.empty()) kernels = load_kernel_table(o->kernels, "--kernels");
    if (!o->json.empty()) check_json_path(o->json);
    check_csv_path(o->csv, o->json);
    if (!o->svg.empty()) check_output_path(o->svg, "--svg");
    if (!o->report.empty()) check_output_path(o->report, "--report");
    const std::optional<PictureLevel> topology_level = parse_topology_level(o->topology_level, "--topology-level");
    if (topology_level && o->report.empty())
      throw UserError("command line", 0, "--topology-level", "expected --report as well: it sets the level of the report's cluster picture");
    const int jobs = static_cast<int>(parse_integer(o->jobs, "-j", 1, 256));
    Progress bar("compare", progress_wanted());
    const long total = static_cast<long>(o->schedules.size());
    bar.update(0, total);
    const std::vector<std::optional<std::string>> texts = run_in_children(
        o->schedules.size(),
        [&](std::size_t k) {
          spdlog::info("compare: schedule {} of {}: {}", k + 1, o->schedules.size(), o->schedules[k]);
          return simulate(*o, o->schedules[k], scenario_chunks, kernels ? &*kernels : nullptr).dump();
        },
        jobs, [&](std::size_t finished) { bar.update(static_cast<long>(finished), total); });
    bar.finish();
    std::vector<nlohmann::ordered_json> rows;  // in the order the schedules were asked for
    for (const std::optional<std::string>& text : texts) {
      if (!text) throw std::runtime_error("a simulation child process failed");
      rows.push_back(nlohmann::ordered_json::parse(*text));
    }
    if (table_to_stdout(o->json, o->csv)) print_rows(o->scenario, rows);
    if (!o->csv.empty()) {
      nlohmann::ordered_json table = nlohmann::ordered_json::array();
      for (auto r : rows) {
        r.erase("report");  // an object of the HTML report's, not a column
        table.push_back(std::move(r));
      }
      write_csv(o->csv, table);
    }
    if (!o->svg.empty()) write_file(o->svg, svg_of(rows), "--svg");
    if (!o->report.empty()) write_file(o->report, report_of(scenario, rows, topology_level), "--report");
    if (!o->json.empty()) {
      // The scenario as written (after --set); each row says the schedule and chunks it ran with.
      nlohmann::ordered_json j = json_document("compare", scenario_config_json(scenario));
      j["config"]["schedules"] = o->schedules;
      j["config"]["allow_oom"] = o->allow_oom;
      j["config"]["fold"] = o->fold;
      j["config"]["tp_collectives"] = o->tp_collectives;
      j["config"]["cp_exchanges"] = o->cp_exchanges;
      j["config"]["ep_all_to_alls"] = o->ep_all_to_alls;
      j["config"]["zero_collectives"] = o->zero_collectives;
      j["config"]["kernels"] = o->kernels.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o->kernels);
      j["scenario"] = scenario.name;
      j["rows"] = nlohmann::ordered_json::array();
      for (auto r : rows) {
        r.erase("report");
        j["rows"].push_back(r);
      }
      write_json(o->json, j);
    }
  });
}

}  // namespace clustersim::cli
