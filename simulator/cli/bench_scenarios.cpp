// `clustersim bench --scenarios`: one training iteration per scenario, each in its own process (its
// peak memory its own; SimGrid also allows one platform per process).
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <sstream>

#include <spdlog/spdlog.h>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/progress.hpp"
#include "simulator/training_run.hpp"

namespace clustersim::cli {

BenchResult bench_scenarios(const std::vector<std::string>& scenarios, const std::vector<std::string>& sets, FoldMode fold) {
  for (const std::string& path : scenarios) {  // bad files fail before any timing
    check_input_path(path, "--scenarios");
    named_by("--scenarios", path, [&] { return load_scenario(path, sets); });
  }
  BenchResult out;
  out.mode = "scenarios";
  out.config = {{"scenarios", scenarios}, {"overrides", sets}, {"fold", to_string(fold)}};
  out.table = fmt::format("# clustersim bench: one training iteration per scenario, each in its own process (--fold {})\n", to_string(fold));
  out.table += fmt::format("# {:<40} {:>6} {:>10} {:>10} {:>14}\n", "scenario", "gpus", "wall(s)", "peak(MiB)", "iteration(s)");
  Progress bar("bench", progress_wanted());
  const long total = static_cast<long>(scenarios.size());
  for (long i = 0; i < total; ++i) {
    const std::string& path = scenarios[static_cast<std::size_t>(i)];
    spdlog::info("bench: scenario {} of {}: {}", i + 1, total, path);
    bar.update(i, total, path);
    const std::string text = run_in_child([&] {
      const auto t0 = std::chrono::steady_clock::now();
      const ScenarioSpec s = load_scenario(path, sets);
      const RunReport r = run_training(s, true, nullptr, fold);
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      return fmt::format("{} {} {} {} {}", s.name, s.gpus(), seconds_since(t0), usage.ru_maxrss, r.iteration_s);
    });
    std::istringstream in(text);
    std::string name;
    int gpus = 0;
    double wall = 0, iteration = 0;
    long rss_kib = 0;
    in >> name >> gpus >> wall >> rss_kib >> iteration;
    bar.update(i + 1, total, path);
    out.rows.push_back({{"scenario", name}, {"file", path}, {"gpus", gpus}, {"wall_s", wall}, {"peak_rss_bytes", rss_kib * 1024},
                        {"iteration_s", iteration}});
    out.table += fmt::format("  {:<40} {:>6} {:>10.2f} {:>10.1f} {:>14.3f}\n", name, gpus, wall, rss_kib / 1024.0, iteration);
  }
  bar.finish();
  return out;
}

}  // namespace clustersim::cli
