#include "collectives/conservation.hpp"

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
  const VertexBytes v = vertex_bytes(cluster, graph);
  auto broken = [&](const std::string& where, Bytes in, Bytes out) {
    invariant_broken("bytes sent equal bytes received",
                     lowering + ": " + where + ": " + std::to_string(in) + " B in, " + std::to_string(out) +
                         " B out");
  };
  Bytes gpus_in = 0, gpus_out = 0;
  std::vector<Bytes> node_in(static_cast<std::size_t>(cluster.nodes()), 0), node_out(node_in.size(), 0);
  for (std::size_t i = 0; i < v.in.size(); ++i) {
    const VertexInfo& info = cluster.graph[i];
    if (nvswitches_combine && info.kind == VertexKind::nvswitch) continue;
    if (info.kind != VertexKind::gpu) {
      if (v.in[i] != v.out[i]) broken(std::string(to_string(info.kind)) + " " + info.name, v.in[i], v.out[i]);
      continue;
    }
    gpus_in += v.in[i];
    gpus_out += v.out[i];
    node_in[static_cast<std::size_t>(info.node)] += v.in[i];
    node_out[static_cast<std::size_t>(info.node)] += v.out[i];
  }
  if (nvswitches_combine) return;
  if (gpus_in != gpus_out) broken("the GPUs together", gpus_in, gpus_out);
  if (each_node_balanced)
    for (std::size_t n = 0; n < node_in.size(); ++n)
      if (node_in[n] != node_out[n]) broken("the GPUs of node " + std::to_string(n), node_in[n], node_out[n]);
}

}  // namespace clustersim
