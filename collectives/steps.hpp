#pragma once
// Step-by-step algorithms (PAT, recursive doubling, halving-doubling): in each step every rank
// sends one message to one peer, and a rank starts its next step once it has sent and received
// in this one. Unlike a ring's channel, such a step is not pipelined across hops: each message is
// its own flow per channel, and the steps follow one another.
#include <vector>

#include "collectives/collective.hpp"

namespace clustersim {

struct StepSend {
  int src_rank = 0;  // indices into the request's ranks
  int dst_rank = 0;
  double data_bytes = 0;  // over all channels
};
using Step = std::vector<StepSend>;

struct StepLatency {
  Seconds first_step_s = 0;      // paid once, by the first step (a collective's base latency)
  Seconds per_step_s = 0;        // paid by every step
  bool protocol_hop = true;      // also the protocol's NVLink or network hop latency per step
};

/// The steps as flows: a send is `channels` flows of data_bytes / channels, each paying its route's
/// latency plus `latency`. Per pair, step k+1's sends from rank i wait on rank i's sends and
/// receives of step k on the same channel. Per link (when every send of a step has one size, as
/// PAT's do) a step moves in lockstep: one flow per channel over every send's route, a link that k
/// sends cross listed k times, as a ring's channel lists its hops, paying the largest of its sends'
/// latencies; the next step starts once it has ended everywhere. Alone, the step then ends when its
/// most loaded link drains, as summing its sends per link would give. What that gives up is the
/// ranks' slack: a rank whose sends met no collision starts its next step early per pair, and waits
/// for the slowest send in lockstep. On PAT all-gather and reduce-scatter on the H100 SuperPOD that
/// reads 0.1-1.9% slower on 64 and 128 nodes at 1 MiB and 1 GiB (test_step_flows), 1.7% on 512 and
/// 2.0% on 2,048 at 1 GiB; on halving-doubling 12% at 512 GPUs, so only PAT moves in lockstep. Why
/// at all: PAT on 2,048 nodes is 360K coupled flows per send (45-48 s of one core), 16 a step in
/// lockstep. Why not a flow per loaded link, as an all-to-all sums its sends: beside an iteration's
/// pipeline transfers every such flow is re-rated whenever one meets it on a NIC.
FlowGraph lower_steps(const Router& router, const CollectiveRequest& request, const std::vector<Step>& steps,
                      const StepLatency& latency, AllToAllFlows flows = AllToAllFlows::per_pair);

/// ceil(log2 n) for n >= 1.
int ceil_log2(int n);

}  // namespace clustersim
