// `clustersim run`: one training iteration of a scenario, with where its time and memory go.
#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>

#include "simulator/cli/commands.hpp"
#include "simulator/cli/run_jobs.hpp"
#include "simulator/draw_summary.hpp"
#include "simulator/trace_writer.hpp"
#include "simulator/training_run.hpp"
#include "topologies/user_error.hpp"
#include "workloads/jobs.hpp"

namespace clustersim::cli {

namespace {

struct RunOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string json, csv, trace, trace_ranks, kernels, report, topology_level;
  bool allow_oom = false;
  std::string fold = "exact";
  std::string solver = "fluid";
  std::string tp_collectives = "auto";
  std::string cp_exchanges = "auto";
  std::string ep_all_to_alls = "auto";
  std::string zero_collectives = "auto";
  std::string calibration, catalog;
  int repeat = 1;
  bool fold_given = false;
};

/// What the scenario's variability does to this run, in one line; empty without it.
std::string variability_text(const ScenarioSpec& s, const RunReport& r) {
  const VariabilitySpec& v = s.variability;
  if (!v.varies()) return {};
  const char* names[] = {"", "normal", "lognormal", "empirical"};
  std::string out = fmt::format("seed {}", v.seed);
  if (v.gpu_speed.distribution != SpeedDistribution::none)
    out += fmt::format(", GPU speeds {}", names[static_cast<int>(v.gpu_speed.distribution)]);
  if (!v.gpus.empty() || !v.nodes.empty()) out += fmt::format(", {} GPUs and {} nodes named", v.gpus.size(), v.nodes.size());
  if (r.slowest_gpu >= 0) out += fmt::format("; slowest GPU {} at {:.4f}", r.slowest_gpu, r.slowest_speed);
  int failed = 0;
  for (const LinkChange& c : v.links) failed += c.failed;
  if (!v.links.empty())
    out += fmt::format("; {} links degraded, {} failed", static_cast<int>(v.links.size()) - failed, failed);
  for (const FlapState& f : r.flaps.links)
    out += fmt::format("; {} flapping: down in {:.1f}% of iterations, {} in this draw", f.link, 100 * f.chance,
                       !f.down ? "up" : f.rerouted ? "down (routed around)" : fmt::format("down (stalls {:.3f} s)", f.stall_s));
  return out;
}

double gib(Bytes b) { return static_cast<double>(b) / (1ULL << 30); }

/// The calibration in use and the prediction band its residuals give at this run's scale.
void print_calibration(const ScenarioSpec& s) {
  const Calibration& c = *s.calibration;
  std::string values;
  for (const LinkCalibration& l : c.link_types) values += fmt::format("{}{} {:.4f}", values.empty() ? "" : ", ", l.link_type, l.bandwidth_efficiency);
  for (const GpuCalibration& g : c.gpus)
    if (g.gpu == s.gpu.name) values += fmt::format("{}{} in training {:.4f}", values.empty() ? "" : ", ", g.gpu, g.in_training_efficiency);
  std::cout << fmt::format("calibration: {} ({}, fitted on {}: {})\n", c.file, c.name, c.fitted_on,
                           values.empty() ? "no value for this cluster's link types or GPU" : values);
  const std::optional<PredictionBand> band = prediction_band(c, s.gpus());
  if (!band) {
    std::cout << "prediction band: none (the calibration file has no residuals)\n";
    return;
  }
  std::cout << fmt::format("prediction band         {:>12}   (calibration residuals at {} GPUs: {} {}{})\n",
                           fmt::format("+/- {:.1f}%", 100 * band->max_abs_error), band->at_gpus, band->rows,
                           band->iteration_times ? "measured iteration times" : "bandwidth-bound nccl-tests rows, communication only",
                           s.gpus() > band->largest_gpus
                               ? fmt::format("; this run's {} GPUs are beyond the largest calibrated ({}): extrapolated", s.gpus(), band->largest_gpus)
                               : "");
}


void print_report(const ScenarioSpec& s, const RunReport& r) {
  const ParallelLayout& l = s.layout;
  std::cout << fmt::format("# clustersim run: {} ({} on {}; tp {}{} pp {} dp {}{} v {}; {} schedule, {} microbatches "
                           "of {}; {} recompute; {})\n",
                           s.name, s.model.name, s.gpus_text(), l.tp,
                           l.cp > 1 ? fmt::format(" cp {}", l.cp) : "", l.pp, l.dp,
                           s.ep > 1 ? fmt::format(" ep {}", s.ep) : "", s.virtual_stages,
                           s.schedule_name, s.microbatches(), s.microbatch,
                           recompute_text(s.recompute, s.recompute_modules),
                           s.precision);
  // What the catalog cannot back with a cited source, before any figure built on it.
  for (const UncalibratedParameter& u : s.gpu.uncalibrated_parameters(s.precision))
    std::cout << "uncalibrated: " << u.describe() << "\n";
  std::cout << fmt::format("iteration time          {:>12.3f} s\n", r.iteration_s);
  if (s.heterogeneous()) {
    std::string models;
    for (const StageReport& st : r.stages) models += fmt::format("{}{} {}", models.empty() ? "" : ", ", st.pipeline_rank, st.gpu_model);
    std::cout << "GPU model per stage     " << models << "   (times on " << s.gpu.name << ", each unit at its models' speed)\n";
  }
  if (s.calibration) print_calibration(s);
  if (const std::string v = variability_text(s, r); !v.empty()) std::cout << "variability             " << v << "\n";
  const IterationResult& it = r.iteration;
  const int others = it.replicas - it.simulated_replicas;
  std::cout << fmt::format("GPUs replayed           {:>12}   ({} replicas x {} stages x {} GPUs in lockstep; {} simulated, {})\n",
                           it.replicas * l.pp * it.gpus_per_rank, it.replicas, l.pp, it.gpus_per_rank,
                           it.simulated_replicas,
                           others == 0                     ? std::string("none folded")
                           : it.fold == FoldMode::assume ? fmt::format("{} assumed identical to replica 0 without proof, "
                                                                       "their traffic and that of TP ranks > 0 off the "
                                                                       "fabric (--fold exact, the default, replays it)", others)
                                                         : fmt::format("{} folded exactly onto them", others));
  // Which split of a full link the fabric's times rest on: the two differ most where a pipeline
  // transfer meets a gradient ring channel on a NIC (README, "Bandwidth sharing").
  std::cout << "fabric sharing          "
            << (s.cluster.fabric.sharing == Sharing::equal
                    ? "equal   (one share per flow on a full link, as RDMA NICs arbitrate)"
                    : "latency (a full link split in inverse proportion to flow latency, SimGrid CM02's)")
            << "\n";
  if (it.simulated_replicas > 1)
    std::cout << fmt::format("breakdown of replica    {:>12}   (the slowest)\n", it.reported_replica);
  if (!it.tp_collectives.empty()) std::cout << "TP collectives          " << it.tp_collectives << "\n";
  if (!it.cp_exchanges.empty()) std::cout << "CP exchanges            " << it.cp_exchanges << "\n";
  if (!it.ep_all_to_alls.empty()) std::cout << "EP all-to-alls          " << it.ep_all_to_alls << "\n";
  if (!it.zero_collectives.empty()) std::cout << "ZeRO collectives        " << it.zero_collectives << "\n";
  std::cout << fmt::format("tokens/s                {:>12.0f}\n", r.tokens_per_s);
  std::cout << fmt::format("model TFLOP/s per GPU   {:>12.1f}   (Megatron: executed FLOPs, recompute included)\n",
                           r.model_tflops_per_gpu);
  std::cout << fmt::format("MFU                     {:>11.1f}%   (PaLM: 6N + 12lsh per token over {} peak)\n",
                           100 * r.mfu, s.precision);
  std::cout << "\n# memory per pipeline stage (GiB per GPU)\n";
  std::cout << fmt::format("# {:>5} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9}\n", "stage", "weights", "grads", "optimizer",
                           "activations", "workspace", "total");
  for (const StageReport& st : r.stages)
    std::cout << fmt::format("  {:>5} {:>9.2f} {:>9.2f} {:>9.2f} {:>11.2f} {:>9.2f} {:>9.2f}\n", st.pipeline_rank,
                             gib(st.memory.weights), gib(st.memory.gradients), gib(st.memory.optimizer),
                             gib(st.memory.activations), gib(st.memory.recompute_workspace), gib(st.memory.total));
  std::cout << "\n# time per pipeline stage (s): exposed communication, bubble and idle add up to the iteration\n";
  // Expert columns only for MoE models, so dense reports read as before.
  const bool moe = s.model.moe.has_value(), cp = s.layout.cp > 1;
  std::cout << fmt::format("# {:>5} {:>9} {:>9} {:>8}", "stage", "compute", "recompute", "tp")
            << (cp ? fmt::format(" {:>8}", "cp") : "") << (moe ? fmt::format(" {:>8} {:>9}", "ep", "imbalance") : "")
            << fmt::format(" {:>8} {:>8} {:>9} {:>8} {:>8}\n", "pp", "dp", "optimizer", "bubble", "idle");
  for (const StageReport& st : r.stages) {
    const RankBreakdown& b = st.time;
    std::cout << fmt::format("  {:>5} {:>9.3f} {:>9.3f} {:>8.3f}", st.pipeline_rank, b.compute_s, b.recompute_s, b.tp_s)
              << (cp ? fmt::format(" {:>8.3f}", b.cp_s) : "") << (moe ? fmt::format(" {:>8.3f} {:>9.3f}", b.ep_s, b.imbalance_s) : "")
              << fmt::format(" {:>8.3f} {:>8.3f} {:>9.3f} {:>8.3f} {:>8.3f}\n", b.pp_exposed_s, b.dp_exposed_s,
                             b.optimizer_s, b.bubble_s, b.other_idle_s);
  }
  if (it.collectives.empty()) return;
  // Where a user sees what NCCL would run, and so where a pinned algorithm might do better.
  const std::string picked = s.nccl_tuner ? "NCCL's tuner's pick for its size" : "the fastest simulated alone";
  std::cout << "\n# collectives, each distinct one once: "
            << (s.pinned_algorithm.empty()
                    ? picked
                    : fmt::format("{} (pinned) where it runs, the fastest of its protocols; elsewhere {}", s.pinned_algorithm, picked))
            << ", on NCCL's channels for its size\n";
  std::cout << fmt::format("# {:<12} {:<14} {:>10} {:>6} {:>6}  {:<18} {:<8} {:>8}\n", "what", "op", "MiB", "ranks", "nodes",
                           "algorithm", "protocol", "channels");
  for (const CollectiveRun& c : it.collectives)
    std::cout << fmt::format("  {:<12} {:<14} {:>10.2f} {:>6} {:>6}  {:<18} {:<8} {:>8}\n", c.what, to_string(c.op),
                             static_cast<double>(c.bytes) / (1 << 20), c.ranks, c.nodes, c.algorithm, c.protocol, c.channels);
}

nlohmann::ordered_json report_json(const ScenarioSpec& s, const RunReport& r, const RunOptions& o) {
  nlohmann::ordered_json j = json_document("run", scenario_config_json(s));
  j["config"]["fold"] = o.fold;
  j["config"]["repeat"] = o.repeat;
  j["config"]["solver"] = o.solver;
  j["config"]["tp_collectives"] = o.tp_collectives;
  j["config"]["cp_exchanges"] = o.cp_exchanges;
  j["config"]["ep_all_to_alls"] = o.ep_all_to_alls;
  j["config"]["zero_collectives"] = o.zero_collectives;
  j["config"]["allow_oom"] = o.allow_oom;
  j["config"]["kernels"] = o.kernels.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.kernels);
  j["scenario"] = s.name;
  j["gpus"] = s.gpus();
  j["iteration_s"] = r.iteration_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["replicas"] = r.iteration.replicas;
  j["simulated_replicas"] = r.iteration.simulated_replicas;
  j["fold"] = to_string(r.iteration.fold);
  if (!r.iteration.tp_collectives.empty()) j["tp_collectives"] = r.iteration.tp_collectives;
  if (!r.iteration.cp_exchanges.empty()) j["cp_exchanges"] = r.iteration.cp_exchanges;
  if (!r.iteration.ep_all_to_alls.empty()) j["ep_all_to_alls"] = r.iteration.ep_all_to_alls;
  if (!r.iteration.zero_collectives.empty()) j["zero_collectives"] = r.iteration.zero_collectives;
  j["collectives"] = nlohmann::ordered_json::array();
  for (const CollectiveRun& c : r.iteration.collectives)
    j["collectives"].push_back({{"what", c.what}, {"op", to_string(c.op)}, {"size_bytes", c.bytes}, {"ranks", c.ranks},
                                {"nodes", c.nodes}, {"algorithm", c.algorithm}, {"protocol", c.protocol},
                                {"channels", c.channels}});
  if (const std::string v = variability_text(s, r); !v.empty())
    j["variability"] = {{"seed", s.variability.seed}, {"summary", v},
                        {"slowest_gpu", r.slowest_gpu}, {"slowest_speed", r.slowest_speed}};
  j["uncalibrated"] = nlohmann::ordered_json::array();
  for (const UncalibratedParameter& u : s.gpu.uncalibrated_parameters(s.precision))
    j["uncalibrated"].push_back({{"gpu", u.gpu}, {"parameter", u.parameter}, {"reason", u.reason}, {"using", u.fallback}});
  if (s.calibration) {
    nlohmann::ordered_json c{{"file", s.calibration->file}, {"name", s.calibration->name}};
    if (auto band = prediction_band(*s.calibration, s.gpus()))
      c["band"] = {{"max_abs_error", band->max_abs_error}, {"at_gpus", band->at_gpus}, {"rows", band->rows},
                   {"kind", band->iteration_times ? "iteration" : "nccl_tests"}};
    j["calibration"] = c;
  }
  if (!r.flaps.links.empty()) {
    nlohmann::ordered_json flaps = nlohmann::ordered_json::array();
    for (const FlapState& f : r.flaps.links)
      flaps.push_back({{"link", f.link}, {"chance", f.chance}, {"down", f.down}, {"rerouted", f.rerouted}, {"stall_s", f.stall_s}});
    j["variability"]["flapping"] = {{"up_iteration_s", r.flaps.up_iteration_s}, {"stall_s", r.flaps.stall_s}, {"links", flaps}};
  }
  j["stages"] = nlohmann::ordered_json::array();
  for (const StageReport& st : r.stages) {
    j["stages"].push_back(stage_json(st));
    if (s.heterogeneous()) j["stages"].back()["gpu_model"] = st.gpu_model;
  }
  return j;
}

