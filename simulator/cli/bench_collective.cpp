// `clustersim bench` (its default mode): how fast the engine simulates one large ring all-reduce,
// or with --all-to-all one all-to-all (uniform and skewed), per GPU count. Each case runs in a
// forked child so its peak memory is its own (SimGrid also allows one platform per process). Times
// are medians over --repeat runs of lowering + simulation.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>

#include "collectives/collective.hpp"
#include "collectives/point_to_point.hpp"
#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/engine.hpp"
#include "simulator/progress.hpp"
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

/// GPUs 0..n-1, or the first GPU of each of n nodes.
std::vector<int> bench_ranks(const Cluster& cluster, int n, bool one_gpu_per_node) {
  std::vector<int> ranks;
  for (int g = 0; g < n; ++g) ranks.push_back(one_gpu_per_node ? g * cluster.gpus_per_node() : g);
  return ranks;
}

/// --op, checked: the collective timed when not --all-to-all.
Op collective_op(const CollectiveBench& o) {
  const std::optional<Op> parsed = parse_op(o.op);
  if (!parsed || (*parsed != Op::all_reduce && *parsed != Op::all_gather && *parsed != Op::reduce_scatter))
    throw UserError("command line", 0, "--op", "expected all_reduce, all_gather or reduce_scatter; got '" + o.op + "'");
  if (o.all_to_all && o.op != "all_reduce")
    throw UserError("command line", 0, "--op", "expected no --op with --all-to-all (it times an all-to-all)");
  return o.all_to_all ? Op::all_to_all : *parsed;
}

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

Measurement measure(const CollectiveBench& o, int gpus, Bytes size, long repeat, const std::string& routing) {
  Measurement m;
  auto t0 = std::chrono::steady_clock::now();
  const Cluster cluster = build_cluster(load_cluster_with_sets(o.cluster, "--cluster", o.sets));
  const Router router(cluster);
  FabricEngine engine(cluster);
  m.setup_s = seconds_since(t0);
  CollectiveRequest req;
  req.op = collective_op(o);
  req.ranks = bench_ranks(cluster, gpus, o.one_gpu_per_node);
  req.size_bytes = size;
  req.channels = 2 * cluster.nics_per_node();
  req.protocol = *find_protocol("Simple");
  const Algorithm* algorithm = find_algorithm(o.algo);
  const bool pxn = o.algo == "pxn";
  const AllToAllFlows flows = o.per_pair ? AllToAllFlows::per_pair : AllToAllFlows::per_link;
  req.flows = flows;  // PAT's steps too (recursive doubling always runs a flow per send)
  std::vector<std::vector<double>> skewed;
  if (o.all_to_all && routing == "skewed") skewed = skewed_bytes(gpus, size);
  auto lower = [&] {
    if (!o.all_to_all) return algorithm->lower(router, req);
    if (routing == "skewed") return lower_all_to_all_v(router, req.ranks, skewed, req.protocol, pxn, flows);
    return lower_uniform_all_to_all(router, req.ranks, static_cast<double>(size) / gpus, req.protocol, pxn, flows);
  };
  std::vector<double> walls, cpus;
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

Measurement measure_in_child(const CollectiveBench& o, int gpus, Bytes size, long repeat, const std::string& routing) {
  const std::string text = run_in_child([&] {
    const Measurement m = measure(o, gpus, size, repeat, routing);
    return fmt::format("{} {} {} {} {} {} {}\n", m.setup_s, m.median_s, m.median_cpu_s, m.simulated_s, m.peak_rss_kib,
                       m.flows, m.link_hops);
  });
  Measurement m;
  std::istringstream(text) >> m.setup_s >> m.median_s >> m.median_cpu_s >> m.simulated_s >> m.peak_rss_kib >> m.flows >>
      m.link_hops;
  return m;
}

}  // namespace

