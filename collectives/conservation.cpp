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
                           bool each_node_balanced) {
  // Only the vertices the flows touch: a lowering on a 100K-GPU cluster crosses a few thousand of
  // its vertices, and sizing arrays over all of them at every lowering would cost more than the
  // lowering. Each crossing is a (vertex, in, out) entry; sorted, equal vertices sum.
  struct Crossing {
    std::size_t vertex;
    Bytes in, out;
  };
  std::vector<Crossing> crossings;
  for (const Flow& f : graph.flows)
    for (LinkDir d : f.links) {
      const Link& l = cluster.links[static_cast<std::size_t>(link_of(d))];
      const bool fwd = d == forward(link_of(d));
      crossings.push_back({static_cast<std::size_t>(fwd ? l.a : l.b), 0, f.size_bytes});
      crossings.push_back({static_cast<std::size_t>(fwd ? l.b : l.a), f.size_bytes, 0});
    }
  std::sort(crossings.begin(), crossings.end(), [](const Crossing& x, const Crossing& y) { return x.vertex < y.vertex; });
  auto broken = [&](const std::string& where, Bytes in, Bytes out) {
    invariant_broken("bytes sent equal bytes received",
                     lowering + ": " + where + ": " + std::to_string(in) + " B in, " + std::to_string(out) +
                         " B out");
  };
  Bytes gpus_in = 0, gpus_out = 0;
  std::vector<std::pair<int, std::pair<Bytes, Bytes>>> nodes;  // (node, (in, out)) of each GPU touched
  for (std::size_t k = 0; k < crossings.size();) {
    const std::size_t vertex = crossings[k].vertex;
    Bytes in = 0, out = 0;
    for (; k < crossings.size() && crossings[k].vertex == vertex; ++k) {
      in += crossings[k].in;
      out += crossings[k].out;
    }
    const VertexInfo& info = cluster.graph[vertex];
    if (info.kind != VertexKind::gpu) {
      if (in != out) broken(std::string(to_string(info.kind)) + " " + info.name, in, out);
      continue;
    }
    gpus_in += in;
    gpus_out += out;
    nodes.push_back({info.node, {in, out}});
  }
  if (gpus_in != gpus_out) broken("the GPUs together", gpus_in, gpus_out);
  if (!each_node_balanced) return;
  std::sort(nodes.begin(), nodes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (std::size_t k = 0; k < nodes.size();) {
    const int node = nodes[k].first;
    Bytes in = 0, out = 0;
    for (; k < nodes.size() && nodes[k].first == node; ++k) {
      in += nodes[k].second.first;
      out += nodes[k].second.second;
    }
    if (in != out) broken("the GPUs of node " + std::to_string(node), in, out);
  }
}

}  // namespace clustersim