std::string run_report_html(const ScenarioSpec& s, const RunReport& r, std::optional<PictureLevel> level) {
  ReportPage page = report_page(s, "run");
  add_topology_picture(page, s.cluster, level, s.gpus());
  page.facts.push_back({"iteration", fmt::format("{:.3f} s", r.iteration_s)});
  page.facts.push_back({"throughput", fmt::format("{:.0f} tokens/s, {:.1f} model TFLOP/s per GPU, MFU {:.1f}%", r.tokens_per_s,
                                                  r.model_tflops_per_gpu, 100 * r.mfu)});
  page.runs.push_back(report_run(r, s.schedule_name));
  return report_html(page);
}

}  // namespace

GpuSelection parse_ranks(const std::string& text, int gpus) {
  GpuSelection out;
  const std::string option = "--trace-ranks";
  if (text.empty() || text.back() == ',')
    throw UserError("command line", 0, option, "expected GPU ranges like 0-7,64, got '" + text + "'");
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    const auto dash = part.find('-', 1);
    if (part.empty()) throw UserError("command line", 0, option, "expected GPU ranges like 0-7,64, got '" + text + "'");
    const long lo = parse_integer(part.substr(0, dash), option, 0, gpus - 1);
    const long hi = dash == std::string::npos ? lo : parse_integer(part.substr(dash + 1), option, 0, gpus - 1);
    if (hi < lo)
      throw UserError("command line", 0, option, "expected a range from low to high, got '" + part + "'");
    out.ranges.emplace_back(static_cast<int>(lo), static_cast<int>(hi));
  }
  return out;
}

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "simulate one training iteration of a scenario");
  cmd->add_option("scenario", o->scenario, "scenario YAML")->required();
  cmd->add_option("--set", o->overrides, "override a field: --set parallel.tp=4 (repeatable)");
  cmd->add_option("--json", o->json, "write the report as JSON (- or /dev/stdout: to stdout, without the text report)");
  cmd->add_option("--csv", o->csv, "write the per-stage breakdown as CSV, JSON's field names (- or /dev/stdout: to stdout, without the text report)");
  cmd->add_option("--trace", o->trace, "write a Chrome/Perfetto trace, written as it is produced (gzip when FILE ends .json.gz)");
  cmd->add_option("--report", o->report, "write a self-contained HTML report: timeline, breakdown, memory, link tiers, the cluster");
  cmd->add_option("--topology-level", o->topology_level, "draw the report's cluster picture with one box per node, unit (leaf) or pod (spine): node, leaf, spine (default: the finest with at most 40 boxes)");
  CLI::Option* trace_ranks = cmd->add_option("--trace-ranks", o->trace_ranks,
                                             "GPUs to keep in the trace, e.g. 0-7,64; a folded GPU takes its class's "
                                             "events (default: the first GPU of each simulated pipeline rank)");
  cmd->add_option("--kernels", o->kernels, "CSV of measured kernel times that override the compute model");
  cmd->add_flag("--allow-oom", o->allow_oom, "simulate even when a stage does not fit in GPU memory")
      ->disable_flag_override();
  cmd->add_option("--repeat", o->repeat,
                  "draw the scenario's variability K times (seeds variability.seed, +1, ...) and report the "
                  "iteration time's mean, p50 and p99 over the draws (default 1)");
  CLI::Option* fold_option = cmd->add_option("--fold", o->fold,
                  "data-parallel replicas simulated once for several: exact (where provably exact; the default), "
                  "none, all (an error unless every replica folds exactly), assume (replica 0 alone, unproven: "
                  "fast)");
  cmd->add_option("--tp-collectives", o->tp_collectives,
                  "with --fold exact, none or all: auto (alone where provably exact, else in place among the other "
                  "traffic; the default), alone, in-place");
  cmd->add_option("--cp-exchanges", o->cp_exchanges,
                  "with --fold exact, none or all: the same for context-parallel exchanges (ring-attention steps, "
                  "K/V all-gathers)");
  cmd->add_option("--ep-all-to-alls", o->ep_all_to_alls,
                  "with --fold exact, none or all: the same for MoE dispatch and combine over expert-parallel groups "
                  "that span replicas");
  cmd->add_option("--zero-collectives", o->zero_collectives,
                  "with --fold exact, none or all: the same for ZeRO-2/3's per-layer gradient reduce-scatters and "
                  "parameter all-gathers over the data-parallel groups");
  cmd->add_option("--catalog", o->catalog, "the GPU catalog to read the cluster's GPU from (default: gpus.yaml beside the cluster file or above it)");
  cmd->add_option("--calibration", o->calibration, "a calibration file (clustersim calibrate): as the scenario's calibration field, relative to here");
  cmd->add_option("--solver", o->solver, "max-min solver: fluid (ours, the default) or simgrid / simgrid-full (SimGrid 3.32, the reference)");
  cmd->callback([o, fold_option, trace_ranks] {
    FoldMode fold = parse_fold(o->fold);
    o->fold_given = fold_option->count() > 0;
    if (o->repeat < 1 || o->repeat > 10000)
      throw UserError("command line", 0, "--repeat", "expected 1 to 10000 draws, got " + std::to_string(o->repeat));
    const Solver solver = parse_solver(o->solver);
    // Their words now; with the fold once it is known.
    parse_placement(o->tp_collectives, FoldMode::exact, "--tp-collectives");
    parse_placement(o->cp_exchanges, FoldMode::exact, "--cp-exchanges");
    parse_placement(o->ep_all_to_alls, FoldMode::exact, "--ep-all-to-alls");
    parse_placement(o->zero_collectives, FoldMode::exact, "--zero-collectives");
    if (trace_ranks->count() > 0 && o->trace.empty())
      throw UserError("command line", 0, "--trace-ranks", "expected --trace as well: it selects the GPUs of the trace");
    check_input_path(o->scenario, "scenario");
    if (is_jobs_scenario(o->scenario)) {  // several jobs on one cluster: cmd_run_jobs.cpp
      JobsRunOptions jobs{o->scenario, o->overrides, o->json,          o->csv, o->solver, o->trace,
                          o->report,   o->topology_level, std::nullopt, o->allow_oom, {}};
      if (trace_ranks->count() > 0) jobs.trace_ranks = o->trace_ranks;
      const std::pair<bool, const char*> single[] = {
          {!o->kernels.empty(), "--kernels"},
          {o->repeat > 1, "--repeat"}, {o->fold_given, "--fold"}, {o->tp_collectives != "auto", "--tp-collectives"},
          {o->cp_exchanges != "auto", "--cp-exchanges"}, {o->ep_all_to_alls != "auto", "--ep-all-to-alls"},
          {o->zero_collectives != "auto", "--zero-collectives"},
          {!o->calibration.empty(), "--calibration"}, {!o->catalog.empty(), "--catalog"}};
      for (const auto& [given, name] : single)
        if (given) jobs.single_job_options.push_back(name);
      return run_jobs_scenario(jobs);
    }
    if (!o->kernels.empty()) check_input_path(o->kernels, "--kernels");
    std::vector<std::string> overrides = o->overrides;
    if (!o->catalog.empty()) overrides.push_back(catalog_override(o->catalog));
    if (!o->calibration.empty()) {
      check_input_path(o->calibration, "--calibration");
      named_by("--calibration", o->calibration, [&] { return load_calibration(o->calibration, "--calibration"); });
      // The scenario reads it relative to its own folder.
      const std::filesystem::path from = std::filesystem::absolute(o->scenario).parent_path();
      overrides.push_back("calibration=" + std::filesystem::absolute(o->calibration).lexically_proximate(from).string());
    }
    for (const std::string& set : overrides) spdlog::debug("--set {}", set);
    const ScenarioSpec s = named_by("scenario", o->scenario, [&] { return load_scenario(o->scenario, overrides); });
    spdlog::info("scenario {} ({}): {} GPUs as tp {} x cp {} x pp {} x dp {} (ep {}), model {}, cluster {} ({}), GPU {} from {}",
                 s.name, s.file, s.gpus(), s.layout.tp, s.layout.cp, s.layout.pp, s.layout.dp, s.ep, s.model.name,
                 s.cluster.name, s.cluster_file, s.gpu.name, s.catalog_file);
    // GPUs by cluster id: a job that stage_gpus places on chosen nodes holds ids beyond its count.
    const int highest_node = s.nodes.empty() ? -1 : *std::max_element(s.nodes.begin(), s.nodes.end());
    const int traceable = s.nodes.empty() ? s.gpus() : (highest_node + 1) * s.cluster.node.gpus;
    const GpuSelection keep = trace_ranks->count() > 0 ? parse_ranks(o->trace_ranks, traceable) : GpuSelection{};
    if (const FoldMode f = checked_fold(s, fold, o->fold_given); f != fold) {
      fold = f;
      o->fold = to_string(fold);
    }
    const Placements placement{parse_placement(o->tp_collectives, fold, "--tp-collectives"),
                               parse_placement(o->cp_exchanges, fold, "--cp-exchanges"),
                               parse_placement(o->ep_all_to_alls, fold, "--ep-all-to-alls"),
                               parse_placement(o->zero_collectives, fold, "--zero-collectives")};
    if (o->repeat > 1 && s.variability.gpu_speed.distribution == SpeedDistribution::none && s.variability.flapping.empty())
      throw UserError("command line", 0, "--repeat",
                      "expected a scenario whose variability.gpu_speed draws each GPU's speed from a distribution, "
                      "or with flapping_links (without either every draw is the same)");
    std::optional<KernelTable> kernels;
    if (!o->kernels.empty()) kernels = load_kernel_table(o->kernels, "--kernels");
    // Every input is read and checked; the outputs are checked before the (long) simulation.
    if (!o->json.empty()) check_json_path(o->json);
    check_csv_path(o->csv, o->json);
    if (!o->trace.empty()) check_output_path(o->trace, "--trace");
    if (!o->report.empty()) check_output_path(o->report, "--report");
    const std::optional<PictureLevel> topology_level = parse_topology_level(o->topology_level, "--topology-level");
    if (topology_level && o->report.empty())
      throw UserError("command line", 0, "--topology-level", "expected --report as well: it sets the level of the report's cluster picture");
    std::optional<TraceWriter> trace;
    if (!o->trace.empty()) trace.emplace(o->trace, keep, "--trace");
    const RunReport r = run_training(s, o->allow_oom, kernels ? &*kernels : nullptr, fold, solver, placement,
                                     !o->report.empty(), trace ? &*trace : nullptr);
    if (trace) trace->finish();
    std::optional<DrawSummary> draws;
    if (o->repeat > 1) {
      std::vector<std::uint64_t> seeds{s.variability.seed};
      std::vector<Seconds> times{r.iteration_s};
      ScenarioSpec drawn = s;
      for (int k = 1; k < o->repeat; ++k) {
        drawn.variability.seed = s.variability.seed + static_cast<std::uint64_t>(k);
        seeds.push_back(drawn.variability.seed);
        times.push_back(run_training(drawn, o->allow_oom, kernels ? &*kernels : nullptr, fold, solver, placement).iteration_s);
      }
      draws = summarize_draws(std::move(seeds), std::move(times));
    }
    if (!o->json.empty()) {
      nlohmann::ordered_json j = report_json(s, r, *o);
      if (draws)
        j["draws"] = {{"count", draws->iteration_s.size()}, {"seeds", draws->seeds}, {"iteration_s", draws->iteration_s},
                      {"mean_s", draws->mean_s}, {"p50_s", draws->p50_s}, {"p99_s", draws->p99_s},
                      {"min_s", draws->min_s}, {"max_s", draws->max_s}};
      write_json(o->json, j);
    }
    if (!o->csv.empty()) write_csv(o->csv, report_json(s, r, *o)["stages"]);
    if (!o->report.empty()) write_file(o->report, run_report_html(s, r, topology_level), "--report");
    if (table_to_stdout(o->json, o->csv)) {
      print_report(s, r);
      if (draws)
        std::cout << fmt::format("\n# iteration time over {} draws (seeds {} to {}; the report above is the first)\n"
                                 "mean {:.3f} s   p50 {:.3f} s   p99 {:.3f} s   min {:.3f} s   max {:.3f} s\n",
                                 draws->iteration_s.size(), draws->seeds.front(), draws->seeds.back(), draws->mean_s,
                                 draws->p50_s, draws->p99_s, draws->min_s, draws->max_s);
    }
  });
}

}  // namespace clustersim::cli
