#pragma once
// Flows that the fabric's routing splits over several paths, as the engine replays them:
// - packet spraying (fabric.routing: spray): one way per equal-cost path, way k taking path k at
//   every network segment of its route (Router::append_port_path), so max-min keeps every uplink of
//   a leaf equally loaded, which is what spraying buys over hashing one flow onto one uplink;
// - queue pairs (fabric.qps_per_connection > 1 under ecmp): one way per queue pair, each hashed
//   onto its own path as a switch hashes each QP's UDP source port, so a connection's bytes spread
//   over that many random paths, and still collide where two hashes meet.
// The ways of one flow carry equal bytes and move in lockstep: a NIC sprays packets round-robin
// whatever each path's load, and NCCL splits every chunk over its QPs (or deals chunks to them in
// turn) and reuses a buffer slot only when all of its parts have landed, so a connection runs at
// the pace of its slowest way, times the ways. The flow stays one flow: its route lists every
// way's links (a link that k ways cross, k times) and its size is one way's share, so under
// weighted max-min each listing is one way at the flow's rate. That is 1/ways of the flows that
// independent flows would cost the solver, and the flow ids are unchanged.
#include "collectives/flow.hpp"
#include "topologies/router.hpp"

namespace clustersim {

/// At most this many ways a flow: the uplinks of a 128-port leaf at 1:1.
inline constexpr int kMaxSprayWays = 64;

/// Whether the fabric's routing splits flows that cross it (spray, or queue pairs under ecmp).
bool splits_flows(const FabricSpec& fabric);

/// `graph` with every flow split as the fabric's routing splits it, flow for flow (above); `graph`
/// itself where nothing splits.
FlowGraph split_flows(const Router& router, const FlowGraph& graph);

/// How many ways a flow over `links` goes (1 where it does not split), and in `all` every way's
/// links, way after way, where it does: split_flows for one route, with nothing copied.
int spread_links(const Router& router, const std::vector<LinkDir>& links, std::vector<LinkDir>& all);

/// One way's bytes of a flow of `size` bytes over `ways`: its even share, rounded up to whole bytes.
inline Bytes way_bytes(Bytes size, int ways) { return (size + ways - 1) / ways; }

/// Every link the ways of a flow over `links` cross, way after way (`links` where
/// the flow does not split): what another replica's traffic may meet, for folding and isolation.
std::vector<LinkDir> split_links(const Router& router, std::vector<LinkDir> links);

}  // namespace clustersim
