// `clustersim bench --sweep`: how long a small sweep takes end to end.
#include <fmt/format.h>

#include <algorithm>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/cli/sweep_run.hpp"

namespace clustersim::cli {

BenchResult bench_sweep(const std::string& scenario, const std::vector<std::string>& sets, long repeat) {
  check_input_path(scenario, "--sweep");
  const ScenarioSpec base = named_by("--sweep", scenario, [&] { return load_scenario(scenario, sets); });
  const PriceCatalog catalog = load_price_catalog(shipped_file("scenarios/prices.yaml"), "--prices");
  SweepRequest request;
  request.scenario = scenario;
  request.overrides = sets;
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
  const double per_point = median / static_cast<double>(rows.size());
  BenchResult out;
  out.mode = "sweep";
  out.config = {{"scenario", base.name}, {"file", scenario}, {"overrides", sets}, {"vary_cluster", std::vector<std::string>{"nic_Gbps=200,400", "oversubscription.1=1,2"}},
                {"vary", request.vary}, {"top", request.top}, {"jobs", request.jobs}, {"repeat", repeat}};
  out.totals = {{"points", rows.size()}, {"wall_s", median}, {"wall_per_point_s", per_point}};
  out.table = fmt::format("# clustersim bench --sweep: {} ({} GPUs), {} cluster points x (screen over pp, microbatch; "
                          "top {} on the engine, -j {}), median of {} runs\n",
                          base.name, base.gpus(), rows.size(), request.top, request.jobs, repeat);
  out.table += fmt::format("  wall {:.3f} s in all, {:.3f} s per point\n", median, per_point);
  for (const SweepRow& r : rows) {
    out.rows.push_back({{"point", r.point.text()}, {"configurations", r.candidates}, {"valid", r.valid},
                        {"tokens_per_s", r.tokens_per_s()}, {"capital_usd", r.cost.capital_usd}});
    out.table += fmt::format("  {:<36} {:>8} configurations {:>6} valid {:>10.0f} tokens/s {:>8.2f} $M\n", r.point.text(),
                             r.candidates, r.valid, r.tokens_per_s(), r.cost.capital_usd / 1e6);
  }
  return out;
}

}  // namespace clustersim::cli
