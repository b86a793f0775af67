// `clustersim bench --search`: how fast search's analytic screen goes over a scenario's whole space.
#include <fmt/format.h>

#include <algorithm>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/search_screen.hpp"

namespace clustersim::cli {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

BenchResult bench_search(const std::vector<std::string>& scenarios, const std::vector<std::string>& sets, long repeat) {
  BenchResult out;
  out.mode = "search";
  out.config = {{"scenarios", scenarios}, {"overrides", sets}, {"repeat", repeat}};
  out.table = fmt::format("# clustersim bench --search: search's screen over every dimension (pp fixed where stage_gpus fixes it), median of {} runs\n", repeat);
  // configs/s counts every point of the space; valid/s only those timed to the end (the rest fall to
  // a rule on the way, most of them cheaply).
  out.table += fmt::format("# {:<40} {:>10} {:>8} {:>9} {:>9} {:>14} {:>12}\n", "scenario", "configs", "valid", "wall(s)", "cpu(s)",
                           "configs/s/core", "valid/s/core");
  std::vector<ScenarioSpec> loaded;  // every file read before any timing, so a bad one costs nothing
  for (const std::string& path : scenarios) {
    check_input_path(path, "--search");
    loaded.push_back(named_by("--search", path, [&] { return load_scenario(path, sets); }));
  }
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    const ScenarioSpec& s = loaded[i];
    const SearchSpace space = search_space(s, default_search_dimensions(s));
    std::vector<double> wall, cpu;
    ScreenResult r;
    for (long k = 0; k < repeat; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      Screen screen(s);  // fresh caches: each run pays for its per-layer costs and schedule tables
      r = screen.run(space);
      cpu.push_back(cpu_seconds() - c0);
      wall.push_back(seconds_since(t0));
    }
    const double cpu_s = median(cpu), wall_s = median(wall);
    const double per_s = static_cast<double>(r.candidates) / cpu_s, valid_per_s = static_cast<double>(r.valid.size()) / cpu_s;
    out.rows.push_back({{"scenario", s.name}, {"file", scenarios[i]}, {"configurations", r.candidates}, {"valid", r.valid.size()},
                        {"wall_s", wall_s}, {"cpu_s", cpu_s}, {"configurations_per_cpu_s", per_s}, {"valid_per_cpu_s", valid_per_s}});
    out.table += fmt::format("  {:<40} {:>10} {:>8} {:>9.3f} {:>9.3f} {:>14.0f} {:>12.0f}\n", s.name, r.candidates, r.valid.size(),
                             wall_s, cpu_s, per_s, valid_per_s);
  }
  return out;
}

}  // namespace clustersim::cli
