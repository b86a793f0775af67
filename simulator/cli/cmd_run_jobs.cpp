// `clustersim run` on a jobs scenario: several jobs on one cluster, alone and together.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>

#include "simulator/cli/commands.hpp"
#include "simulator/cli/run_jobs.hpp"
#include "simulator/job_trace.hpp"
#include "simulator/multi_job.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

/// "0-63" or "0,2,4,...": runs of consecutive nodes, the first few of them.
std::string nodes_text(const std::vector<int>& nodes) {
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < nodes.size();) {
    std::size_t k = i;
    while (k + 1 < nodes.size() && nodes[k + 1] == nodes[k] + 1) ++k;
    runs.push_back(k == i ? std::to_string(nodes[i]) : fmt::format("{}-{}", nodes[i], nodes[k]));
    i = k + 1;
  }
  std::string out;
  for (std::size_t r = 0; r < runs.size() && r < 3; ++r) out += (r ? "," : "") + runs[r];
  return runs.size() > 3 ? out + ",..." : out;
}

/// The largest of a breakdown's field over pipeline ranks: what the slowest stage waited.
Seconds largest(const IterationResult& it, Seconds RankBreakdown::*field) {
  Seconds out = 0;
  for (const RankBreakdown& b : it.ranks) out = std::max(out, b.*field);
  return out;
}

/// A breakdown's parts, as run's single-job stage table names them.
nlohmann::ordered_json breakdown_json(const RankBreakdown& b) {
  return {{"compute", b.compute_s},       {"recompute", b.recompute_s}, {"tp", b.tp_s},
          {"ep", b.ep_s},                 {"imbalance", b.imbalance_s}, {"cp", b.cp_s},
          {"pp_exposed", b.pp_exposed_s}, {"dp_exposed", b.dp_exposed_s}, {"optimizer", b.optimizer_s},
          {"bubble", b.bubble_s},         {"other_idle", b.other_idle_s}};
}

/// Each pipeline stage of a job, alone and together: where the slowdown went.
nlohmann::ordered_json stages_json(const JobOutcome& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < r.together.iteration.ranks.size(); ++k)
    out.push_back({{"stage", k}, {"alone_s", breakdown_json(r.alone.iteration.ranks[k])}, {"together_s", breakdown_json(r.together.iteration.ranks[k])}});
  return out;
}

nlohmann::ordered_json jobs_json(const JobsScenario& js, const std::vector<JobOutcome>& out, const JobsRunOptions& o) {
  nlohmann::ordered_json config;
  config["scenario"] = js.name;
  config["file"] = js.file;
  config["cluster"] = js.jobs.front().scenario.cluster.name;
  config["cluster_file"] = js.cluster_file;
  config["solver"] = o.solver;
  config["allow_oom"] = o.allow_oom;
  config["fold"] = "none";
  config["jobs"] = nlohmann::ordered_json::array();
  for (const JobSpec& j : js.jobs) {
    nlohmann::ordered_json c = scenario_config_json(j.scenario);
    c["job"] = j.name;
    c["placement"] = to_string(j.placement.policy);
    c["nodes"] = j.nodes;
    config["jobs"].push_back(c);
  }
  config["background"] = nlohmann::ordered_json::array();
  for (const BackgroundTraffic& b : js.background)
    config["background"].push_back({{"link", b.link.name}, {"rate_GBps", b.rate_Bps / 1e9}});
  nlohmann::ordered_json j = json_document("run", config);
  j["scenario"] = js.name;
  int gpus = 0;
  for (const JobOutcome& r : out) gpus += r.gpus;
  j["gpus"] = gpus;
  j["fold"] = "none";
  j["jobs"] = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < out.size(); ++k) {
    const JobOutcome& r = out[k];
    const ScenarioSpec& s = js.jobs[k].scenario;
    const double tokens = static_cast<double>(s.global_batch) * s.model.seq_len;
    j["jobs"].push_back({{"job", r.name},
                         {"gpus", r.gpus},
                         {"placement", to_string(js.jobs[k].placement.policy)},
                         {"nodes", r.nodes},
                         {"alone_s", r.alone.iteration_s},
                         {"together_s", r.together.iteration_s},
                         {"together_iterations_s", r.together_iterations_s},
                         {"slowdown", r.slowdown()},
                         {"tokens_per_s_alone", tokens / r.alone.iteration_s},
                         {"tokens_per_s_together", r.together.tokens_per_s},
                         {"replicas", r.together.iteration.replicas},
                         {"simulated_replicas", r.together.iteration.simulated_replicas},
                         {"tp_collectives", r.together.iteration.tp_collectives},
                         {"cp_exchanges", r.together.iteration.cp_exchanges},
                         {"ep_all_to_alls", r.together.iteration.ep_all_to_alls},
                         {"zero_collectives", r.together.iteration.zero_collectives},
                         {"exposed_dp_s", {{"alone", largest(r.alone.iteration, &RankBreakdown::dp_exposed_s)},
                                           {"together", largest(r.together.iteration, &RankBreakdown::dp_exposed_s)}}},
                         {"exposed_pp_s", {{"alone", largest(r.alone.iteration, &RankBreakdown::pp_exposed_s)},
                                           {"together", largest(r.together.iteration, &RankBreakdown::pp_exposed_s)}}},
                         {"stages", stages_json(r)}});
  }
  return j;
}

