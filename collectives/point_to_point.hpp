#pragma once
// One routed transfer between two GPUs, and the all-to-all with a size per (sender, receiver) that
// Mixture-of-Experts layers run: their dispatch and combine move what the router chose, not equal
// shares. Both leave a node through the sender's own NIC ("direct") or, with PXN, over NVLink to the
// GPU on the destination's rail first.
#include <cstdint>
#include <vector>

#include "collectives/collective.hpp"

namespace clustersim {

/// Whether the fabric has rails for PXN to keep a transfer on (rail_optimized, rail_only): NCCL's
/// send/recv then leaves by the sender node's NIC on the receiver's rail (src/graph/paths.cc,
/// ncclTopoGetNetDev: P2P_PXN_LEVEL 2, its default, whenever that NIC's GPU is on the sender's NVLink).
bool pxn_applies(const Cluster& cluster);

/// The NIC a transfer from src to dst (on another node) leaves by under PXN: src's node's NIC on
/// dst's rail, reached over the scale-up domain through the GPU next to it.
int pxn_egress_nic(const Cluster& cluster, int src_gpu, int dst_gpu);

/// A flow of `data_bytes` from src to dst, paying the protocol's base and per-hop latency.
Flow point_to_point_flow(const Router& router, int src_gpu, int dst_gpu, double data_bytes, const Protocol& protocol,
                         bool pxn, std::uint64_t hash);

/// bytes[i][j] from gpus[i] to gpus[j]; the diagonal stays on the GPU. One transfer per nonzero pair.
FlowGraph lower_all_to_all_v(const Router& router, const std::vector<int>& gpus,
                             const std::vector<std::vector<double>>& bytes, const Protocol& protocol, bool pxn,
                             AllToAllFlows flows = AllToAllFlows::per_link);

/// nccl-tests' all-to-all: every rank sends `pair_bytes` to every other, without an n x n matrix.
FlowGraph lower_uniform_all_to_all(const Router& router, const std::vector<int>& gpus, double pair_bytes,
                                   const Protocol& protocol, bool pxn, AllToAllFlows flows = AllToAllFlows::per_link);

/// DeepEP's node-limited dispatch (and, reversed, combine): a token bound for several GPUs of one
/// remote node crosses the network once, to the GPU on the sender's rail in that node, which forwards
/// it over NVLink. network_bytes[i][n]: from gpus[i] to node n (ranks n*per_node .. n*per_node +
/// per_node - 1); nvlink_bytes[i][j]: over NVLink from gpus[i] to gpus[j] of the same node, its own
/// tokens and those it forwards. Forwarding is chunked in DeepEP, so the two legs run at once (a
/// pipeline), each flow paying its own latency.
FlowGraph lower_node_limited_all_to_all(const Router& router, const std::vector<int>& gpus, int per_node,
                                        const std::vector<std::vector<double>>& network_bytes,
                                        const std::vector<std::vector<double>>& nvlink_bytes, const Protocol& protocol,
                                        AllToAllFlows flows = AllToAllFlows::per_link);

/// What a kernel adds to the two legs (collectives/algo_deepep.hpp sets them for DeepEP):
/// nvlink_wire_factor[i] >= 1 scales the wire bytes of rank i's NVLink sends (its SMs drive NVLink
/// below line rate: 1 / their share), and each leg's transfers pay extra latency (a chunk pipeline's
/// fill: the other leg's first or last chunk).
struct TwoLegCosts {
  std::vector<double> nvlink_wire_factor;  // per rank; empty: 1 for all
  Seconds network_extra_s = 0;
  Seconds nvlink_extra_s = 0;
};
FlowGraph lower_node_limited_all_to_all(const Router& router, const std::vector<int>& gpus, int per_node,
                                        const std::vector<std::vector<double>>& network_bytes,
                                        const std::vector<std::vector<double>>& nvlink_bytes, const Protocol& protocol,
                                        const TwoLegCosts& costs, AllToAllFlows flows = AllToAllFlows::per_link);

}  // namespace clustersim
