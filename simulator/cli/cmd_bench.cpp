// `clustersim bench`: how fast the engine simulates one large ring all-reduce, or with --all-to-all
// one all-to-all (uniform and skewed), per GPU count. Each case runs in a forked child so its peak
// memory is its own (SimGrid also allows one platform per process). Times are medians over --repeat
// runs of lowering + simulation.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <iostream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "collectives/collective.hpp"
#include "collectives/point_to_point.hpp"
#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_fabric.hpp"
#include "simulator/cli/bench_search.hpp"
#include "simulator/cli/bench_sweep.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/progress.hpp"
#include "simulator/engine.hpp"
#include "simulator/training_run.hpp"
#include "topologies/user_error.hpp"
#include "workloads/moe_routing.hpp"

namespace clustersim::cli {

namespace {

std::string algorithms_of(Op op) {
  std::string out;
  for (const Algorithm* a : all_algorithms())
    if (a->supports(op)) out += (out.empty() ? "" : ", ") + a->name();
  return out;
}

constexpr const char* kDefaultCluster = "scenarios/clusters/dgx-h100-superpod-16k.yaml";

struct BenchOptions {
  std::vector<std::string> scenarios;
  std::string cluster = kDefaultCluster;
  std::vector<std::string> gpus{"256", "1024", "4096"};
  std::string size;  // 1G all-reduce, 64M all-to-all
  std::string algo;  // ring all-reduce, direct all-to-all
  std::string op = "all_reduce";  // without --all-to-all: all_reduce, all_gather or reduce_scatter
  Op collective_op = Op::all_reduce;
  bool one_gpu_per_node = false;  // ranks: the first GPU of each of --gpus nodes (PAT's setting)
  std::string repeat = "5";
  bool all_to_all = false;
  std::vector<std::string> routings{"uniform", "skewed"};
  std::string fold = "assume";
  bool per_pair = false;  // all-to-all as one flow per pair, the reference the per-link sum is checked against
  bool fabric_only = false;  // build and route the cluster, no simulation (bench_fabric.hpp)
  std::vector<std::string> search;  // search's screen over these scenarios' whole space (bench_search.hpp)
  std::string sweep;                // a small sweep of this scenario, end to end (bench_sweep.hpp)
  std::string json, csv;
  std::string goodput;       // a scenario: time its goodput Monte-Carlo (cmd_goodput.cpp)
  bool serve = false;        // time issue 19's serving cases (cmd_serve.cpp)
  std::string trials = "1000";
};

struct Measurement {
  double setup_s = 0;     // cluster graph + SimGrid platform
  double median_s = 0;    // lowering + simulation, wall clock
  double median_cpu_s = 0;  // the same, CPU time: what one core spends, whatever else the machine runs
  double simulated_s = 0;
  long peak_rss_kib = 0;
  std::size_t flows = 0;
  std::size_t link_hops = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// A skewed all-to-all as an MoE dispatch makes it: one expert a rank, top-8, expert 0 (on rank 0)
/// taking 4x the mean load (workloads/moe_routing.hpp), each rank's row scaled to send `size` bytes
/// on average, as nccl-tests' size is a rank's send buffer.
std::vector<std::vector<double>> skewed_bytes(int gpus, Bytes size) {
  MoeRoutingSpec spec;
  spec.tokens_per_rank = 4096;
  spec.routed_experts = gpus;
  spec.top_k = 8;
  spec.ep = gpus;
  spec.model = RoutingModel::skewed;
  spec.hot_factor = 4;
  std::vector<std::vector<double>> bytes = std::move(route_moe_layer(spec).token_copies);
  const double per_copy = static_cast<double>(size) / (static_cast<double>(spec.tokens_per_rank) * spec.top_k);
  for (auto& row : bytes)
    for (double& b : row) b *= per_copy;
  return bytes;
}

/// GPUs 0..n-1, or the first GPU of each of n nodes.
std::vector<int> bench_ranks(const Cluster& cluster, int n, bool one_gpu_per_node) {
  std::vector<int> ranks;
  for (int g = 0; g < n; ++g) ranks.push_back(one_gpu_per_node ? g * cluster.gpus_per_node() : g);
  return ranks;
}

Measurement measure(const BenchOptions& o, int gpus, Bytes size, const std::string& routing) {
  Measurement m;
  auto t0 = std::chrono::steady_clock::now();
  const Cluster cluster = load_cluster(o.cluster);
  const Router router(cluster);
  FabricEngine engine(cluster);
  m.setup_s = seconds_since(t0);
  CollectiveRequest req;
  req.op = o.all_to_all ? Op::all_to_all : o.collective_op;
  req.ranks = bench_ranks(cluster, gpus, o.one_gpu_per_node);
  req.size_bytes = size;
  req.channels = 2 * cluster.nics_per_node();
  req.protocol = *find_protocol("Simple");
  const Algorithm* algorithm = find_algorithm(o.algo);
  const bool pxn = o.algo == "pxn";
  const AllToAllFlows flows = o.per_pair ? AllToAllFlows::per_pair : AllToAllFlows::per_link;
  std::vector<std::vector<double>> skewed;
  if (o.all_to_all && routing == "skewed") skewed = skewed_bytes(gpus, size);
  auto lower = [&] {
    if (!o.all_to_all) return algorithm->lower(router, req);
    if (routing == "skewed") return lower_all_to_all_v(router, req.ranks, skewed, req.protocol, pxn, flows);
    return lower_uniform_all_to_all(router, req.ranks, static_cast<double>(size) / gpus, req.protocol, pxn, flows);
  };
  std::vector<double> walls, cpus;
  const long repeat = parse_integer(o.repeat, "--repeat", 1, 1000);
  for (long r = 0; r < repeat; ++r) {
    t0 = std::chrono::steady_clock::now();
    const double cpu0 = cpu_seconds();
    const FlowGraph graph = lower();
    m.simulated_s = makespan(engine.run(graph));
    walls.push_back(seconds_since(t0));
    cpus.push_back(cpu_seconds() - cpu0);
    m.flows = graph.flows.size();
    m.link_hops = 0;
    for (const Flow& f : graph.flows) m.link_hops += f.links.size();
  }
  m.median_s = median(walls);
  m.median_cpu_s = median(cpus);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  m.peak_rss_kib = usage.ru_maxrss;
  return m;
}

Measurement measure_in_child(const BenchOptions& o, int gpus, Bytes size, const std::string& routing) {
  const std::string text = run_in_child([&] {
    const Measurement m = measure(o, gpus, size, routing);
    return fmt::format("{} {} {} {} {} {} {}\n", m.setup_s, m.median_s, m.median_cpu_s, m.simulated_s, m.peak_rss_kib,
                       m.flows, m.link_hops);
  });
  Measurement m;
  std::istringstream(text) >> m.setup_s >> m.median_s >> m.median_cpu_s >> m.simulated_s >> m.peak_rss_kib >> m.flows >>
      m.link_hops;
  return m;
}

/// One training iteration per scenario, each in its own process: wall time (load + plan + simulate)
/// and peak memory.
void bench_scenarios(const std::vector<std::string>& scenarios, FoldMode fold) {
  for (const std::string& path : scenarios) {  // bad files fail before any timing
    check_input_path(path, "--scenarios");
    load_scenario(path);
  }
  std::cout << fmt::format("# clustersim bench: one training iteration per scenario, each in its own process (--fold {})\n", to_string(fold));
  std::cout << fmt::format("# {:<40} {:>6} {:>10} {:>10} {:>14}\n", "scenario", "gpus", "wall(s)", "peak(MiB)",
                           "iteration(s)");
  Progress bar("bench", progress_wanted());
  for (const std::string& path : scenarios) {
    spdlog::info("bench: scenario {} of {}: {}", &path - scenarios.data() + 1, scenarios.size(), path);
    bar.update(&path - scenarios.data(), static_cast<long>(scenarios.size()), path);
    const std::string text = run_in_child([&] {
      const auto t0 = std::chrono::steady_clock::now();
      const ScenarioSpec s = load_scenario(path);
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
    bar.update(&path - scenarios.data() + 1, static_cast<long>(scenarios.size()), path);
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
  cmd->add_option("--size", o->size, "all-reduce size (1G), or each rank's all-to-all send buffer (64M)");
  cmd->add_option("--algo", o->algo, "all-reduce algorithm (ring), or all-to-all algorithm (direct)");
  cmd->add_option("--repeat", o->repeat, "runs per case; the median is reported (5)");
  cmd->add_flag("--all-to-all", o->all_to_all, "time an all-to-all instead of an all-reduce");
  cmd->add_option("--op", o->op, "the collective when not --all-to-all: all_reduce (default), all_gather or reduce_scatter");
  cmd->add_flag("--one-gpu-per-node", o->one_gpu_per_node, "rank k is the first GPU of node k (PAT's setting); --gpus counts nodes");
  cmd->add_option("--routing", o->routings, "all-to-all traffic: uniform, skewed (both)")->delimiter(',');
  cmd->add_flag("--per-pair", o->per_pair, "all-to-all as one flow per pair instead of summed per link");
  cmd->add_option("--scenarios", o->scenarios, "time one training iteration of each scenario instead")->delimiter(',');
  cmd->add_option("--fold", o->fold, "with --scenarios: how replicas fold, as in run (assume)");
  cmd->add_flag("--fabric-only", o->fabric_only, "time building and routing the --cluster instead of a collective");
  cmd->add_option("--search", o->search, "time search's screen over each scenario's whole space instead")->delimiter(',');
  cmd->add_option("--sweep", o->sweep, "time a small sweep of this scenario (4 cluster points) instead");
  cmd->add_option("--json", o->json, "also write the collective timings as JSON (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--csv", o->csv, "also write the collective timings as CSV (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--goodput", o->goodput, "time the goodput Monte-Carlo of this scenario over 54 days instead");
  cmd->add_option("--trials", o->trials, "with --goodput: Monte-Carlo trials (1000)");
  cmd->add_flag("--serve", o->serve, "time serve: 1 h at 10 req/s on one 8-GPU replica, and 1,000 replicas for 10 min, instead");
  cmd->callback([o] {
    for (const auto& [option, path] : {std::pair{"--json", &o->json}, std::pair{"--csv", &o->csv}})
      if (!path->empty() && (!o->scenarios.empty() || o->fabric_only || !o->search.empty() || !o->goodput.empty() || o->serve ||
                              !o->sweep.empty()))
        throw UserError("command line", 0, option,
                        "expected the collective bench: --scenarios, --fabric-only, --search, --sweep, --goodput and --serve print text only");
    if (o->serve) return bench_serve(parse_integer(o->repeat, "--repeat", 1, 1000));
    if (!o->search.empty()) return bench_search(o->search, parse_integer(o->repeat, "--repeat", 1, 1000));
    if (!o->sweep.empty()) return bench_sweep(o->sweep, parse_integer(o->repeat, "--repeat", 1, 1000));
    if (!o->goodput.empty())
      return bench_goodput(o->goodput, parse_integer(o->trials, "--trials", 1, 10'000'000), parse_integer(o->repeat, "--repeat", 1, 1000));
    if (!o->scenarios.empty()) return bench_scenarios(o->scenarios, parse_fold(o->fold));
    if (o->cluster == kDefaultCluster) o->cluster = shipped_file(kDefaultCluster);  // from any directory
    if (o->fabric_only) return bench_fabric(o->cluster);
    const std::optional<Op> parsed = parse_op(o->op);
    if (!parsed || (*parsed != Op::all_reduce && *parsed != Op::all_gather && *parsed != Op::reduce_scatter))
      throw UserError("command line", 0, "--op", "expected all_reduce, all_gather or reduce_scatter; got '" + o->op + "'");
    if (o->all_to_all && o->op != "all_reduce")
      throw UserError("command line", 0, "--op", "expected no --op with --all-to-all (it times an all-to-all)");
    o->collective_op = *parsed;
    const Op op = o->all_to_all ? Op::all_to_all : o->collective_op;
    if (o->size.empty()) o->size = o->all_to_all ? "64M" : "1G";
    if (o->algo.empty()) o->algo = o->all_to_all ? "direct" : "ring";
    const Bytes size = parse_size(o->size, "--size");
    if (size < 1 || size > (Bytes{1} << 40))
      throw UserError("command line", 0, "--size", "expected a size from 1 byte to 1024G, got '" + o->size + "'");
    const Cluster probe = load_cluster(o->cluster, "--cluster");  // validates the file and the GPU counts up front
    std::vector<int> counts;
    for (const std::string& g : o->gpus) {
      const long n = parse_integer(g, "--gpus", 1, std::numeric_limits<int>::max());
      const long most = o->one_gpu_per_node ? probe.nodes() : probe.gpu_count();
      if (n < 2 || n > most)
        throw UserError(o->cluster, 0, "--gpus",
                        fmt::format("expected 2 to {} {}, got {}", most, o->one_gpu_per_node ? "nodes (--one-gpu-per-node)" : "GPUs", n));
      if (o->all_to_all && n > max_all_to_all_ranks())
        throw UserError("command line", 0, "--gpus",
                        fmt::format("expected at most {} GPUs for an all-to-all, got {}", max_all_to_all_ranks(), n));
      if (o->all_to_all && o->per_pair && n > 128)  // one engine flow per pair: 10 s at 128, minutes beyond
        throw UserError("command line", 0, "--gpus", fmt::format("expected at most 128 GPUs with --per-pair, got {}", n));
      counts.push_back(static_cast<int>(n));
    }
    const Algorithm* a = find_algorithm(o->algo);
    if (!a || !a->supports(op))
      throw UserError("command line", 0, "--algo",
                      o->all_to_all ? "expected an all-to-all algorithm: direct or pxn"
                                    : fmt::format("expected an {} algorithm: {}", op == Op::all_reduce ? "all-reduce" : to_string(op), algorithms_of(op)));
    for (int n : counts) {
      CollectiveRequest probe_request;
      probe_request.op = op;
      if (!o->all_to_all)  // all-to-alls take any group; all-reduces may not (nvls_tree, hierarchical)
        probe_request.ranks = bench_ranks(probe, n, o->one_gpu_per_node);
      probe_request.protocol = *find_protocol("Simple");
      if (auto why = a->not_applicable(probe, probe_request)) throw UserError(o->cluster, 0, "--algo", *why);
    }
    for (const std::string& r : o->routings)
      if (r != "uniform" && r != "skewed")
        throw UserError("command line", 0, "--routing", "expected uniform or skewed, got '" + r + "'");
    const long repeat = parse_integer(o->repeat, "--repeat", 1, 1000);
    if (!o->all_to_all) o->routings = {"uniform"};
    if (!o->json.empty()) check_json_path(o->json);
    check_csv_path(o->csv, o->json);
    std::ostringstream table;
    nlohmann::ordered_json j = json_document("bench", {{"cluster", probe.spec.name},
                                                       {"cluster_file", o->cluster},
                                                       {"op", to_string(op)},
                                                       {"one_gpu_per_node", o->one_gpu_per_node},
                                                       {"algorithm", o->algo},
                                                       {"size_bytes", size},
                                                       {"repeat", repeat},
                                                       {"per_pair", o->per_pair},
                                                       {"routings", o->routings}});
    j["rows"] = nlohmann::ordered_json::array();
    if (o->all_to_all)
      table << fmt::format("# clustersim bench: {} all-to-all of {} B a rank on {} ({} GPUs), {}, median of {} "
                               "runs\n",
                               o->algo, size, probe.spec.name, probe.gpu_count(),
                               o->per_pair ? "one flow per pair" : "summed per link", repeat);
    else
      table << fmt::format("# clustersim bench: {} {} of {} B on {} ({} GPUs{}), {} channels, "
                               "median of {} runs\n",
                               o->algo, to_string(op), size, probe.spec.name, probe.gpu_count(),
                               o->one_gpu_per_node ? "; one GPU of each node, --gpus counts nodes" : "",
                               2 * probe.nics_per_node(), repeat);
    table << fmt::format("# {:>6} {:>8} {:>8} {:>10} {:>10} {:>12} {:>8} {:>10} {:>14} {:>12}\n", "gpus",
                             "traffic", "flows", "link-hops", "setup(s)", "simulate(s)", "cpu(s)", "peak(MiB)",
                             "simulated(ms)", "busbw(GB/s)");
    Progress bar("bench", progress_wanted());
    const long steps = static_cast<long>(counts.size() * o->routings.size());
    long step = 0;
    for (int g : counts)
      for (const std::string& routing : o->routings) {
        spdlog::info("bench: {} GPUs, {} traffic, {} runs", g, routing, repeat);
        bar.update(step, steps, fmt::format("{} GPUs, {}", g, routing));
        const Measurement m = measure_in_child(*o, g, size, routing);
        bar.update(++step, steps, fmt::format("{} GPUs, {}", g, routing));
        const double busbw = static_cast<double>(size) / m.simulated_s / 1e9 * bus_bandwidth_factor(op, g);
        table << fmt::format("  {:>6} {:>8} {:>8} {:>10} {:>10.3f} {:>12.4f} {:>8.3f} {:>10.1f} {:>14.3f} "
                                 "{:>12.1f}\n",
                                 g, routing, m.flows, m.link_hops, m.setup_s, m.median_s, m.median_cpu_s,
                                 m.peak_rss_kib / 1024.0, m.simulated_s * 1e3, busbw);
        j["rows"].push_back({{"gpus", g}, {"routing", routing}, {"flows", m.flows}, {"link_hops", m.link_hops},
                             {"setup_s", m.setup_s}, {"wall_s", m.median_s}, {"cpu_s", m.median_cpu_s},
                             {"peak_rss_bytes", m.peak_rss_kib * 1024}, {"time_us", m.simulated_s * 1e6},
                             {"busbw_GBps", busbw}});
      }
    bar.finish();
    if (!o->json.empty()) write_json(o->json, j);
    write_csv(o->csv, j["rows"]);
    if (table_to_stdout(o->json, o->csv)) std::cout << table.str();
  });
}

}  // namespace clustersim::cli