void print_jobs(const JobsScenario& js, const std::vector<JobOutcome>& out) {
  const ScenarioSpec& first = js.jobs.front().scenario;
  std::cout << fmt::format("# clustersim run: {} ({} jobs on {}: {} nodes of {} {}; every replica of every job simulated)\n",
                           js.name, js.jobs.size(), first.cluster.name, first.cluster.fabric.nodes, first.cluster.node.gpus,
                           first.gpu.name);
  for (const BackgroundTraffic& b : js.background)
    std::cout << fmt::format("background              {:.3f} GB/s on {}, each direction (taken off its capacity)\n",
                             b.rate_Bps / 1e9, b.link.name);
  std::cout << "# alone: the job by itself on the cluster, on the same nodes; together: every job at once"
            << (js.iterations > 1 ? fmt::format(", {} iterations back to back, the mean of iterations 2-{}", js.iterations, js.iterations) : "")
            << "\n";
  std::cout << fmt::format("# {:<10} {:>6} {:<16} {:<13} {:>10} {:>12} {:>9} {:>19} {:>19}\n", "job", "GPUs", "nodes",
                           "placement", "alone (s)", "together (s)", "slowdown", "exposed DP (s)", "exposed PP (s)");
  for (std::size_t k = 0; k < out.size(); ++k) {
    const JobOutcome& r = out[k];
    // Rounding can leave a job that shares nothing a hair below zero: print it as the 0 it is.
    const double percent = std::abs(r.slowdown()) < 5e-7 ? 0.0 : 100 * r.slowdown();
    std::cout << fmt::format("  {:<10} {:>6} {:<16} {:<13} {:>10.3f} {:>12.3f} {:>+8.2f}% {:>19} {:>19}\n", r.name, r.gpus,
                             nodes_text(r.nodes), to_string(js.jobs[k].placement.policy), r.alone.iteration_s,
                             r.together.iteration_s, percent,
                             fmt::format("{:.3f} -> {:.3f}", largest(r.alone.iteration, &RankBreakdown::dp_exposed_s),
                                         largest(r.together.iteration, &RankBreakdown::dp_exposed_s)),
                             fmt::format("{:.3f} -> {:.3f}", largest(r.alone.iteration, &RankBreakdown::pp_exposed_s),
                                         largest(r.together.iteration, &RankBreakdown::pp_exposed_s)));
  }
  if (js.iterations > 1)
    for (const JobOutcome& r : out) {
      std::string times;
      for (Seconds s : r.together_iterations_s) times += fmt::format("{}{:.3f}", times.empty() ? "" : " ", s);
      std::cout << fmt::format("iterations of {:<10} {} s together (the first starts every job at once)\n", r.name, times);
    }
  for (const JobOutcome& r : out)
    if (!r.together.iteration.tp_collectives.empty()) std::cout << fmt::format("TP collectives of {:<6} {}\n", r.name, r.together.iteration.tp_collectives);
  for (const JobOutcome& r : out)
    if (!r.together.iteration.cp_exchanges.empty()) std::cout << fmt::format("CP exchanges of {:<8} {}\n", r.name, r.together.iteration.cp_exchanges);
  for (const JobOutcome& r : out)
    if (!r.together.iteration.ep_all_to_alls.empty()) std::cout << fmt::format("EP all-to-alls of {:<6} {}\n", r.name, r.together.iteration.ep_all_to_alls);
  for (const JobOutcome& r : out)
    if (!r.together.iteration.zero_collectives.empty())
      std::cout << fmt::format("ZeRO collectives of {:<4} {}\n", r.name, r.together.iteration.zero_collectives);
  // Per job and stage, alone -> together: which waits the other jobs lengthened.
  for (const JobOutcome& r : out) {
    std::cout << fmt::format("# stages of job {} (s, alone -> together; the breakdown of its slowest replica)\n", r.name);
    std::cout << fmt::format("# {:>5} {:>9} {:>19} {:>19} {:>19} {:>19}\n", "stage", "compute", "bubble", "exposed PP",
                             "exposed DP", "idle");
    auto moved = [](Seconds a, Seconds b) { return fmt::format("{:.3f} -> {:.3f}", a, b); };
    for (std::size_t k = 0; k < r.together.iteration.ranks.size(); ++k) {
      const RankBreakdown &a = r.alone.iteration.ranks[k], &t = r.together.iteration.ranks[k];
      std::cout << fmt::format("  {:>5} {:>9.3f} {:>19} {:>19} {:>19} {:>19}\n", k, t.compute_s + t.recompute_s,
                               moved(a.bubble_s, t.bubble_s), moved(a.pp_exposed_s, t.pp_exposed_s),
                               moved(a.dp_exposed_s, t.dp_exposed_s), moved(a.other_idle_s, t.other_idle_s));
    }
  }
}

