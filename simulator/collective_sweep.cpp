#include "simulator/collective_sweep.hpp"

#include <algorithm>
#include <cmath>

#include "collectives/algo_deepep.hpp"
#include "collectives/tuner_nccl.hpp"
#include "simulator/link_utilization.hpp"
#include "topologies/invariant.hpp"

namespace clustersim {

std::optional<DataType> find_data_type(const std::string& name) {
  static const std::vector<DataType> types{{"int8", 1}, {"uint8", 1}, {"half", 2}, {"bfloat16", 2},
                                           {"float", 4}, {"int32", 4}, {"double", 8}, {"int64", 8}};
  for (const DataType& t : types)
    if (t.name == name) return t;
  return std::nullopt;
}

std::vector<Bytes> geometric_sizes(Bytes min_bytes, Bytes max_bytes, double factor) {
  std::vector<Bytes> sizes;
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes) * (1 + 1e-12); s *= factor) {
    sizes.push_back(static_cast<Bytes>(std::llround(s)));
    if (factor <= 1.0) break;
  }
  return sizes;
}

Bytes aligned_size(Op op, Bytes size_bytes, Bytes type_bytes, int ranks) {
  Bytes unit = type_bytes;
  if (op == Op::all_gather || op == Op::reduce_scatter || op == Op::all_to_all) unit *= static_cast<Bytes>(ranks);
  return size_bytes / unit * unit;
}

int default_channels(const Cluster& cluster) { return static_cast<int>(std::clamp(2L * cluster.nics_per_node(), 2L, 64L)); }

Seconds time_collective(FabricEngine& engine, const Router& router, const Algorithm& algorithm,
                        const CollectiveRequest& request) {
  const FlowGraph graph = algorithm.lower(router, request);
  const std::vector<Seconds> finish = engine.run(graph);
  check_link_utilization(router.cluster(), graph, finish, algorithm.name() + " " + to_string(request.op));
  const Seconds time = makespan(finish);
  return non_negative_time(time, time, "a collective's time");
}

std::vector<const Algorithm*> candidate_algorithms(const Cluster& cluster, const SweepSpec& spec) {
  std::vector<const Algorithm*> out;
  CollectiveRequest probe;
  probe.op = spec.op;
  probe.ranks = spec.ranks;
  // "nccl" compares its pick with every algorithm "best" would try.
  const bool best = is_best_algorithm(spec.algorithm) || spec.algorithm == "nccl";
  for (const Algorithm* a : all_algorithms()) {
    if (!best && a->name() != spec.algorithm) continue;
    if (best && !a->chosen_by_auto()) continue;
    if (best && !spec.every_algorithm && !a->in_iteration_auto()) continue;
    if (!a->not_applicable(cluster, probe)) out.push_back(a);
  }
  return out;
}

SweepRow best_collective(FabricEngine& engine, const Router& router, const std::vector<const Algorithm*>& algorithms,
                         const std::vector<Protocol>& protocols, const CollectiveRequest& request,
                         bool nccl_channels) {
  SweepRow row;
  row.size_bytes = request.size_bytes;
  row.time_s = -1;
  Protocol own = ideal_protocol();
  own.name = "kernel";  // an algorithm that is not NCCL's runs its own kernel, once
  for (const Algorithm* a : algorithms)
    for (const Protocol& p : a->uses_nccl_protocols() ? protocols : std::vector<Protocol>{own}) {
      CollectiveRequest req = request;
      req.protocol = p;
      if (a->not_applicable(router.cluster(), req)) continue;  // NVLS and PAT run Simple only
      if (nccl_channels)
        req.channels = nccl_channels_for_size(*a, p, req.size_bytes, static_cast<int>(req.ranks.size()), req.channels);
      const Seconds t = time_collective(engine, router, *a, req);
      if (row.time_s < 0 || t < row.time_s) {
        row.time_s = t;
        row.algorithm = a->name();
        row.protocol = p.name;
        row.channels = req.channels;
      }
    }
  const int n = static_cast<int>(request.ranks.size());
  row.algbw_GBps = row.time_s > 0 ? static_cast<double>(row.size_bytes) / row.time_s / 1e9 : 0.0;
  row.busbw_GBps = row.algbw_GBps * bus_bandwidth_factor(request.op, n);
  return row;
}

