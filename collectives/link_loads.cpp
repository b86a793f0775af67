#include "collectives/link_loads.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "collectives/pipeline.hpp"

namespace clustersim {

LinkLoads::LinkLoads(const Cluster& cluster) : cluster_(cluster), loads_(2 * cluster.links.size()) {}

void LinkLoads::add(int src_gpu, int dst_gpu, const std::vector<LinkDir>& links, Bytes size_bytes, Seconds latency_s) {
  for (LinkDir d : links) {
    Load& l = loads_[static_cast<std::size_t>(d)];
    if (l.src_gpu < 0) {
      l.src_gpu = src_gpu;
      l.dst_gpu = dst_gpu;
    }
    l.bytes += size_bytes;
    l.latency_s = std::max(l.latency_s, latency_s);
  }
}

FlowGraph LinkLoads::flows() const {
  // Links with the same bytes, latency and bandwidth drain at the same instant; one flow listing
  // them all, alone on them, runs at that bandwidth and ends then too. Sharing flows matters:
  // SimGrid 3.32 drops each finished host-to-host comm from one list by scanning all of it, O(n^2)
  // for n concurrent flows, which was half of a 1024-GPU all-to-all's time with a flow per link.
  std::map<std::tuple<Bytes, Seconds, BytesPerSecond>, std::vector<LinkDir>> drain_together;
  for (std::size_t d = 0; d < loads_.size(); ++d) {
    const Load& l = loads_[d];
    if (l.src_gpu < 0) continue;
    const BytesPerSecond bandwidth = cluster_.effective_bandwidth_Bps(link_of(static_cast<LinkDir>(d)));
    drain_together[{l.bytes, l.latency_s, bandwidth}].push_back(static_cast<LinkDir>(d));
  }
  FlowGraph graph;
  for (const auto& [key, links] : drain_together)
    for (std::size_t first = 0; first < links.size(); first += kMaxHopsPerFlow) {
      const Load& l = loads_[static_cast<std::size_t>(links[first])];
      Flow f;
      f.src_gpu = l.src_gpu;
      f.dst_gpu = l.dst_gpu;
      f.links.assign(links.begin() + static_cast<std::ptrdiff_t>(first),
                     links.begin() + static_cast<std::ptrdiff_t>(std::min(links.size(), first + kMaxHopsPerFlow)));
      f.size_bytes = l.bytes;
      f.latency_s = l.latency_s;
      graph.add(std::move(f));
    }
  return graph;
}

}  // namespace clustersim