BenchResult bench_collective(CollectiveBench o, long repeat) {
  const Op op = collective_op(o);
  if (o.size.empty()) o.size = o.all_to_all ? "64M" : "1G";
  if (o.algo.empty()) o.algo = o.all_to_all ? "direct" : "ring";
  const Bytes size = parse_size(o.size, "--size");
  if (size < 1 || size > (Bytes{1} << 40))
    throw UserError("command line", 0, "--size", "expected a size from 1 byte to 1024G, got '" + o.size + "'");
  // Validates the file, the --set lines and the GPU counts up front.
  const Cluster probe = build_cluster(named_by("--cluster", o.cluster, [&] { return load_cluster_with_sets(o.cluster, "--cluster", o.sets); }));
  for (int n : o.gpu_counts) {
    const long most = o.one_gpu_per_node ? probe.nodes() : probe.gpu_count();
    if (n < 2 || n > most)
      throw UserError(o.cluster, 0, o.gpu_counts_option,
                      fmt::format("expected 2 to {} {}, got {}", most, o.one_gpu_per_node ? "nodes (--one-gpu-per-node)" : "GPUs", n));
    if (o.all_to_all && n > max_all_to_all_ranks())
      throw UserError("command line", 0, o.gpu_counts_option,
                      fmt::format("expected at most {} GPUs for an all-to-all, got {}", max_all_to_all_ranks(), n));
    if (o.all_to_all && o.per_pair && n > 128)  // one engine flow per pair: 10 s at 128, minutes beyond
      throw UserError("command line", 0, o.gpu_counts_option, fmt::format("expected at most 128 GPUs with --per-pair, got {}", n));
  }
  const Algorithm* a = find_algorithm(o.algo);
  if (!a || !a->supports(op))
    throw UserError("command line", 0, "--algo",
                    o.all_to_all ? "expected an all-to-all algorithm: direct or pxn"
                                 : fmt::format("expected an {} algorithm: {}", op == Op::all_reduce ? "all-reduce" : to_string(op), algorithms_of(op)));
  for (int n : o.gpu_counts) {
    CollectiveRequest probe_request;
    probe_request.op = op;
    if (!o.all_to_all)  // all-to-alls take any group; all-reduces may not (nvls_tree, hierarchical)
      probe_request.ranks = bench_ranks(probe, n, o.one_gpu_per_node);
    probe_request.protocol = *find_protocol("Simple");
    if (auto why = a->not_applicable(probe, probe_request)) throw UserError(o.cluster, 0, "--algo", *why);
  }
  for (const std::string& r : o.routings)
    if (r != "uniform" && r != "skewed") throw UserError("command line", 0, "--routing", "expected uniform or skewed, got '" + r + "'");
  if (!o.all_to_all) o.routings = {"uniform"};

  BenchResult out;
  out.mode = "collective";
  out.config = {{"cluster", probe.spec.name}, {"cluster_file", o.cluster}, {"cluster_overrides", o.sets}, {"op", to_string(op)},
                {"one_gpu_per_node", o.one_gpu_per_node}, {"algorithm", o.algo}, {"size_bytes", size}, {"repeat", repeat}, {"per_pair", o.per_pair}, {"routings", o.routings}};
  if (o.all_to_all)
    out.table = fmt::format("# clustersim bench: {} all-to-all of {} B a rank on {} ({} GPUs), {}, median of {} runs\n", o.algo, size,
                            probe.spec.name, probe.gpu_count(), o.per_pair ? "one flow per pair" : "summed per link", repeat);
  else
    out.table = fmt::format("# clustersim bench: {} {} of {} B on {} ({} GPUs{}), {} channels, median of {} runs\n", o.algo,
                            to_string(op), size, probe.spec.name, probe.gpu_count(),
                            o.one_gpu_per_node ? "; one GPU of each node, the counts are nodes" : "", 2 * probe.nics_per_node(), repeat);
  out.table += fmt::format("# {:>6} {:>8} {:>8} {:>10} {:>10} {:>12} {:>8} {:>10} {:>14} {:>12}\n", "gpus", "traffic", "flows",
                           "link-hops", "setup(s)", "simulate(s)", "cpu(s)", "peak(MiB)", "simulated(ms)", "busbw(GB/s)");
  Progress bar("bench", progress_wanted());
  const long steps = static_cast<long>(o.gpu_counts.size() * o.routings.size());
  long step = 0;
  for (int g : o.gpu_counts)
    for (const std::string& routing : o.routings) {
      spdlog::info("bench: {} GPUs, {} traffic, {} runs", g, routing, repeat);
      bar.update(step, steps, fmt::format("{} GPUs, {}", g, routing));
      const Measurement m = measure_in_child(o, g, size, repeat, routing);
      bar.update(++step, steps, fmt::format("{} GPUs, {}", g, routing));
      const double busbw = static_cast<double>(size) / m.simulated_s / 1e9 * bus_bandwidth_factor(op, g);
      out.table += fmt::format("  {:>6} {:>8} {:>8} {:>10} {:>10.3f} {:>12.4f} {:>8.3f} {:>10.1f} {:>14.3f} {:>12.1f}\n", g, routing,
                               m.flows, m.link_hops, m.setup_s, m.median_s, m.median_cpu_s, m.peak_rss_kib / 1024.0,
                               m.simulated_s * 1e3, busbw);
      out.rows.push_back({{"gpus", g}, {"routing", routing}, {"flows", m.flows}, {"link_hops", m.link_hops}, {"setup_s", m.setup_s},
                          {"wall_s", m.median_s}, {"cpu_s", m.median_cpu_s}, {"peak_rss_bytes", m.peak_rss_kib * 1024},
                          {"time_us", m.simulated_s * 1e6}, {"busbw_GBps", busbw}});
    }
  bar.finish();
  return out;
}

}  // namespace clustersim::cli