Protocol row_protocol(const SweepRow& row) {
  if (const std::optional<Protocol> nccl = find_protocol(row.protocol)) return *nccl;
  Protocol kernel = ideal_protocol();
  kernel.name = row.protocol;
  return kernel;
}

SweepRow nccl_collective(FabricEngine& engine, const Router& router, const CollectiveRequest& request,
                         const std::optional<Protocol>& only, bool nccl_channels) {
  const std::optional<NcclChoice> choice = nccl_choose(router.cluster(), request, only, nccl_channels);
  if (!choice)
    throw InvariantViolation("NCCL's tuner found no algorithm for " + std::string(to_string(request.op)) +
                             " (the command line is checked against nccl_choose first)");
  CollectiveRequest req = request;
  req.protocol = choice->protocol;
  req.channels = choice->channels;
  SweepRow row;
  row.size_bytes = request.size_bytes;
  row.time_s = time_collective(engine, router, *choice->algorithm, req);
  row.algorithm = choice->algorithm->name();
  row.protocol = choice->protocol.name;
  row.channels = choice->channels;
  row.nccl_predicted_s = choice->predicted_s;
  const int n = static_cast<int>(request.ranks.size());
  row.algbw_GBps = row.time_s > 0 ? static_cast<double>(row.size_bytes) / row.time_s / 1e9 : 0.0;
  row.busbw_GBps = row.algbw_GBps * bus_bandwidth_factor(request.op, n);
  return row;
}

std::vector<SweepRow> run_sweep(FabricEngine& engine, const Router& router, const SweepSpec& spec) {
  const bool nccl = spec.algorithm == "nccl";
  const std::vector<const Algorithm*> algorithms =
      nccl && !spec.compare_with_best ? std::vector<const Algorithm*>{} : candidate_algorithms(router.cluster(), spec);
  const std::vector<Protocol> protocols = spec.protocol ? std::vector<Protocol>{*spec.protocol} : nccl_protocols();
  const int n = static_cast<int>(spec.ranks.size());
  std::vector<SweepRow> rows;
  for (Bytes requested : spec.sizes_bytes) {
    const Bytes size = aligned_size(spec.op, requested, spec.type.size_bytes, n);
    CollectiveRequest req{spec.op, spec.ranks, size, spec.channels, Protocol{}, spec.root};
    SweepRow row = nccl ? nccl_collective(engine, router, req, spec.protocol, spec.nccl_channels)
                        : best_collective(engine, router, algorithms, protocols, req, spec.nccl_channels);
    if (nccl && spec.compare_with_best) {
      const SweepRow best = best_collective(engine, router, algorithms, protocols, req, spec.nccl_channels);
      // The pick itself is among those tried, so the best is never slower; equal times keep the pick.
      if (best.time_s < row.time_s) row.best = SweepRow::Best{best.algorithm, best.protocol, best.channels, best.time_s};
      else row.best = SweepRow::Best{row.algorithm, row.protocol, row.channels, row.time_s};
    }
    row.count = size / spec.type.size_bytes;
    if (row.algorithm == "deepep") {
      // DeepEP's benchmark's own figures: its counted bytes over the kernel's time.
      const int per = std::min(router.cluster().gpus_per_node(), n);
      const DeepEpCountedBytes counted = deepep_counted_bytes(n, per, static_cast<double>(size), DeepEpRouting{});
      const double seconds = row.time_s > 0 ? row.time_s : 1;  // nothing sent in no time: 0 GB/s, as algbw
      if (n > per) row.deepep_rdma_GBps = counted.rdma_bytes / seconds / 1e9;
      row.deepep_nvl_GBps = counted.nvl_bytes / seconds / 1e9;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace clustersim
