// `clustersim goodput`: what failures, checkpoints and restarts leave of a scenario's training
// over D days, in closed form and, with --trials, by a seeded Monte-Carlo over the step time(s)
// simulated once (workloads/goodput.hpp has the model).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/draw_summary.hpp"
#include "simulator/progress.hpp"
#include "simulator/training_run.hpp"
#include "workloads/checkpoint_cost.hpp"
#include "workloads/failure_model.hpp"
#include "workloads/goodput.hpp"

namespace clustersim::cli {

namespace {

constexpr double kMaxDays = 3650;          // ten years: longer than any training run
constexpr long kMaxTrials = 10'000'000;
constexpr double kMaxMonteCarloEvents = 2e9;  // about ten seconds of the Monte-Carlo

struct GoodputOptions {
  std::string scenario;
  std::vector<std::string> overrides;
  std::string days, trials, seed = "0", repeat = "1", iteration_s, json, csv, catalog, fold;
};

/// Everything the figures are computed from, read and simulated once.
struct GoodputSetup {
  ScenarioSpec s;
  ComponentCounts counts;
  double failure_rate_per_s = 0;
  CheckpointCost checkpoint;
  std::vector<Seconds> step_times_s;  // one simulated step, the --repeat draws, or --iteration-s
  std::string step_origin;
  Seconds step_mean_s = 0;
  long steps_per_checkpoint = 1;
  GoodputInputs inputs;
};

double parse_days(const std::string& text) {
  char* end = nullptr;
  const double d = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(d) || d <= 0 || d > kMaxDays)
    throw UserError("command line", 0, "--days",
                    fmt::format("expected a number of days above 0 and at most {:g}, got '{}'", kMaxDays, text));
  return d;
}

/// The scenario's reliability section, as goodput needs it: a user error where it falls short.
void check_reliability(const ScenarioSpec& s) {
  const ReliabilitySpec& r = s.reliability;
  if (!r.declared)
    throw UserError(s.file, 0, "reliability",
                    "expected a reliability: section (components' mtbf_hours, detection_s, relaunch_s, checkpoint) for goodput");
  if (!r.checkpoints)
    throw UserError(s.file, r.line, "reliability.checkpoint",
                    "expected a checkpoint policy ({interval_s: S}) for goodput: without one every interruption loses all the work done");
}

/// One simulated iteration, or one per variability draw (seeds variability.seed, +1, ... as `run --repeat`),
/// each under `fold` as `run --fold` would simulate it.
std::vector<Seconds> simulate_steps(const ScenarioSpec& s, long repeat, FoldMode fold) {
  std::vector<Seconds> out;
  ScenarioSpec drawn = s;
  for (long k = 0; k < repeat; ++k) {
    drawn.variability.seed = s.variability.seed + static_cast<std::uint64_t>(k);
    out.push_back(run_training(drawn, false, nullptr, fold).iteration_s);
  }
  return out;
}

GoodputSetup prepare(ScenarioSpec s, double days, std::vector<Seconds> steps, std::string origin) {
  GoodputSetup g;
  g.counts = job_components(s.cluster, s.gpus());
  g.failure_rate_per_s = failure_rate_per_s(s.reliability, g.counts);
  g.checkpoint = checkpoint_cost(s);
  g.step_times_s = std::move(steps);
  g.step_origin = std::move(origin);
  for (Seconds t : g.step_times_s) g.step_mean_s += t / static_cast<double>(g.step_times_s.size());
  // Checkpoints are taken between steps: the interval in whole steps, at least one.
  g.steps_per_checkpoint = std::max(1L, std::lround(s.reliability.checkpoint_interval_s / g.step_mean_s));
  const ReliabilitySpec& r = s.reliability;
  g.inputs = {g.failure_rate_per_s, static_cast<double>(g.steps_per_checkpoint) * g.step_mean_s,
              g.checkpoint.write_s, r.detection_s + r.relaunch_s + g.checkpoint.load_s, days * 86400};
  g.s = std::move(s);
  return g;
}

MonteCarloInputs monte_carlo_inputs(const GoodputSetup& g, long trials, std::uint64_t seed) {
  return {g.failure_rate_per_s, g.steps_per_checkpoint, g.step_times_s, g.inputs.checkpoint_write_s,
          g.inputs.restart_s, g.inputs.horizon_s, trials, seed};
}

double hours(Seconds s) { return s / 3600; }

std::string duration(Seconds s) {
  if (s >= 3600) return fmt::format("{:.2f} h", s / 3600);
  if (s >= 60) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.2f} s", s);
}

