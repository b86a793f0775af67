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
};

struct FlowGraph {
  std::vector<Flow> flows;
  FlowId add(Flow f) {
    flows.push_back(std::move(f));
    return static_cast<FlowId>(flows.size() - 1);
  }
};

}  // namespace clustersim
