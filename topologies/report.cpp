#include "topologies/report.hpp"

#include <boost/graph/push_relabel_max_flow.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>

namespace clustersim {

int TopologyReport::switches(int tier) const {
  auto it = switches_per_tier.find(tier);
  return it == switches_per_tier.end() ? 0 : it->second;
}

int TopologyReport::switch_count() const {
  int n = 0;
  for (const auto& [tier, count] : switches_per_tier) n += count;
  return n;
}

TopologyReport count_topology(const Cluster& c) {
  TopologyReport r;
  r.gpus = c.gpu_count();
  r.nodes = c.nodes();
  r.nics = static_cast<int>(c.nic_vertex.size());
  for (auto [v, end] = boost::vertices(c.graph); v != end; ++v)
    r.nvswitches += c.graph[*v].kind == VertexKind::nvswitch;
  for (const Switch& s : c.switches) ++r.switches_per_tier[s.tier];
  r.links = static_cast<int>(c.links.size());
  for (const Link& l : c.links) ++r.links_per_type[l.type];
  return r;
}

namespace {

// Integer capacities: push-relabel on doubles can stall on rounding residue. Bytes/s fit easily:
// 16K GPUs' worth of 400G links sum to about 1e16.
using Capacity = std::int64_t;
using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
struct Arc {
  Capacity capacity = 0;
  Capacity residual = 0;
  FlowTraits::edge_descriptor reverse;
};
using FlowGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, Arc>;

/// u -> v with `capacity`, paired with the zero-capacity reverse arc that max flow requires.
void add_arc(FlowGraph& g, std::size_t u, std::size_t v, Capacity capacity) {
  auto there = boost::add_edge(u, v, g).first;
  auto back = boost::add_edge(v, u, g).first;
  g[there].capacity = capacity;
  g[there].reverse = back;
  g[back].reverse = there;
}

}  // namespace

BytesPerSecond bisection_bandwidth_Bps(const Cluster& c) {
  const std::size_t n = boost::num_vertices(c.graph);
  const std::size_t source = n, sink = n + 1;
  FlowGraph g(n + 2);
  std::vector<Capacity> incident(n, 0);
  for (const Link& l : c.links) {
    // Full duplex: each direction carries line rate on its own.
    const Capacity rate = std::llround(l.bandwidth_Bps);
    add_arc(g, l.a, l.b, rate);
    add_arc(g, l.b, l.a, rate);
    incident[l.a] += rate;
    incident[l.b] += rate;
  }
  const int half = c.nodes() / 2;
  for (int gpu = 0; gpu < c.gpu_count(); ++gpu) {
    const std::size_t v = c.gpu_vertex[gpu];
    const int node = c.node_of_gpu(gpu);
    // A GPU can pass on no more than its links carry, so that bound never limits the flow; a larger
    // "infinite" capacity would overflow the solver's 64-bit excess sums on big fabrics.
    // Every node is on a side, so a path that relays through a node's NVLink could as well start or
    // stop at that node's GPU: relaying never adds flow, and hosts do not route between switches.
    if (node < half) add_arc(g, source, v, incident[v] + 1);
    else add_arc(g, v, sink, incident[v] + 1);
  }
  const Capacity flow = boost::push_relabel_max_flow(g, source, sink, get(&Arc::capacity, g), get(&Arc::residual, g),
                                                     get(&Arc::reverse, g), get(boost::vertex_index, g));
  return static_cast<BytesPerSecond>(flow);
}

TopologyReport report_topology(const Cluster& c) {
  TopologyReport r = count_topology(c);
  r.bisection_half_nodes = c.nodes() / 2;
  r.bisection_Bps = bisection_bandwidth_Bps(c);
  const int half_gpus = r.bisection_half_nodes * c.gpus_per_node();
  r.bisection_per_gpu_Bps = half_gpus > 0 ? r.bisection_Bps / half_gpus : 0;
  return r;
}

}  // namespace clustersim
