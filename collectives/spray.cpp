#include "collectives/spray.hpp"

#include <algorithm>

namespace clustersim {

namespace {

/// Where a route crosses the fabric: links [first, last] run from one NIC port to another.
struct Segment {
  std::size_t first = 0, last = 0;
  int src_port = -1, dst_port = -1;
};

int tail_of(const Cluster& c, LinkDir d) { return d == forward(link_of(d)) ? c.links[link_of(d)].a : c.links[link_of(d)].b; }
int head_of(const Cluster& c, LinkDir d) { return d == forward(link_of(d)) ? c.links[link_of(d)].b : c.links[link_of(d)].a; }

/// The NIC-to-NIC walks in a flow's links. A flow that sums unrelated links (collectives/link_loads.hpp)
/// can list a NIC's uplink without the rest of its walk: only a contiguous walk is a segment.
std::vector<Segment> network_segments(const Router& router, const std::vector<LinkDir>& links) {
  const Cluster& c = router.cluster();
  std::vector<Segment> out;
  bool open = false;
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (open && tail_of(c, links[i]) != head_of(c, links[i - 1])) {  // the walk broke off
      out.pop_back();
      open = false;
    }
    const int port = router.nic_port_of(links[i]);
    if (port < 0) continue;
    if (links[i] == forward(link_of(links[i]))) {  // NIC -> switch: a segment starts
      if (open) out.pop_back();
      out.push_back(Segment{i, i, port, -1});
      open = true;
    } else if (open) {  // switch -> NIC: it ends
      out.back().last = i;
      out.back().dst_port = port;
      open = false;
    }
  }
  if (open) out.pop_back();
  return out;
}

}  // namespace

FlowGraph spray_flows(const Router& router, const FlowGraph& graph) {
  FlowGraph out;
  out.flows = graph.flows;
  for (std::size_t id = 0; id < graph.flows.size(); ++id) {
    const Flow& f = graph.flows[id];
    if (f.size_bytes == 0) continue;
    const std::vector<Segment> segments = network_segments(router, f.links);
    int ways = 1;
    for (const Segment& s : segments) ways = std::max(ways, router.first_hop_ways(s.src_port, s.dst_port));
    ways = std::min(ways, kMaxSprayWays);
    if (ways == 1) continue;
    Flow join = timer_flow(f.src_gpu, 0);
    for (int way = 0; way < ways; ++way) {
      Flow sub = f;
      sub.size_bytes = f.size_bytes / static_cast<Bytes>(ways) + (static_cast<Bytes>(way) < f.size_bytes % static_cast<Bytes>(ways));
      sub.links.clear();
      std::size_t at = 0;
      Route path;
      for (const Segment& s : segments) {
        sub.links.insert(sub.links.end(), f.links.begin() + static_cast<std::ptrdiff_t>(at),
                         f.links.begin() + static_cast<std::ptrdiff_t>(s.first));
        path.links.clear();
        router.append_port_path(s.src_port, s.dst_port, flow_hash(s.src_port, s.dst_port, 0), way, path);
        sub.links.insert(sub.links.end(), path.links.begin(), path.links.end());
        at = s.last + 1;
      }
      sub.links.insert(sub.links.end(), f.links.begin() + static_cast<std::ptrdiff_t>(at), f.links.end());
      join.after.push_back(out.add(std::move(sub)));
    }
    out.flows[id] = std::move(join);
  }
  return out;
}

}  // namespace clustersim
