#pragma once
// Flows that the fabric's routing splits over several paths, as the engine replays them:
// - packet spraying (fabric.routing: spray): one sub-flow per equal-cost path, each taking path k at
//   every network segment of its route (Router::append_port_path), so max-min keeps every uplink of
//   a leaf equally loaded, which is what spraying buys over hashing one flow onto one uplink;
// - queue pairs (fabric.qps_per_connection > 1 under ecmp): one sub-flow per queue pair, each hashed
//   onto its own path as a switch hashes each QP's UDP source port, so a connection's bytes spread
//   over that many random paths, and still collide where two hashes meet.
// Sub-flows of one flow share out its bytes evenly (a NIC spraying packets round-robin; NCCL
// splitting data on its QPs), and a zero-length join flow takes the original's place and waits on
// them all, so flow ids and the flows that wait on them stay as they were.
#include "collectives/flow.hpp"
#include "topologies/router.hpp"

namespace clustersim {

/// At most this many sub-flows a flow: the uplinks of a 128-port leaf at 1:1.
inline constexpr int kMaxSprayWays = 64;

/// Whether the fabric's routing splits flows that cross it (spray, or queue pairs under ecmp).
bool splits_flows(const FabricSpec& fabric);

/// `graph` with every flow split as the fabric's routing splits it; the first graph.flows.size()
/// flows of the result finish when the originals would. `graph` itself where nothing splits.
FlowGraph split_flows(const Router& router, const FlowGraph& graph);

/// Every link the sub-flows of a flow over `links` cross, sub-flow after sub-flow (`links` where
/// the flow does not split): what another replica's traffic may meet, for folding and isolation.
std::vector<LinkDir> split_links(const Router& router, std::vector<LinkDir> links);

}  // namespace clustersim
