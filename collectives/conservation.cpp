#include "collectives/conservation.hpp"

#include <algorithm>

#include <boost/graph/adjacency_list.hpp>

#include "topologies/invariant.hpp"

namespace clustersim {

VertexBytes vertex_bytes(const Cluster& cluster, const FlowGraph& graph) {
  VertexBytes v;
  v.in.assign(boost::num_vertices(cluster.graph), 0);
  v.out.assign(v.in.size(), 0);
  for (const Flow& f : graph.flows)
    for (LinkDir d : f.links) {
      const Link& l = cluster.links[static_cast<std::size_t>(link_of(d))];
      const bool fwd = d == forward(link_of(d));
      v.out[static_cast<std::size_t>(fwd ? l.a : l.b)] += f.size_bytes;
      v.in[static_cast<std::size_t>(fwd ? l.b : l.a)] += f.size_bytes;
    }
  return v;
}

void check_bytes_conserved(const Cluster& cluster, const FlowGraph& graph, const std::string& lowering,
                           bool each_node_balanced, bool nvswitches_combine) {
  // Only the vertices the flows touch are visited: a lowering on a 100K-GPU cluster crosses a few
  // thousand of its vertices, and clearing arrays over all of them at every lowering would cost
  // more than the lowering. The sums live in arrays over the cluster kept between calls, and only
  // the touched entries are read and cleared.
  static thread_local std::vector<Bytes> in, out;
  static thread_local std::vector<std::size_t> touched;
  const std::size_t vertices = boost::num_vertices(cluster.graph);
  if (in.size() < vertices) {
    in.assign(vertices, 0);
    out.assign(vertices, 0);
  }
  touched.clear();
  auto add = [&](std::size_t v, Bytes into, Bytes from) {
    if (in[v] == 0 && out[v] == 0) touched.push_back(v);
    in[v] += into;
    out[v] += from;
  };
  for (const Flow& f : graph.flows) {
    if (f.size_bytes == 0) continue;
    for (LinkDir d : f.links) {
      const Link& l = cluster.links[static_cast<std::size_t>(link_of(d))];
      const bool fwd = d == forward(link_of(d));
      add(static_cast<std::size_t>(fwd ? l.a : l.b), 0, f.size_bytes);
      add(static_cast<std::size_t>(fwd ? l.b : l.a), f.size_bytes, 0);
    }
  }
  std::sort(touched.begin(), touched.end());  // the first broken vertex is the lowest-numbered
  struct Sums {
    Bytes in = 0, out = 0;
  };
  std::vector<std::pair<int, Sums>> nodes;  // (node, its GPUs' sums) of each GPU touched
  Sums gpus;
  std::string broken;
  for (std::size_t v : touched) {
    const Sums here{in[v], out[v]};
    in[v] = out[v] = 0;
    const VertexInfo& info = cluster.graph[v];
    if (nvswitches_combine && info.kind == VertexKind::nvswitch) continue;
    if (info.kind != VertexKind::gpu) {
      if (here.in != here.out && broken.empty())
        broken = std::string(to_string(info.kind)) + " " + info.name + ": " + std::to_string(here.in) + " B in, " +
                 std::to_string(here.out) + " B out";
      continue;
    }
    gpus.in += here.in;
    gpus.out += here.out;
    nodes.push_back({info.node, here});
  }
  auto fail = [&](const std::string& detail) { invariant_broken("bytes sent equal bytes received", lowering + ": " + detail); };
  auto sums = [](const std::string& where, const Sums& s) {
    return where + ": " + std::to_string(s.in) + " B in, " + std::to_string(s.out) + " B out";
  };
  if (!broken.empty()) fail(broken);
  if (nvswitches_combine) return;  // a switch that reduces sends less than its GPUs sent it
  if (gpus.in != gpus.out) fail(sums("the GPUs together", gpus));
  if (!each_node_balanced) return;
  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (std::size_t k = 0; k < nodes.size();) {
    const int node = nodes[k].first;
    Sums s;
    for (; k < nodes.size() && nodes[k].first == node; ++k) {
      s.in += nodes[k].second.in;
      s.out += nodes[k].second.out;
    }
    if (s.in != s.out) fail(sums("the GPUs of node " + std::to_string(node), s));
  }
}

}  // namespace clustersim
