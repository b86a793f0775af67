// `clustersim bench --serve`: how fast `serve` simulates issue 19's two cases, a disaggregated fleet,
// and `serve --capacity`'s search on the shipped replica.
#include <fmt/format.h>

#include <chrono>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/draw_summary.hpp"
#include "simulator/serve_capacity.hpp"
#include "simulator/serve_sim.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim::cli {

BenchResult bench_serve(const std::vector<std::string>& sets, long repeat) {
  // Issue 19's targets: one hour at 10 requests/s on one 8-GPU replica (<= 10 s on one core), and
  // 1,000 replicas for ten simulated minutes (<= 5 min); then the fleet disaggregated, whose KV
  // caches share the fabric (no target: what every transfer's max-min sharing costs); then a
  // capacity search (no target: what finding the knee costs, all its rates together).
  struct Case {
    const char* what;
    const char* file;
    std::vector<std::string> sets;
    bool capacity = false;
  };
  const std::vector<Case> cases = {
      {"1 replica x 8 GPUs, 1 h at 10 req/s", "scenarios/serving/llama3-70b-h100-tp8.yaml",
       {"serving.requests.rate_per_s=10", "serving.requests.duration_s=3600"}},
      {"1000 replicas x 8 GPUs, 10 min at 10,000 req/s", "scenarios/serving/llama3-70b-h100-fleet.yaml", {}},
      {"400 prefill + 600 decode replicas, 1 min at 10,000 req/s", "scenarios/serving/llama3-70b-h100-fleet-disagg.yaml", {}},
      {"--capacity, 1 replica x 8 GPUs, 5-min windows", "scenarios/serving/llama3-70b-h100-tp8.yaml", {}, true}};
  std::vector<ServingSpec> specs;  // both read (the user's --set after each case's) before any timing
  for (const Case& c : cases) {
    const std::string file = shipped_file(c.file);
    check_input_path(file, "--serve");
    std::vector<std::string> all = c.sets;
    all.insert(all.end(), sets.begin(), sets.end());
    specs.push_back(named_by("--serve", file, [&] { return load_serving(file, all); }));
  }
  BenchResult out;
  out.mode = "serve";
  out.config = {{"overrides", sets}, {"repeat", repeat}};
  out.table = fmt::format("# clustersim bench --serve: median of {} runs; cpu is one core's\n", repeat);
  out.table += fmt::format("# {:<48} {:>10} {:>10} {:>12} {:>12}\n", "case", "wall(s)", "cpu(s)", "requests", "iterations");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::vector<double> wall, cpu;
    std::size_t requests = 0;
    long iterations = 0;
    for (long k = 0; k < repeat; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      if (cases[i].capacity) {
        const CapacityResult r = find_capacity(specs[i], CapacitySearch{});
        wall.push_back(seconds_since(t0));
        cpu.push_back(cpu_seconds() - c0);
        requests = 0;
        iterations = 0;
        for (const CapacityProbe& p : r.probes) {
          requests += std::size_t(p.summary.requests);
          iterations += p.summary.iterations;
        }
        continue;
      }
      const ServeResult r = simulate_serving(specs[i]);
      wall.push_back(seconds_since(t0));
      cpu.push_back(cpu_seconds() - c0);
      requests = r.requests.size();
      iterations = r.iterations;
    }
    out.rows.push_back({{"case", cases[i].what}, {"file", cases[i].file}, {"wall_s", nearest_rank(wall, 50)},
                        {"cpu_s", nearest_rank(cpu, 50)}, {"requests", requests}, {"iterations", iterations}});
    out.table += fmt::format("  {:<48} {:>10.3f} {:>10.3f} {:>12} {:>12}\n", cases[i].what, nearest_rank(wall, 50),
                             nearest_rank(cpu, 50), requests, iterations);
  }
  return out;
}

}  // namespace clustersim::cli
