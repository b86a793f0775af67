#include "simulator/cli/bench_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/cli/sweep_run.hpp"

namespace clustersim::cli {

void bench_sweep(const std::string& scenario, long repeat) {
  check_input_path(scenario, "--sweep");
  const ScenarioSpec base = named_by("--sweep", scenario, [&] { return load_scenario(scenario); });
  const PriceCatalog catalog = load_price_catalog(shipped_file("scenarios/prices.yaml"), "--prices");
  SweepRequest request;
  request.scenario = scenario;
  request.dimensions = {parse_sweep_dimension("nic_Gbps=200,400"), parse_sweep_dimension("oversubscription.1=1,2")};
  request.vary = {"pp", "microbatch"};
  request.top = 2;
  request.jobs = 2;
  std::vector<double> wall;
  std::vector<SweepRow> rows;
  for (long k = 0; k < repeat; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    rows = run_sweep(request, base, catalog);
    wall.push_back(seconds_since(t0));
  }
  std::sort(wall.begin(), wall.end());
  const double median = wall.size() % 2 ? wall[wall.size() / 2] : (wall[wall.size() / 2 - 1] + wall[wall.size() / 2]) / 2;
  std::cout << fmt::format("# clustersim bench --sweep: {} ({} GPUs), {} cluster points x (screen over pp, microbatch; "
                           "top {} on the engine, -j {}), median of {} runs\n",
                           base.name, base.gpus(), rows.size(), request.top, request.jobs, repeat);
  std::cout << fmt::format("  wall {:.3f} s in all, {:.3f} s per point\n", median, median / static_cast<double>(rows.size()));
  for (const SweepRow& r : rows)
    std::cout << fmt::format("  {:<36} {:>8} configurations {:>6} valid {:>10.0f} tokens/s {:>8.2f} $M\n", r.point.text(),
                             r.candidates, r.valid, r.tokens_per_s(), r.cost.capital_usd / 1e6);
}

}  // namespace clustersim::cli