void print_breakdown(const GoodputBreakdown& b, const GoodputBreakdown* expected, Seconds horizon_s) {
  auto row = [&](const char* name, double value_s, double expected_s) {
    std::cout << fmt::format("{:<22}{:>12.1f} h   {:>5.1f}%", name, hours(value_s), 100 * value_s / horizon_s);
    if (expected) std::cout << fmt::format("   (closed form {:.1f} h, {:+.2f}%)", hours(expected_s), 100 * (value_s / expected_s - 1));
    std::cout << "\n";
  };
  std::cout << fmt::format("{:<22}{:>12.1f}", "interruptions", b.interruptions);
  if (expected) std::cout << fmt::format("            (closed form {:.1f}, {:+.2f}%)", expected->interruptions,
                                         100 * (b.interruptions / expected->interruptions - 1));
  std::cout << "\n";
  row("training kept", b.training_s, expected ? expected->training_s : 0);
  row("checkpointing", b.checkpointing_s, expected ? expected->checkpointing_s : 0);
  row("lost work", b.lost_s, expected ? expected->lost_s : 0);
  row("restarting", b.restarting_s, expected ? expected->restarting_s : 0);
}

nlohmann::ordered_json breakdown_json(const GoodputBreakdown& b) {
  return {{"interruptions", b.interruptions}, {"training_s", b.training_s}, {"checkpointing_s", b.checkpointing_s},
          {"lost_s", b.lost_s}, {"restarting_s", b.restarting_s}, {"goodput_fraction", b.goodput_fraction()}};
}

}  // namespace

