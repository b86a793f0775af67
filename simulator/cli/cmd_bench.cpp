// `clustersim bench`: how fast the engine simulates one large ring all-reduce, per GPU count.
// Each case runs in a forked child so its peak memory is its own (SimGrid also allows one platform
// per process). Times are medians over --repeat runs of lowering + simulation.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <sstream>

#include "collectives/collective.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/engine.hpp"
#include "simulator/training_run.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

struct BenchOptions {
  std::vector<std::string> scenarios;
  std::string cluster = "scenarios/clusters/dgx-h100-superpod-16k.yaml";
  std::vector<std::string> gpus{"256", "1024", "4096"};
  std::string size = "1G";
  std::string algo = "ring";
  std::string repeat = "5";
};

struct Measurement {
  double setup_s = 0;     // cluster graph + SimGrid platform
  double median_s = 0;    // lowering + simulation
  double simulated_s = 0;
  long peak_rss_kib = 0;
  std::size_t flows = 0;
  std::size_t link_hops = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Measurement measure(const BenchOptions& o, int gpus, Bytes size) {
  Measurement m;
  auto t0 = std::chrono::steady_clock::now();
  const Cluster cluster = load_cluster(o.cluster);
  const Router router(cluster);
  FabricEngine engine(cluster);
  m.setup_s = seconds_since(t0);
  CollectiveRequest req;
  req.op = Op::all_reduce;
  for (int g = 0; g < gpus; ++g) req.ranks.push_back(g);
  req.size_bytes = size;
  req.channels = 2 * cluster.nics_per_node();
  req.protocol = *find_protocol("Simple");
  const Algorithm* algorithm = find_algorithm(o.algo);
  std::vector<double> walls;
  const long repeat = parse_integer(o.repeat, "--repeat", 1, 1000);
  for (long r = 0; r < repeat; ++r) {
    t0 = std::chrono::steady_clock::now();
    const FlowGraph graph = algorithm->lower(router, req);
    m.simulated_s = makespan(engine.run(graph));
    walls.push_back(seconds_since(t0));
    m.flows = graph.flows.size();
    m.link_hops = 0;
    for (const Flow& f : graph.flows) m.link_hops += f.links.size();
  }
  std::sort(walls.begin(), walls.end());
  m.median_s = walls[walls.size() / 2];
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  m.peak_rss_kib = usage.ru_maxrss;
  return m;
}

Measurement measure_in_child(const BenchOptions& o, int gpus, Bytes size) {
  const std::string text = run_in_child([&] {
    const Measurement m = measure(o, gpus, size);
    return fmt::format("{} {} {} {} {} {}\n", m.setup_s, m.median_s, m.simulated_s, m.peak_rss_kib, m.flows,
                       m.link_hops);
  });
  Measurement m;
  std::istringstream(text) >> m.setup_s >> m.median_s >> m.simulated_s >> m.peak_rss_kib >> m.flows >> m.link_hops;
  return m;
}

/// One training iteration per scenario, each in its own process: wall time (load + plan + simulate)
/// and peak memory.
void bench_scenarios(const std::vector<std::string>& scenarios) {
  for (const std::string& path : scenarios) {  // bad files fail before any timing
    check_input_path(path, "--scenarios");
    load_scenario(path);
  }
  std::cout << fmt::format("# clustersim bench: one training iteration per scenario, each in its own process\n");
  std::cout << fmt::format("# {:<40} {:>6} {:>10} {:>10} {:>14}\n", "scenario", "gpus", "wall(s)", "peak(MiB)",
                           "iteration(s)");
  for (const std::string& path : scenarios) {
    const std::string text = run_in_child([&] {
      const auto t0 = std::chrono::steady_clock::now();
      const ScenarioSpec s = load_scenario(path);
      const RunReport r = run_training(s, true);
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
    std::cout << fmt::format("  {:<40} {:>6} {:>10.2f} {:>10.1f} {:>14.3f}\n", name, gpus, wall, rss_kib / 1024.0,
                             iteration);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "engine speed: one large collective per GPU count");
  cmd->add_option("--cluster", o->cluster, "cluster YAML (default: the 16K-GPU H100 SuperPOD)");
  cmd->add_option("--gpus", o->gpus, "GPU counts")->delimiter(',');
  cmd->add_option("--size", o->size, "all-reduce size (1G)");
  cmd->add_option("--algo", o->algo, "all-reduce algorithm (ring)");
  cmd->add_option("--repeat", o->repeat, "runs per case; the median is reported (5)");
  cmd->add_option("--scenarios", o->scenarios, "time one training iteration of each scenario instead")->delimiter(',');
  cmd->callback([o] {
    if (!o->scenarios.empty()) return bench_scenarios(o->scenarios);
    const Bytes size = parse_size(o->size, "--size");
    if (size < 1 || size > (Bytes{1} << 40))
      throw UserError("command line", 0, "--size", "expected a size from 1 byte to 1024G, got '" + o->size + "'");
    const Cluster probe = load_cluster(o->cluster, "--cluster");  // validates the file and the GPU counts up front
    std::vector<int> counts;
    for (const std::string& g : o->gpus) {
      const long n = parse_integer(g, "--gpus", 1, std::numeric_limits<int>::max());
      if (n < 2 || n > probe.gpu_count())
        throw UserError(o->cluster, 0, "--gpus", fmt::format("expected 2 to {} GPUs, got {}", probe.gpu_count(), n));
      counts.push_back(static_cast<int>(n));
    }
    const Algorithm* a = find_algorithm(o->algo);
    if (!a || !a->supports(Op::all_reduce))
      throw UserError("command line", 0, "--algo", "expected an all-reduce algorithm: ring or tree");
    const long repeat = parse_integer(o->repeat, "--repeat", 1, 1000);
    std::cout << fmt::format("# clustersim bench: {} all-reduce of {} B on {} ({} GPUs), {} channels, "
                             "median of {} runs\n",
                             o->algo, size, probe.spec.name, probe.gpu_count(), 2 * probe.nics_per_node(), repeat);
    std::cout << fmt::format("# {:>6} {:>8} {:>10} {:>10} {:>12} {:>10} {:>14} {:>12}\n", "gpus", "flows", "link-hops",
                             "setup(s)", "simulate(s)", "peak(MiB)", "simulated(ms)", "busbw(GB/s)");
    for (int g : counts) {
      const Measurement m = measure_in_child(*o, g, size);
      const double busbw = static_cast<double>(size) / m.simulated_s / 1e9 * bus_bandwidth_factor(Op::all_reduce, g);
      std::cout << fmt::format("  {:>6} {:>8} {:>10} {:>10.3f} {:>12.4f} {:>10.1f} {:>14.3f} {:>12.1f}\n", g, m.flows,
                               m.link_hops, m.setup_s, m.median_s, m.peak_rss_kib / 1024.0, m.simulated_s * 1e3, busbw);
    }
  });
}

}  // namespace clustersim::cli
