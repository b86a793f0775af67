#include "collectives/link_loads.hpp"

#include <algorithm>
#include <cassert>

namespace clustersim {

LinkLoads::LinkLoads(const Cluster& cluster) : loads_(2 * cluster.links.size()) {}

void LinkLoads::add(const Flow& transfer) {
  assert(transfer.after.empty() && "link loads sum transfers that start together");
  ++transfers_;
  for (LinkDir d : transfer.links) {
    Load& l = loads_[static_cast<std::size_t>(d)];
    if (l.src_gpu < 0) {
      l.src_gpu = transfer.src_gpu;
      l.dst_gpu = transfer.dst_gpu;
    }
    l.bytes += transfer.size_bytes;
    l.latency_s = std::max(l.latency_s, transfer.latency_s);
  }
}

FlowGraph LinkLoads::flows() const {
  FlowGraph graph;
  for (std::size_t d = 0; d < loads_.size(); ++d) {
    const Load& l = loads_[d];
    if (l.src_gpu < 0) continue;
    Flow f;
    f.src_gpu = l.src_gpu;
    f.dst_gpu = l.dst_gpu;
    f.links = {static_cast<LinkDir>(d)};
    f.size_bytes = l.bytes;
    f.latency_s = l.latency_s;
    graph.add(std::move(f));
  }
  return graph;
}

}  // namespace clustersim
