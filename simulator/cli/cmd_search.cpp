// `clustersim search`: every valid parallel configuration of a scenario screened analytically
// (search_screen.hpp), the best K replayed on the engine, J child processes at a time (each its
// own fork, as compare's schedules: one engine per process), ranked, with the Pareto front of
// throughput against memory.
#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "simulator/cli/commands.hpp"
#include "simulator/cli/search_report.hpp"
#include "simulator/cli/search_verify.hpp"
#include "simulator/cli/slurm_verify.hpp"
#include "simulator/progress.hpp"
#include "simulator/search_screen.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

double gib(double bytes) { return bytes / (1ULL << 30); }

struct SearchOptions {
  std::string scenario;
  std::vector<std::string> overrides, vary;
  std::string gpus, global_batch, top = "10", jobs = "2";
  std::string json, csv, report, catalog;
  std::string slurm;                ///< --slurm DIR: verify as a Slurm job array over this folder
  std::vector<std::string> sbatch;  ///< --sbatch OPTION, passed to sbatch as given
  bool quiet = false;
};

/// The verified rows no other beats on both throughput and memory, by memory.
std::vector<const Verified*> pareto_front(const std::vector<Verified>& rows) {
  std::vector<const Verified*> ok;
  for (const Verified& v : rows)
    if (v.ok) ok.push_back(&v);
  std::sort(ok.begin(), ok.end(), [](const Verified* a, const Verified* b) {
    return a->memory_bytes != b->memory_bytes ? a->memory_bytes < b->memory_bytes : a->tokens_per_s > b->tokens_per_s;
  });
  std::vector<const Verified*> front;
  double best = -1;
  for (const Verified* v : ok)
    if (v->tokens_per_s > best) {
      front.push_back(v);
      best = v->tokens_per_s;
    }
  return front;
}

