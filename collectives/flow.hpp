#pragma once
// What collectives lower to and the engine replays: point-to-point flows over routed links, with
// dependencies. A flow may be a whole pipeline (a ring's channel): its route then lists the links
// of every hop, and a link listed k times carries the flow's bytes k times.
#include <vector>

#include "topologies/cluster.hpp"
#include "topologies/units.hpp"

namespace clustersim {

using FlowId = int;

struct Flow {
  int src_gpu = 0;  // the SimGrid hosts the flow runs between
  int dst_gpu = 0;
  std::vector<LinkDir> links;
  Bytes size_bytes = 0;
  Seconds latency_s = 0;        // paid once before the bytes flow
  std::vector<FlowId> after;    // flows that must finish before this one starts
  /// Identical flows this one stands for (same route, bytes each, latency and predecessors). Under
  /// max-min they always share alike, so together they move as one flow of `copies` times the
  /// bytes at `copies` times the weight, and end together: the fluid solver runs them so, and
  /// SimGrid gets them expanded.
  int copies = 1;
  /// The most bytes/s one copy may move (0: no bound beyond its links): what a channel's kernel
  /// can process however fast its links are (NCCL's per-channel bandwidth ceilings, tuner_nccl.hpp).
  /// Each solver gives such a flow a private link of this capacity (SimGrid's from a pool made
  /// with its platform: it cannot bound a host-to-host comm's rate).
  double max_rate_Bps = 0;
};

/// A step that only takes time on one GPU: a flow with no links and no bytes, lasting its latency.
inline Flow timer_flow(int gpu, Seconds duration_s) {
  Flow f;
  f.src_gpu = gpu;
  f.dst_gpu = gpu;
  f.latency_s = duration_s;
  return f;
}

struct FlowGraph {
  std::vector<Flow> flows;
  FlowId add(Flow f) {
    flows.push_back(std::move(f));
    return static_cast<FlowId>(flows.size() - 1);
  }
};

}  // namespace clustersim
