#pragma once
// Packet spraying (fabric.routing: spray) as the engine can replay it: a flow that crosses the
// fabric becomes equal sub-flows, one per equal-cost path, each taking path k at every network
// segment of its route (Router::append_port_path), and a zero-length join flow in the original's
// place that waits on them all, so flow ids and the flows that wait on them stay as they were.
// Sub-flows of one flow share out its bytes evenly, as a NIC spraying packets round-robin does;
// max-min then keeps every uplink of a leaf equally loaded, which is what spraying buys over
// hashing one flow onto one uplink.
#include "collectives/flow.hpp"
#include "topologies/router.hpp"

namespace clustersim {

/// At most this many sub-flows a flow: the uplinks of a 128-port leaf at 1:1.
inline constexpr int kMaxSprayWays = 64;

/// `graph` with every flow that crosses a switch with several equal-cost next hops sprayed; the
/// first graph.flows.size() flows of the result finish when the originals would.
FlowGraph spray_flows(const Router& router, const FlowGraph& graph);

}  // namespace clustersim
