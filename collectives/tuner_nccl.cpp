// NCCL's choice for one collective: its topology read off the cluster, then the (algorithm,
// protocol) of least predicted time (tuner_nccl_model.cpp), then its channel count for the size.
#include "collectives/tuner_nccl.hpp"

#include <algorithm>
#include <set>

#include "collectives/pipeline.hpp"
#include "topologies/units.hpp"

namespace clustersim {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// Usable rate of a link kind: line rate times the cluster's calibrated efficiency, in GB/s.
double usable_GBps(const Cluster& cluster, const LinkSpec& link) {
  return link.bandwidth_Bps * cluster.spec.efficiency(link.type) / kGiga;
}

}  // namespace

GpuGeneration gpu_generation(const std::string& name) {
  if (starts_with(name, "V100")) return GpuGeneration::volta;
  if (starts_with(name, "A100") || starts_with(name, "A800") || starts_with(name, "A10")) return GpuGeneration::ampere;
  if (starts_with(name, "B") || starts_with(name, "GB")) return GpuGeneration::blackwell;
  return GpuGeneration::hopper;  // H100, H200, H800, GH200, and names NCCL has no row for
}

const char* to_string(GpuGeneration g) {
  switch (g) {
    case GpuGeneration::volta: return "Volta";
    case GpuGeneration::ampere: return "Ampere";
    case GpuGeneration::hopper: return "Hopper";
    case GpuGeneration::blackwell: return "Blackwell";
  }
  return "?";
}

NcclTopology nccl_topology(const Cluster& cluster, const std::vector<int>& ranks, int channels) {
  NcclTopology t;
  const std::vector<std::vector<int>> by_node = ranks_by_node(cluster, ranks);
  t.ranks = static_cast<int>(ranks.size());
  t.nodes = static_cast<int>(by_node.size());
  t.channels = std::max(1, channels);
  t.generation = gpu_generation(cluster.spec.gpu);
  const NodeSpec& node = cluster.spec.node;
  t.nvlink = node.scale_up == ScaleUp::nvswitch;
  std::size_t local = 0;
  for (const auto& g : by_node) local = std::max(local, g.size());
  // A GPU's scale-up bandwidth: its NVSwitch port, or on a full mesh one link per peer it uses.
  const double link = usable_GBps(cluster, node.scale_up_link);
  t.intra_GBps = t.nvlink ? link : link * static_cast<double>(std::max<std::size_t>(1, local - 1));
  // The network side: the NICs next to the node's ranks (rails), each at most its PCIe link.
  if (node.nics > 0 && !by_node.empty()) {
    std::set<int> nics;
    for (int gpu : by_node.front()) nics.insert(cluster.nic_of_gpu(gpu));
    const double per_nic = std::min(usable_GBps(cluster, node.nic_link), usable_GBps(cluster, node.pcie_link));
    t.inter_GBps = per_nic * static_cast<double>(nics.size());
  }
  // NVLS (NVSwitch 3+, Hopper on): one head per local GPU, NCCL's NVLS graph; a lone GPU has no
  // switch to reduce in.
  const bool even = std::all_of(by_node.begin(), by_node.end(), [&](const auto& g) { return g.size() == local; });
  if (node.nvls && t.nvlink && t.generation >= GpuGeneration::hopper && even && local >= 2)
    t.nvls_channels = static_cast<int>(local);
  return t;
}

std::optional<NcclChoice> nccl_choose(const Cluster& cluster, const CollectiveRequest& request,
                                      const std::optional<Protocol>& only, bool size_channels) {
  const int n = static_cast<int>(request.ranks.size());
  const Protocol simple = *find_protocol("Simple");
  if (request.op == Op::all_to_all || request.op == Op::send_recv) {
    if (only && only->name != "Simple" && only->name != "ideal") return std::nullopt;
    CollectiveRequest probe = request;
    probe.protocol = only.value_or(simple);
    for (const char* name : {"pxn", "direct"}) {
      const Algorithm* a = find_algorithm(name);
      if (a && !a->not_applicable(cluster, probe)) return NcclChoice{a, probe.protocol, request.channels, std::nullopt};
    }
    return std::nullopt;
  }
  const NcclTopology topo = nccl_topology(cluster, request.ranks, request.channels);
  std::optional<NcclChoice> best;
  // NCCL's order (tree, ring, ..., NVLS, NVLS-tree, PAT); a tie keeps the first.
  for (const char* name : {"tree", "ring", "nvls", "nvls_tree", "pat"})
    for (const Protocol& p : nccl_protocols()) {
      if (only && only->name != p.name) continue;
      const std::optional<Seconds> t = nccl_predicted_time(topo, request.op, name, p.name, request.size_bytes);
      if (!t || (best && *t >= *best->predicted_s)) continue;
      const Algorithm* a = find_algorithm(name);
      CollectiveRequest probe = request;
      probe.protocol = p;
      if (!a || a->not_applicable(cluster, probe)) continue;
      const int channels =
          size_channels ? nccl_channels_for_size(*a, p, request.size_bytes, n, request.channels) : request.channels;
      best = NcclChoice{a, p, channels, t};
    }
  return best;
}

}  // namespace clustersim