void print_table(const ScenarioSpec& s, const ScreenResult& screen, const std::vector<Verified>& rows) {
  std::cout << fmt::format("# clustersim search: {} ({} on {}; global batch {})\n", s.name, s.model.name,
                           s.gpus_text(), s.global_batch);
  std::cout << fmt::format("screened {} configurations: {} valid", screen.candidates, screen.valid.size());
  for (const ScreenRemoval& r : screen.removed)
    if (r.count > 0) std::cout << fmt::format(", {} removed by {}", r.count, r.rule);
  std::cout << fmt::format("\nverified the best {} on the engine\n\n", rows.size());
  std::cout << fmt::format("# {:>4} {:<54} {:>10} {:>10} {:>7} {:>12} {:>6} {:>8} {:>9} {:>8}\n", "rank", "configuration",
                           "screen (s)", "engine (s)", "error", "tokens/s", "MFU", "GiB/GPU", "exposed", "bubble");
  int rank = 0;
  for (const Verified& v : rows) {
    ++rank;
    if (!v.ok) {
      std::cout << fmt::format("  {:>4} {:<54} {:>10.3f} not run: {}\n", rank, v.screen.config.text(), v.screen.iteration_s, v.why);
      continue;
    }
    std::cout << fmt::format("  {:>4} {:<54} {:>10.3f} {:>10.3f} {:>6.1f}% {:>12.0f} {:>5.1f}% {:>8.1f} {:>8.3f}s {:>7.3f}s\n",
                             rank, v.screen.config.text(), v.screen.iteration_s, v.iteration_s,
                             100 * (v.screen.iteration_s - v.iteration_s) / v.iteration_s, v.tokens_per_s, 100 * v.mfu,
                             gib(v.memory_bytes), v.exposed_comm_s, v.bubble_s);
  }
  std::cout << "\n# Pareto front of throughput against memory (engine): no other row is faster in less memory\n";
  for (const Verified* v : pareto_front(rows))
    std::cout << fmt::format("  {:<54} {:>12.0f} tokens/s {:>8.1f} GiB/GPU\n", v->screen.config.text(), v->tokens_per_s,
                             gib(v->memory_bytes));
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto o = std::make_shared<SearchOptions>();
  CLI::App* cmd = app.add_subcommand("search", "screen every parallel configuration of a scenario, verify the best on the engine");
  cmd->add_option("scenario", o->scenario, "scenario YAML")->required();
  cmd->add_option("--gpus", o->gpus, "GPUs to search over (default: the scenario's)");
  cmd->add_option("--global-batch", o->global_batch, "sequences per iteration (default: the scenario's)");
  cmd->add_option("--vary", o->vary, "dimensions to vary: tp,pp,dp,cp,ep,vpp,microbatch,recompute,zero,schedule (default: all)")
      ->delimiter(',');
  cmd->add_option("--set", o->overrides, "override a field of the scenario first: --set parallel.sequence_parallel=true");
  cmd->add_option("--catalog", o->catalog, "the GPU catalog to read the cluster's GPU from (default: gpus.yaml beside the cluster file or above it)");
  cmd->add_option("--top", o->top, "configurations verified on the engine, best screened first (default 10)");
  cmd->add_option("-j", o->jobs, "engine runs at a time, each in its own process (default 2)");
  cmd->add_option("--json", o->json, "write the verified rows as JSON (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--csv", o->csv, "write the verified rows as CSV");
  cmd->add_option("--report", o->report, "write a self-contained HTML report: the verified rows, their Pareto front, the fastest's timeline");
  cmd->add_option("--slurm", o->slurm,
                  "verify as a Slurm job array over this folder (shared by the nodes); rerun to resume");
  cmd->add_option("--sbatch", o->sbatch, "an option for sbatch with --slurm, e.g. --sbatch=--partition=gpu (repeatable)");
  cmd->add_flag("-q,--quiet", o->quiet, "no progress on stderr and, as for every command, no text report on stdout (--json, --csv and files are still written)")->disable_flag_override();
  add_search_task_command(app);
  cmd->callback([o] {
    const std::vector<std::string>& dims = search_dimensions();
    std::string all;
    for (const std::string& d : dims) all += (all.empty() ? "" : ",") + d;
    for (const std::string& d : o->vary)
      if (std::find(dims.begin(), dims.end(), d) == dims.end())
        throw UserError("command line", 0, "--vary", "expected dimensions from " + all + "; got '" + d + "'");
    std::vector<std::string> vary = o->vary.empty() ? dims : o->vary;
    const int top = static_cast<int>(parse_integer(o->top, "--top", 0, 10000));
    const int jobs = static_cast<int>(parse_integer(o->jobs, "-j", 1, 256));
    check_input_path(o->scenario, "scenario");
    if (!o->catalog.empty()) o->overrides.push_back(catalog_override(o->catalog));
    // The scenario as given; then its GPU count and batch, which need not suit its own layout (the
    // search changes that): dp follows the GPUs, and each verified configuration is loaded anew.
    ScenarioSpec base = named_by("scenario", o->scenario, [&] { return load_scenario(o->scenario, o->overrides); });
    if (o->vary.empty()) vary = default_search_dimensions(base);
    if (!o->gpus.empty()) {
      const long per_replica = static_cast<long>(base.layout.tp) * base.layout.cp * base.layout.pp;
      const long gpus = parse_integer(o->gpus, "--gpus", per_replica, base.cluster.gpu_count());
      if (gpus % per_replica != 0)
        throw UserError("command line", 0, "--gpus",
                        fmt::format("expected a multiple of the scenario's tp x cp x pp ({}), got {}", per_replica, gpus));
      base.layout.dp = static_cast<int>(gpus / per_replica);
      o->overrides.push_back("gpus=" + std::to_string(gpus));
    }
    if (!o->global_batch.empty()) {
      base.global_batch = static_cast<int>(parse_integer(o->global_batch, "--global-batch", 1, 1L << 20));
      o->overrides.push_back("global_batch=" + std::to_string(base.global_batch));
    }
    if (!o->json.empty()) check_json_path(o->json);
    if (!o->csv.empty()) check_csv_path(o->csv, o->json);
    if (!o->report.empty()) check_output_path(o->report, "--report");
    check_slurm_options(o->slurm, o->sbatch);

    Progress bar("screening", !o->quiet && progress_wanted());
    const auto t0 = std::chrono::steady_clock::now();
    Screen screen(base);
    const ScreenResult result = screen.run(search_space(base, vary), [&](long done, long total) { bar.update(done, total); });
    const double screen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bar.finish();
    // Timing goes to stderr: stdout stays the same for the same inputs.
    if (!o->quiet && isatty(STDERR_FILENO))
      std::cerr << fmt::format("screened {} configurations in {:.3f} s\n", result.candidates, screen_s);
    if (result.valid.empty()) throw UserError(o->scenario, 0, "search", no_configuration(result));

    std::vector<ScreenPrediction> best(result.valid.begin(),
                                       result.valid.begin() + std::min<long>(top, static_cast<long>(result.valid.size())));
    Progress verifying("verifying", !o->quiet && progress_wanted());
    std::vector<Verified> rows;
    if (o->slurm.empty()) {
      rows = verify(o->scenario, o->overrides, best, jobs, verifying);
    } else {
      std::vector<std::vector<std::string>> tasks;
      for (const ScreenPrediction& p : best) tasks.push_back(configuration_overrides(o->overrides, p.config));
      rows = verify_on_slurm({o->slurm, o->scenario, "search", o->sbatch, o->quiet}, tasks, best, verifying);
    }
    verifying.finish();
    std::stable_sort(rows.begin(), rows.end(), [](const Verified& a, const Verified& b) {
      if (a.ok != b.ok) return a.ok;
      return a.ok ? a.tokens_per_s > b.tokens_per_s : false;
    });
    nlohmann::ordered_json rows_json = nlohmann::ordered_json::array();
    for (const Verified& v : rows) rows_json.push_back(row_json(v));
    write_csv(o->csv, rows_json);  // one column per field, as the JSON rows name them
    if (!o->json.empty()) {
      nlohmann::ordered_json j = json_header("search");
      j["config"] = scenario_config_json(base);
      j["config"]["vary"] = vary;
      j["config"]["top"] = top;
      j["config"]["jobs"] = jobs;
      j["scenario"] = base.name;
      j["candidates"] = result.candidates;
      j["valid"] = result.valid.size();
      j["removed"] = nlohmann::ordered_json::object();
      for (const ScreenRemoval& r : result.removed) j["removed"][r.rule] = r.count;
      j["rows"] = rows_json;
      j["pareto"] = nlohmann::ordered_json::array();
      for (const Verified* v : pareto_front(rows)) j["pareto"].push_back(v->screen.config.text());
      write_json(o->json, j);
    }
    if (!o->report.empty()) {
      std::vector<std::string> front;
      for (const Verified* v : pareto_front(rows)) front.push_back(v->screen.config.text());
      write_file(o->report, search_report_page(o->scenario, o->overrides, base, result, rows, front), "--report");
    }
    if (table_to_stdout(o->json, o->csv)) print_table(base, result, rows);
  });
}

}  // namespace clustersim::cli
