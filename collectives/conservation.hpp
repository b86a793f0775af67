#pragma once
// Bytes sent equal bytes received: the invariant every lowering keeps. A flow's bytes cross each
// link of its route (a link listed k times, k times over), so at every vertex that only forwards
// (NVSwitch, NIC, fabric switch) what arrives must leave, and the GPUs together must receive what
// they send. A route with a hole or a stray link, or bytes counted on the wrong hop, breaks it.
#include <string>
#include <vector>

#include "collectives/flow.hpp"

namespace clustersim {

/// Bytes into and out of every vertex of the cluster's graph under a flow graph.
struct VertexBytes {
  std::vector<Bytes> in, out;  // [vertex]
};
VertexBytes vertex_bytes(const Cluster& cluster, const FlowGraph& graph);

/// Throws InvariantViolation, naming `lowering` and the first vertex that breaks it, unless every
/// forwarding vertex sends what it receives and the GPUs together receive what they send. With
/// `each_node_balanced` (collectives in which every rank sends as much as it receives: all but
/// broadcast), the GPUs of every node must too; per node, not per GPU, since a NIC's PCIe link is
/// the node's attachment that every GPU using the NIC shares.
/// With `nvswitches_combine` (NVLS: the NVSwitch reduces what GPUs send it, or multicasts one copy
/// to many), NVSwitches and GPUs are exempt, since a reduce-scatter's switch takes in n-1 times what
/// it sends out; NICs and fabric switches must still forward exactly what they receive.
void check_bytes_conserved(const Cluster& cluster, const FlowGraph& graph, const std::string& lowering,
                           bool each_node_balanced = false, bool nvswitches_combine = false);

}  // namespace clustersim
