#include "simulator/cli/bench_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "simulator/cli/bench_clock.hpp"
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

void bench_search(const std::vector<std::string>& scenarios, long repeat) {
  std::cout << fmt::format("# clustersim bench --search: search's screen over every dimension, median of {} runs\n", repeat);
  // configs/s counts every point of the space; valid/s only those timed to the end (the rest fall to
  // a rule on the way, most of them cheaply).
  std::cout << fmt::format("# {:<40} {:>10} {:>8} {:>9} {:>9} {:>14} {:>12}\n", "scenario", "configs", "valid", "wall(s)",
                           "cpu(s)", "configs/s/core", "valid/s/core");
  for (const std::string& path : scenarios) {
    check_input_path(path, "--search");
    const ScenarioSpec s = named_by("--search", path, [&] { return load_scenario(path); });
    const SearchSpace space = search_space(s, search_dimensions());
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
    const double cpu_s = median(cpu);
    std::cout << fmt::format("  {:<40} {:>10} {:>8} {:>9.3f} {:>9.3f} {:>14.0f} {:>12.0f}\n", s.name, r.candidates,
                             r.valid.size(), median(wall), cpu_s, static_cast<double>(r.candidates) / cpu_s,
                             static_cast<double>(r.valid.size()) / cpu_s);
  }
}

}  // namespace clustersim::cli
