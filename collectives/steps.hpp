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
/// latency plus `latency`. Step k+1's sends from rank i wait on rank i's sends and receives of step
/// k on the same channel.
FlowGraph lower_steps(const Router& router, const CollectiveRequest& request, const std::vector<Step>& steps,
                      const StepLatency& latency);

/// ceil(log2 n) for n >= 1.
int ceil_log2(int n);

}  // namespace clustersim
