#pragma once
// `clustersim serve`'s discrete-event loop, at iteration granularity: requests arrive (their
// stream, workloads/serving/request_stream.hpp), a router picks a replica, each replica's scheduler
// (workloads/serving/scheduler.hpp) forms one batch at a time and the batch takes its iteration's
// time (workloads/serving/iteration_cost.hpp); the events are arrivals, iteration ends and, with
// disaggregated serving, KV caches landing on the decode pool. No SimGrid: an iteration's time is
// a closed form, and replicas share nothing but the router's view.
//
// Choices where the serving engines differ or the input is silent:
//  - replicas are placed as workloads/serving/replica_placement.hpp says (on one model: replica r
//    from GPU r x tp x pp x dp_attention); the replicas of one GPU model share one iteration cost, timed on the
//    first one's GPUs, and each has its model's KV blocks; replicas do not contend on the fabric;
//  - round_robin cycles the pool; least_loaded picks the fewest requests waiting or running;
//    kv_aware the most free KV blocks (then the fewest requests); ties go to the lowest index;
//  - disaggregated: prefill replicas run prompts only, sample the first token and free their
//    blocks; the KV cache (prompt tokens x the fullest GPU's bytes per token, every GPU pair in
//    parallel) crosses the routed path between the two replicas' first GPUs at its bottleneck rate
//    (comm_cost.hpp); the decode replica is chosen when the transfer starts;
//  - swap preemption: an iteration first copies its swapped-out and swapped-in KV tokens between
//    HBM and host memory, each GPU its shard over its own PCIe link (the node's pcie link at its
//    efficiency), kv_bytes_per_token of the fullest GPU a token, before its forward;
//  - data-parallel attention: a replica's attention ranks are its lanes, each with its own
//    scheduler over its own GPUs' KV blocks, stepping together (a step starts when the last ended
//    and any rank has work; every rank plans its batch then); a new request goes to the rank with
//    the fewest, and a KV cache arriving from the prefill pool to the decode rank chosen when it
//    left, between the two ranks' GPUs;
//  - speculative decoding: each decode step first runs the proposer (a draft model's `tokens`
//    sequential decode steps on the same GPUs, or `tokens` MTP modules, each one target layer and
//    one output layer), then one target forward verifies tokens + 1 positions per request; token i
//    is accepted with acceptance_rate while tokens before it were (a seeded draw per step), and the
//    step emits the accepted tokens and one more from the target.
#include <vector>

#include "simulator/trace_sink.hpp"
#include "workloads/serving/replica_memory.hpp"
#include "workloads/serving/scheduler.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim {

struct ServeSample {
  Seconds time_s = 0;
  double kv_utilization = 0;  // used blocks over all blocks, every replica together
  long running = 0, waiting = 0;
};

struct ServeResult {
  std::vector<RequestState> requests;  // by id, as the stream gave them
  std::vector<ServeSample> series;
  ReplicaMemory memory;  // the first replica's
  /// Each GPU model's replica memory, in the order the replicas first use them (one entry on a
  /// cluster of one model).
  std::vector<std::pair<std::string, ReplicaMemory>> memory_by_gpu;
  long iterations = 0;
  double batch_requests_sum = 0, batch_tokens_sum = 0;
  long max_batch_requests = 0;
  long preemptions = 0;
  long swaps = 0;                           // preemptions by swap (the rest recompute)
  long swapped_tokens = 0;                  // KV tokens copied out and back in
  Seconds swap_s_sum = 0;                   // iteration time spent copying them over PCIe
  long prefix_hit_tokens = 0;               // prompt tokens found in the prefix cache
  long prefill_tokens = 0;                  // prompt tokens computed (recomputes included)
  long prefix_evictions = 0;                // cached prefixes evicted for blocks
  double kv_utilization_time_integral = 0;  // blocks-in-use fraction x seconds, summed per replica
  Seconds end_s = 0;                        // the last event
  double kv_transfer_s_sum = 0;        // start to landing, sharing the fabric with the others in flight
  double kv_transfer_alone_s_sum = 0;  // the same transfers, each alone on the fabric
  long kv_transfers = 0;
  double accepted_tokens_sum = 0;           // speculative: tokens emitted per decode step, summed
  long decode_steps = 0;
  int replicas = 0;
};

/// Runs the spec's stream to the end (every request finished). `trace`: one slice per iteration
/// on each replica's first GPU.
ServeResult simulate_serving(const ServingSpec& s, TraceSink* trace = nullptr);

}  // namespace clustersim
