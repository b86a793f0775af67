// `clustersim bench --fabric-only`: how fast a cluster file is built and routed, without simulating.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "topologies/report.hpp"
#include "topologies/router.hpp"

namespace clustersim::cli {

BenchResult bench_fabric(const std::string& cluster_path, const std::vector<std::string>& sets) {
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = cpu_seconds();
  const ClusterSpec spec = load_cluster_with_sets(cluster_path, "--cluster", sets);
  const Cluster c = build_cluster(spec);
  const double build_s = seconds_since(t0), build_cpu_s = cpu_seconds() - cpu0;
  const TopologyReport counts = count_topology(c);

  t0 = std::chrono::steady_clock::now();
  cpu0 = cpu_seconds();
  const Router router(c);
  const int g = c.gpus_per_node(), nodes = c.nodes();
  long routes = 0, link_hops = 0;
  Route r;
  for (int gpu = 0; gpu < c.gpu_count(); ++gpu) {
    const int node = c.node_of_gpu(gpu);
    for (int shift : {0, 1}) {
      // The ring hop stays near; the other crosses to the far half of the cluster, other rail.
      const int dst_node = (node + (shift == 0 ? 1 : nodes / 2)) % nodes;
      const int dst = dst_node * g + (c.local_of_gpu(gpu) + shift) % g;
      if (dst == gpu) continue;
      r.links.clear();
      r.latency_s = 0;
      router.append_route(gpu, dst, flow_hash(gpu, dst, 0), r);
      ++routes;
      link_hops += static_cast<long>(r.links.size());
    }
  }
  const double route_s = seconds_since(t0), route_cpu_s = cpu_seconds() - cpu0;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);

  BenchResult out;
  out.mode = "fabric";
  out.config = {{"cluster", spec.name}, {"cluster_file", cluster_path}, {"cluster_overrides", sets}};
  out.rows.push_back({{"cluster", spec.name}, {"fabric", spec.fabric.type}, {"routing", to_string(spec.fabric.routing)},
                      {"gpus", c.gpu_count()}, {"switches", counts.switch_count()}, {"links", counts.links},
                      {"build_s", build_s}, {"build_cpu_s", build_cpu_s}, {"routes", routes}, {"link_hops", link_hops},
                      {"route_s", route_s}, {"route_cpu_s", route_cpu_s}, {"peak_rss_bytes", usage.ru_maxrss * 1024L}});
  out.table = fmt::format("# clustersim bench --fabric-only: {} ({}, {} routing), {} GPUs, {} switches, {} links\n", spec.name,
                          spec.fabric.type, to_string(spec.fabric.routing), c.gpu_count(), counts.switch_count(), counts.links);
  out.table += fmt::format("# {:>9} {:>9} {:>10} {:>12} {:>9} {:>9} {:>10}\n", "build(s)", "cpu(s)", "routes", "link-hops",
                           "route(s)", "cpu(s)", "peak(MiB)");
  out.table += fmt::format("  {:>9.3f} {:>9.3f} {:>10} {:>12} {:>9.3f} {:>9.3f} {:>10.1f}\n", build_s, build_cpu_s, routes,
                           link_hops, route_s, route_cpu_s, static_cast<double>(usage.ru_maxrss) / 1024.0);
  return out;
}

}  // namespace clustersim::cli