void add_goodput_command(CLI::App& app) {
  auto o = std::make_shared<GoodputOptions>();
  CLI::App* cmd = app.add_subcommand("goodput", "expected interruptions, lost work, checkpoint and restart time, and "
                                                "goodput of a scenario over D days (its reliability: section)");
  cmd->add_option("scenario", o->scenario, "scenario YAML with a reliability: section")->required();
  cmd->add_option("--days", o->days, "wall-clock days of training considered")->required();
  cmd->add_option("--trials", o->trials, "also draw the failures this many times (Monte-Carlo) and compare with the closed form");
  cmd->add_option("--seed", o->seed, "with --trials: the Monte-Carlo's seed (0)");
  cmd->add_option("--repeat", o->repeat,
                  "simulate K draws of the scenario's variability and use their step times (as run --repeat) (1)");
  cmd->add_option("--iteration-s", o->iteration_s, "take this step time instead of simulating one (a measured one)");
  cmd->add_option("--fold", o->fold,
                  "how the step's data-parallel replicas are simulated, as in run: exact (where provably exact; "
                  "the default), none, all, assume (replica 0 alone, unproven: fast)");
  cmd->add_option("--set", o->overrides, "override a field: --set parallel.tp=4 (repeatable)");
  cmd->add_option("--catalog", o->catalog, "the GPU catalog to read the cluster's GPU from (default: gpus.yaml beside the cluster file or above it)");
  cmd->add_option("--json", o->json, "write the figures as JSON (- or /dev/stdout: to stdout, without the text report)");
  cmd->add_option("--csv", o->csv, "write the breakdown (closed form, and Monte-Carlo with --trials) as CSV, JSON's field names");
  cmd->callback([o] {
    const double days = parse_days(o->days);
    const long trials = o->trials.empty() ? 0 : parse_integer(o->trials, "--trials", 1, kMaxTrials);
    const auto seed = static_cast<std::uint64_t>(parse_integer(o->seed, "--seed", 0, 1L << 62));
    const long repeat = parse_integer(o->repeat, "--repeat", 1, 10000);
    if (o->trials.empty() && o->seed != "0")
      throw UserError("command line", 0, "--seed", "expected --trials as well: the seed is the Monte-Carlo's");
    if (!o->iteration_s.empty() && repeat > 1)
      throw UserError("command line", 0, "--iteration-s", "expected either --iteration-s or --repeat: both give the step time");
    const double given_step_s = o->iteration_s.empty() ? 0 : parse_number(o->iteration_s, "--iteration-s", 1e-6, 1e6);
    if (!o->iteration_s.empty() && !o->fold.empty())
      throw UserError("command line", 0, "--fold", "expected either --iteration-s or --fold: --fold says how the step is simulated");
    FoldMode fold = o->fold.empty() ? FoldMode::exact : parse_fold(o->fold);
    check_input_path(o->scenario, "scenario");
    if (!o->catalog.empty()) o->overrides.push_back(catalog_override(o->catalog));
    const ScenarioSpec s = named_by("scenario", o->scenario, [&] { return load_scenario(o->scenario, o->overrides); });
    check_reliability(s);
    if (repeat > 1 && s.variability.gpu_speed.distribution == SpeedDistribution::none && s.variability.flapping.empty())
      throw UserError("command line", 0, "--repeat",
                      "expected a scenario whose variability.gpu_speed draws each GPU's speed from a distribution "
                      "(without one every draw is the same)");
    if (!o->json.empty()) check_json_path(o->json);
    check_csv_path(o->csv, o->json);
    fold = checked_fold(s, fold, !o->fold.empty());
    std::vector<Seconds> steps = given_step_s > 0 ? std::vector<Seconds>{given_step_s} : simulate_steps(s, repeat, fold);
    const std::string origin = given_step_s > 0 ? "given (--iteration-s)"
                               : repeat > 1     ? fmt::format("mean of {} simulated draws, --fold {}", repeat, to_string(fold))
                                                : fmt::format("simulated once, --fold {}", to_string(fold));
    const GoodputSetup g = prepare(s, days, std::move(steps), origin);
    const GoodputBreakdown expected = expected_goodput(g.inputs);
    const double lambda = g.failure_rate_per_s;
    const Seconds young = young_interval_s(lambda, g.checkpoint.write_s), daly = daly_interval_s(lambda, g.checkpoint.write_s);
    GoodputInputs at_daly = g.inputs;
    at_daly.interval_s = daly;
    const double daly_goodput = expected_goodput(at_daly).goodput_fraction();
    // Each trial steps through every checkpoint and interruption of the horizon: bounded, so a
    // tiny step or interval cannot make the command run for days.
    const double events = g.inputs.horizon_s / (g.inputs.interval_s + g.inputs.checkpoint_write_s) + expected.interruptions;
    if (trials > 0 && trials * events > kMaxMonteCarloEvents)
      throw UserError("command line", 0, "--trials",
                      fmt::format("expected trials x {:.3g} checkpoints and interruptions a trial (over {:g} days) "
                                  "within {:.0e}: at most {:.0f} trials", events, days, kMaxMonteCarloEvents,
                                  std::floor(kMaxMonteCarloEvents / events)));
    std::optional<GoodputBreakdown> drawn;
    if (trials > 0) {
      Progress bar("goodput", progress_wanted());
      drawn = monte_carlo_goodput(monte_carlo_inputs(g, trials, seed), [&](long done, long total) { bar.update(done, total, "Monte-Carlo trials"); });
      bar.finish();
    }
    const double tokens_per_step = double(s.global_batch) * s.model.seq_len;
    const double ideal_tokens_per_s = tokens_per_step / g.step_mean_s;

    if (!o->json.empty()) {
      nlohmann::ordered_json j = json_header("goodput");
      j["config"] = scenario_config_json(s);
      j["config"]["days"] = days;
      j["config"]["trials"] = trials;
      j["config"]["seed"] = seed;
      j["config"]["repeat"] = repeat;
      if (given_step_s <= 0) j["fold"] = to_string(fold);
      j["step_times_s"] = g.step_times_s;
      j["step_mean_s"] = g.step_mean_s;
      nlohmann::ordered_json comps = nlohmann::ordered_json::array();
      for (int k = 0; k < kComponentKinds; ++k) {
        const ComponentReliability& c = s.reliability.components[static_cast<std::size_t>(k)];
        if (c.declared)
          comps.push_back({{"component", component_name(static_cast<Component>(k))}, {"count", g.counts.count[static_cast<std::size_t>(k)]},
                           {"mtbf_hours", c.mtbf_hours}, {"source", c.source}});
      }
      j["components"] = comps;
      j["failure_rate_per_hour"] = lambda * 3600;
      j["job_mtbf_s"] = 1 / lambda;
      j["checkpoint"] = {{"bytes", g.checkpoint.bytes}, {"write_s", g.checkpoint.write_s}, {"load_s", g.checkpoint.load_s},
                         {"write_Bps", g.checkpoint.write_Bps}, {"read_Bps", g.checkpoint.read_Bps},
                         {"configured_interval_s", s.reliability.checkpoint_interval_s},
                         {"steps_per_checkpoint", g.steps_per_checkpoint}, {"interval_s", g.inputs.interval_s},
                         {"young_interval_s", young}, {"daly_interval_s", daly}, {"goodput_at_daly", daly_goodput}};
      j["restart_s"] = g.inputs.restart_s;
      j["horizon_s"] = g.inputs.horizon_s;
      j["expected"] = breakdown_json(expected);
      j["ideal_tokens_per_s"] = ideal_tokens_per_s;
      j["effective_tokens_per_s"] = ideal_tokens_per_s * expected.goodput_fraction();
      if (drawn) j["monte_carlo"] = breakdown_json(*drawn);
      write_json(o->json, j);
    }
    if (!o->csv.empty()) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      rows.push_back(nlohmann::ordered_json{{"estimate", "closed_form"}});
      rows.back().update(breakdown_json(expected));
      if (drawn) {
        rows.push_back(nlohmann::ordered_json{{"estimate", "monte_carlo"}});
        rows.back().update(breakdown_json(*drawn));
      }
      write_csv(o->csv, rows);
    }
    if (!table_to_stdout(o->json, o->csv)) return;
    std::cout << fmt::format("# clustersim goodput: {} ({} GPUs, {:g} days)\n", s.name, s.gpus_text(), days);
    std::cout << fmt::format("{:<22}{:>12.3f} s   ({})\n", "step time", g.step_mean_s, g.step_origin);
    for (int k = 0; k < kComponentKinds; ++k) {
      const ComponentReliability& c = s.reliability.components[static_cast<std::size_t>(k)];
      if (!c.declared) continue;
      const double n = g.counts.count[static_cast<std::size_t>(k)];
      std::cout << fmt::format("{:<22}{:>12.6g}   x MTBF {:.6g} h = {:.1f} per {:g} days   ({})\n",
                               component_name(static_cast<Component>(k)), n, c.mtbf_hours, n / c.mtbf_hours * 24 * days,
                               days, c.source);
    }
    std::cout << fmt::format("{:<22}{:>12}   (one interruption every {})\n", "job MTBF", duration(1 / lambda), duration(1 / lambda));
    std::cout << fmt::format("{:<22}{:>12}   ({:.4g} GB of weights and optimizer state at {:.0f} GB/s; load {} at {:.0f} GB/s)\n",
                             "checkpoint write", duration(g.checkpoint.write_s), g.checkpoint.bytes / 1e9,
                             g.checkpoint.write_Bps / 1e9, duration(g.checkpoint.load_s), g.checkpoint.read_Bps / 1e9);
    std::cout << fmt::format("{:<22}{:>12}   (detection {} + relaunch {} + checkpoint load {})\n", "restart",
                             duration(g.inputs.restart_s), duration(s.reliability.detection_s),
                             duration(s.reliability.relaunch_s), duration(g.checkpoint.load_s));
    std::cout << fmt::format("{:<22}{:>12}   (configured {}: every {} steps); Young {}, Daly {} (goodput there {:.2f}%)\n",
                             "checkpoint interval", duration(g.inputs.interval_s), duration(s.reliability.checkpoint_interval_s),
                             g.steps_per_checkpoint, duration(young), duration(daly), 100 * daly_goodput);
    std::cout << fmt::format("\n# expected over {:g} days (closed form)\n", days);
    print_breakdown(expected, nullptr, g.inputs.horizon_s);
    std::cout << fmt::format("{:<22}{:>11.2f}%   of ideal: {:.0f} of {:.0f} tokens/s\n", "goodput", 100 * expected.goodput_fraction(),
                             ideal_tokens_per_s * expected.goodput_fraction(), ideal_tokens_per_s);
    if (drawn) {
      std::cout << fmt::format("\n# Monte-Carlo: mean of {} trials, seed {}\n", trials, seed);
      print_breakdown(*drawn, &expected, g.inputs.horizon_s);
      std::cout << fmt::format("{:<22}{:>11.2f}%   (closed form {:.2f}%)\n", "goodput", 100 * drawn->goodput_fraction(),
                               100 * expected.goodput_fraction());
    }
  });
}

