#include "simulator/link_tiers.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace clustersim {

namespace {

/// A vertex as the tier name says it: fabric switches by their tier (1 leaf, 2 spine, 3 core).
std::pair<int, std::string> end_name(const VertexInfo& v) {
  switch (v.kind) {
    case VertexKind::gpu: return {0, "GPU"};
    case VertexKind::nvswitch: return {1, "NVSwitch"};
    case VertexKind::nic: return {2, "NIC"};
    case VertexKind::fabric_switch: {
      static const char* const names[] = {"switch", "leaf", "spine", "core"};
      return {2 + v.tier, v.tier >= 1 && v.tier <= 3 ? names[v.tier] : "switch"};
    }
  }
  return {9, "?"};
}

}  // namespace

std::string link_tier_name(const Cluster& cluster, LinkId link) {
  const Link& l = cluster.links[static_cast<std::size_t>(link)];
  auto a = end_name(cluster.graph[static_cast<std::size_t>(l.a)]);
  auto b = end_name(cluster.graph[static_cast<std::size_t>(l.b)]);
  if (b.first < a.first) std::swap(a, b);  // the lower end first: "NIC - leaf", never "leaf - NIC"
  return a.second + " - " + b.second;
}

std::vector<LinkTierLoad> link_tier_loads(const Cluster& cluster, const std::vector<double>& bytes_per_direction,
                                          Seconds iteration_s) {
  std::vector<LinkTierLoad> rows;
  std::vector<double> capacity_Bps;  // per row: both directions of all its links
  std::map<std::pair<std::string, std::string>, std::size_t> row_of;
  for (LinkId l = 0; l < static_cast<LinkId>(cluster.links.size()); ++l) {
    const std::string tier = link_tier_name(cluster, l);
    const std::string& type = cluster.links[static_cast<std::size_t>(l)].type;
    auto [at, added] = row_of.try_emplace({tier, type}, rows.size());
    if (added) {
      rows.push_back({tier, type});
      capacity_Bps.push_back(0);
    }
    LinkTierLoad& row = rows[at->second];
    const double bandwidth_Bps = cluster.effective_bandwidth_Bps(l);
    ++row.links;
    capacity_Bps[at->second] += 2 * bandwidth_Bps;
    if (bytes_per_direction.empty()) continue;
    for (LinkDir d : {forward(l), backward(l)}) {
      const double bytes = bytes_per_direction[static_cast<std::size_t>(d)];
      row.bytes += bytes;
      if (iteration_s > 0 && bandwidth_Bps > 0)
        row.busiest_utilization = std::max(row.busiest_utilization, bytes / (bandwidth_Bps * iteration_s));
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (iteration_s > 0 && capacity_Bps[i] > 0) rows[i].mean_utilization = rows[i].bytes / (capacity_Bps[i] * iteration_s);
  return rows;
}

}  // namespace clustersim
