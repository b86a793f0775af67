#include "collectives/pipeline.hpp"

#include <cmath>
#include <map>
#include <numeric>

namespace clustersim {

std::vector<std::vector<int>> ranks_by_node(const Cluster& cluster, const std::vector<int>& ranks) {
  std::vector<std::vector<int>> groups;
  std::map<int, std::size_t> index;
  for (int gpu : ranks) {
    auto [it, fresh] = index.emplace(cluster.node_of_gpu(gpu), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(gpu);
  }
  return groups;
}

namespace {
/// The channel's stride through a full-mesh node: the c-th number coprime with the node's size, so
/// channels walk different direct links (1, 3, 5, 7 on 8 GPUs), as RCCL's rings do. NVSwitch: 1.
long ring_stride(const Cluster& cluster, long size, int channel) {
  if (cluster.spec.node.scale_up != ScaleUp::full_mesh || size < 3) return 1;
  std::vector<long> strides;
  for (long s = 1; s < size; ++s)
    if (std::gcd(s, size) == 1) strides.push_back(s);
  return strides[static_cast<std::size_t>(channel) % strides.size()];
}
}  // namespace

std::vector<int> ring_order(const Cluster& cluster, const std::vector<int>& ranks, int channel) {
  std::vector<int> order;
  const auto groups = ranks_by_node(cluster, ranks);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const auto& g = groups[k];
    const long size = static_cast<long>(g.size());
    const long stride = ring_stride(cluster, size, channel);
    // Node k is entered `stride` GPUs before node k-1 was, i.e. on the GPU node k-1 left from.
    const long entry = (((channel - static_cast<long>(k) * stride) % size) + size) % size;
    for (long i = 0; i < size; ++i) order.push_back(g[(entry + i * stride) % size]);
  }
  return order;
}

Bytes wire_bytes(double data_bytes, const Protocol& protocol) {
  return static_cast<Bytes>(std::llround(data_bytes / protocol.bandwidth_fraction));
}

Seconds Pipeline::hop_latency_sum() const {
  Seconds sum = 0;
  for (Seconds s : hop_latency_s) sum += s;
  return sum;
}

void Pipeline::add_to(FlowGraph& graph, Seconds latency_s) {
  for (Flow& f : segments) {
    f.latency_s = latency_s;
    graph.add(std::move(f));
  }
  segments.clear();
}

FlowId add_barrier(FlowGraph& graph, int gpu, FlowId first) {
  Flow barrier = timer_flow(gpu, 0);
  for (FlowId id = first; id < static_cast<FlowId>(graph.flows.size()); ++id) barrier.after.push_back(id);
  return graph.add(std::move(barrier));
}

FlowId append_phase(FlowGraph& graph, FlowGraph part, FlowId after) {
  const FlowId offset = static_cast<FlowId>(graph.flows.size());
  for (Flow& f : part.flows) {
    for (FlowId& id : f.after) id += offset;
    if (f.after.empty() && after >= 0) f.after.push_back(after);
    graph.add(std::move(f));
  }
  return offset;
}

// Links are built GPU first (cluster.cpp), so forward is GPU -> NVSwitch.
LinkDir gpu_to_switch(const Cluster& cluster, int gpu) { return forward(cluster.gpu_switch_link[static_cast<std::size_t>(gpu)]); }
LinkDir switch_to_gpu(const Cluster& cluster, int gpu) { return backward(cluster.gpu_switch_link[static_cast<std::size_t>(gpu)]); }

Pipeline route_pipeline(const Router& router, const std::vector<Hop>& hops, int channel, double data_bytes_per_hop,
                        const Protocol& protocol) {
  const Cluster& c = router.cluster();
  Pipeline p;
  for (std::size_t i = 0; i < hops.size(); ++i) {
    const Hop& h = hops[i];
    if (i % kMaxHopsPerFlow == 0) {
      Flow segment;
      segment.src_gpu = h.src_gpu;
      segment.dst_gpu = h.dst_gpu;
      segment.size_bytes = wire_bytes(data_bytes_per_hop, protocol);
      p.segments.push_back(std::move(segment));
    }
    Route r;  // the segment's links so far, and this hop's latency alone
    r.links = std::move(p.segments.back().links);
    router.append_route(h.src_gpu, h.dst_gpu, flow_hash(h.src_gpu, h.dst_gpu, channel), r);
    p.segments.back().links = std::move(r.links);
    const bool network = c.node_of_gpu(h.src_gpu) != c.node_of_gpu(h.dst_gpu);
    p.hop_latency_s.push_back(r.latency_s + (network ? protocol.hop_latency_network_s : protocol.hop_latency_nvlink_s));
  }
  return p;
}

}  // namespace clustersim
