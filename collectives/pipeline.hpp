#pragma once
// Helpers shared by the algorithms: NCCL-like placement of rings and trees on nodes, and the
// lowering of one channel of a pipelined algorithm into a single flow.
//
// Why one flow per channel: NCCL pipelines a ring in chunks, so in steady state every hop of a
// channel's ring moves data at the rate of the ring's slowest hop, and a hop that could go faster
// waits for data. One SimGrid flow whose route lists every hop's links gets exactly that rate from
// max-min sharing (its bottleneck link's fair share), and loads every link it crosses at that rate.
// Chunks then appear as the pipeline's latency term (steps x hop latency), as in NCCL's cost model.
#include <cstddef>
#include <vector>

#include "collectives/collective.hpp"

namespace clustersim {

struct Hop {
  int src_gpu;
  int dst_gpu;
};

/// Ranks grouped by node, nodes in order of first appearance, GPUs of a node in local order.
std::vector<std::vector<int>> ranks_by_node(const Cluster& cluster, const std::vector<int>& ranks);

/// The ring of one channel. Channel c enters node k at its (c - k)-th GPU and leaves from the GPU
/// before it, which is on the rail the next node is entered on, so inter-node hops stay on one rail.
/// On full-mesh nodes channels step through the node with different strides, to use every link.
std::vector<int> ring_order(const Cluster& cluster, const std::vector<int>& ranks, int channel);

/// Bytes on the wire for `data_bytes` of payload under a protocol (LL sends flags with the data).
Bytes wire_bytes(double data_bytes, const Protocol& protocol);

/// Hops per flow at most. SimGrid's solver pays O(L^2) to attach a flow to its L links (each new link
/// is searched among the flow's others), so a ring of 16K ranks (~37K links) would take minutes.
/// Longer pipelines are cut into segments of this many hops, each its own flow with the channel's
/// bytes and latency; the channel ends with its slowest segment. Within a segment the coupling is exact.
inline constexpr std::size_t kMaxHopsPerFlow = 512;

/// A channel's hops routed into flows (one per segment of at most kMaxHopsPerFlow hops), with each
/// hop's latency: its links' latencies plus the protocol's per-hop latency (NVLink or network).
struct Pipeline {
  std::vector<Flow> segments;
  std::vector<Seconds> hop_latency_s;
  Seconds hop_latency_sum() const;
  /// Adds every segment to `graph`, each paying `latency_s` before its bytes flow.
  void add_to(FlowGraph& graph, Seconds latency_s);
};
/// A flow with no links, bytes or latency that ends once every flow from `first` on has: the one
/// dependency a next phase waits on, instead of one per flow of the phase before.
FlowId add_barrier(FlowGraph& graph, int gpu, FlowId first);

/// Appends `part`'s flows to `graph` (their dependencies shifted), those that wait on nothing
/// waiting on `after` instead, when it is >= 0. Returns the id of part's first flow in `graph`.
FlowId append_phase(FlowGraph& graph, FlowGraph part, FlowId after);

/// Where a GPU meets its node's NVSwitch: the two directions of its scale-up link.
LinkDir gpu_to_switch(const Cluster& cluster, int gpu);
LinkDir switch_to_gpu(const Cluster& cluster, int gpu);

Pipeline route_pipeline(const Router& router, const std::vector<Hop>& hops, int channel, double data_bytes_per_hop,
                        const Protocol& protocol);

}  // namespace clustersim
