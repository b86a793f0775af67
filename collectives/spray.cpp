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

/// The paths of a flow's ways, one list of links each; empty where the flow does not split.
std::vector<std::vector<LinkDir>> way_links(const Router& router, const std::vector<LinkDir>& links) {
  const FabricSpec& fabric = router.cluster().spec.fabric;
  const std::vector<Segment> segments = network_segments(router, links);
  const bool spray = fabric.routing == Routing::spray;
  int choice = 1;  // equal-cost next hops at the first switch of the widest segment
  for (const Segment& s : segments) choice = std::max(choice, router.first_hop_ways(s.src_port, s.dst_port));
  // Spraying a flow with one path changes nothing but the solver's work. Every connection across
  // the network has its queue pairs, one path or many: each is a share of its NIC, as the NIC
  // arbitrates between QPs, so a connection of one path still counts as many as the others.
  if (spray ? choice == 1 : segments.empty()) return {};
  const int ways = std::min(spray ? choice : fabric.qps_per_connection, kMaxSprayWays);
  std::vector<std::vector<LinkDir>> out(static_cast<std::size_t>(ways));
  for (int way = 0; way < ways; ++way) {
    std::vector<LinkDir>& sub = out[static_cast<std::size_t>(way)];
    std::size_t at = 0;
    Route path;
    for (const Segment& s : segments) {
      sub.insert(sub.end(), links.begin() + static_cast<std::ptrdiff_t>(at), links.begin() + static_cast<std::ptrdiff_t>(s.first));
      path.links.clear();
      if (spray) {
        router.append_port_path(s.src_port, s.dst_port, flow_hash(s.src_port, s.dst_port, 0), way, path);
      } else {
        // Queue pair `way` of this connection: its hash follows from the path the connection itself
        // was hashed onto (so each channel's connection has its own QPs) and from the QP's number.
        std::uint64_t seed = flow_hash(s.src_port, s.dst_port, way);
        for (std::size_t i = s.first; i <= s.last; ++i) seed = flow_hash(static_cast<int>(seed >> 33), links[i], way);
        router.append_port_path(s.src_port, s.dst_port, seed, -1, path);
      }
      sub.insert(sub.end(), path.links.begin(), path.links.end());
      at = s.last + 1;
    }
    sub.insert(sub.end(), links.begin() + static_cast<std::ptrdiff_t>(at), links.end());
  }
  return out;
}

}  // namespace

bool splits_flows(const FabricSpec& fabric) {
  return fabric.routing == Routing::spray || (fabric.routing == Routing::ecmp && fabric.qps_per_connection > 1);
}

int spread_links(const Router& router, const std::vector<LinkDir>& links, std::vector<LinkDir>& all) {
  if (!splits_flows(router.cluster().spec.fabric)) return 1;
  const std::vector<std::vector<LinkDir>> paths = way_links(router, links);
  if (paths.empty()) return 1;
  all.clear();
  for (const auto& p : paths) all.insert(all.end(), p.begin(), p.end());
  return static_cast<int>(paths.size());
}

FlowGraph split_flows(const Router& router, const FlowGraph& graph) {
  if (!splits_flows(router.cluster().spec.fabric)) return graph;
  FlowGraph out = graph;
  std::vector<LinkDir> all;
  for (Flow& f : out.flows) {
    if (f.size_bytes == 0) continue;
    const int ways = spread_links(router, f.links, all);
    if (ways == 1) continue;
    f.links = all;
    f.size_bytes = way_bytes(f.size_bytes, ways);
    f.max_rate_Bps /= ways;  // the flow's bound is on all its ways together, its rate one way's
  }
  return out;
}

std::vector<LinkDir> split_links(const Router& router, std::vector<LinkDir> links) {
  std::vector<LinkDir> all;
  return spread_links(router, links, all) == 1 ? links : all;
}

}  // namespace clustersim