/// One page: each job's iteration alone and together on one time scale (its timeline, where each
/// stage's time went, its memory, its link tiers: its own traffic alone, every job's together), then
/// the cluster.
std::string jobs_report_html(const JobsScenario& js, const std::vector<JobOutcome>& out, std::optional<PictureLevel> level) {
  const ScenarioSpec& first = js.jobs.front().scenario;
  ReportPage page;
  page.title = "clustersim run: " + js.name;
  page.facts = {{"scenario", js.name + " (" + js.file + ")"},
                {"cluster", fmt::format("{} nodes of {} {} ({})", first.cluster.fabric.nodes, first.cluster.node.gpus,
                                        first.gpu.name, first.cluster.name)}};
  for (std::size_t k = 0; k < out.size(); ++k) {
    const JobOutcome& r = out[k];
    page.facts.push_back({"job " + r.name, fmt::format("{} GPUs on nodes {} ({}): {:.3f} s alone, {:.3f} s together ({:+.2f}%)",
                                                       r.gpus, nodes_text(r.nodes), to_string(js.jobs[k].placement.policy),
                                                       r.alone.iteration_s, r.together.iteration_s, 100 * r.slowdown())});
    page.runs.push_back(report_run(r.alone, r.name + " alone"));
    page.runs.push_back(report_run(r.together, r.name + " together"));
    page.runs.back().link_note = "Every job's traffic: " + page.runs.back().link_note;
  }
  page.gpu = first.gpu.name;
  page.hbm_bytes = first.gpu.hbm_bytes;
  add_topology_picture(page, first.cluster, level, 0, "the jobs hold the nodes listed above");
  return report_html(page);
}

}  // namespace

void run_jobs_scenario(const JobsRunOptions& o) {
  if (!o.single_job_options.empty())
    throw UserError("command line", 0, o.single_job_options.front(),
                    "expected a single-job scenario for this option; a jobs scenario (jobs:) takes --set, --json, --csv, "
                    "--trace, --trace-ranks, --report, --topology-level, --solver and --allow-oom");
  const Solver solver = parse_solver(o.solver);
  const JobsScenario js = named_by("scenario", o.scenario, [&] { return load_jobs_scenario(o.scenario, o.overrides); });
  if (o.trace_ranks && o.trace.empty())
    throw UserError("command line", 0, "--trace-ranks", "expected --trace as well: it selects the GPUs of the trace");
  const GpuSelection keep = o.trace_ranks ? parse_ranks(*o.trace_ranks, js.jobs.front().scenario.cluster.gpu_count()) : GpuSelection{};
  if (!o.json.empty()) check_json_path(o.json);
  check_csv_path(o.csv, o.json);
  if (!o.trace.empty()) check_output_path(o.trace, "--trace");
  if (!o.report.empty()) check_output_path(o.report, "--report");
  const std::optional<PictureLevel> topology_level = parse_topology_level(o.topology_level, "--topology-level");
  if (topology_level && o.report.empty())
    throw UserError("command line", 0, "--topology-level", "expected --report as well: it sets the level of the report's cluster picture");
  // One trace of the run together, each job's GPUs named after it (job_trace.hpp).
  std::optional<TraceWriter> trace;
  std::vector<JobTrace> views;
  std::vector<TraceSink*> sinks;
  if (!o.trace.empty()) {
    trace.emplace(o.trace, keep, "--trace");
    views.reserve(js.jobs.size());
    for (std::size_t k = 0; k < js.jobs.size(); ++k)
      sinks.push_back(&views.emplace_back(*trace, js.jobs[k].name, static_cast<int>(k), static_cast<int>(js.jobs.size())));
  }
  const std::vector<JobOutcome> out = run_jobs(js, solver, o.allow_oom, sinks, !o.report.empty());
  if (trace) trace->finish();
  if (!o.json.empty()) write_json(o.json, jobs_json(js, out, o));
  if (!o.csv.empty()) write_csv(o.csv, jobs_json(js, out, o)["jobs"]);
  if (!o.report.empty()) write_file(o.report, jobs_report_html(js, out, topology_level), "--report");
  if (table_to_stdout(o.json, o.csv)) print_jobs(js, out);
}

}  // namespace clustersim::cli