BenchResult bench_goodput(const std::string& scenario, const std::vector<std::string>& sets, long trials, long repeat) {
  check_input_path(scenario, "--goodput");
  const ScenarioSpec s = named_by("--goodput", scenario, [&] { return load_scenario(scenario, sets); });
  check_reliability(s);
  const auto t0 = std::chrono::steady_clock::now();
  // The bench times the Monte-Carlo, not the step: the step is set up the fast way.
  const GoodputSetup g = prepare(s, 54, simulate_steps(s, 1, fold_under(s, FoldMode::assume)), "simulated once");
  const double setup_s = seconds_since(t0);
  std::vector<double> wall, cpu;
  GoodputBreakdown drawn;
  for (long r = 0; r < repeat; ++r) {
    const auto t1 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    drawn = monte_carlo_goodput(monte_carlo_inputs(g, trials, static_cast<std::uint64_t>(r)));
    wall.push_back(seconds_since(t1));
    cpu.push_back(cpu_seconds() - c0);
  }
  BenchResult out;
  out.mode = "goodput";
  out.config = {{"scenario", s.name}, {"file", scenario}, {"overrides", sets}, {"days", 54}, {"trials", trials}, {"repeat", repeat}};
  out.rows.push_back({{"scenario", s.name}, {"gpus", s.gpus()}, {"setup_s", setup_s}, {"monte_carlo_s", nearest_rank(wall, 50)},
                      {"monte_carlo_cpu_s", nearest_rank(cpu, 50)}, {"step_s", g.step_mean_s}, {"interruptions", drawn.interruptions},
                      {"goodput_fraction", drawn.goodput_fraction()}});
  out.table = fmt::format("# clustersim bench --goodput: {} ({} GPUs), 54 days, {} trials, median of {} runs\n", s.name, s.gpus(),
                          trials, repeat);
  out.table += fmt::format("# {:>17} {:>14} {:>12} {:>10} {:>14} {:>10}\n", "simulate+setup(s)", "monte-carlo(s)", "cpu(s)",
                           "step(s)", "interruptions", "goodput");
  out.table += fmt::format("  {:>17.3f} {:>14.4f} {:>12.4f} {:>10.3f} {:>14.1f} {:>9.2f}%\n", setup_s, nearest_rank(wall, 50),
                           nearest_rank(cpu, 50), g.step_mean_s, drawn.interruptions, 100 * drawn.goodput_fraction());
  return out;
}

}  // namespace clustersim::cli
