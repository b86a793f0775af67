#pragma once
// One training iteration replayed on the fabric engine for every GPU of the job: every pass of every
// pipeline rank's schedule table becomes a timed step of each data-parallel replica (its TP and CP
// GPUs in lockstep), every GPU's pipeline transfers become flows between stages, and every
// data-parallel group's gradient collectives become flows over the fabric, started as the last
// backward of each chunk ends on every replica; all of it shares the links at once. Replicas whose
// traffic is provably identical and isolated are simulated once (fold.hpp). The result says how
// long the iteration took and where the slowest replica's pipeline ranks spent it.
#include <string>
#include <vector>

#include "simulator/engine.hpp"
#include "topologies/router.hpp"
#include "workloads/iteration_plan.hpp"

namespace clustersim {

struct RankBreakdown {
  Seconds compute_s = 0;
  Seconds recompute_s = 0;
  Seconds tp_s = 0;           // blocking TP collectives: all exposed
  Seconds ep_s = 0;           // MoE dispatch and combine all-to-alls: blocking, all exposed
  Seconds imbalance_s = 0;    // waiting at an all-to-all for the GPU whose experts got the most tokens
  Seconds cp_s = 0;           // context-parallel K/V exchange not hidden under attention compute
  Seconds pp_exposed_s = 0;   // waiting for a pipeline transfer after its producer finished
  Seconds dp_exposed_s = 0;   // waiting for gradient collectives (and the parameter all-gather)
  Seconds optimizer_s = 0;
  Seconds bubble_s = 0;       // waiting for a producer pass on another stage (the schedule's bubble)
  Seconds other_idle_s = 0;   // done, waiting for the slowest rank
};

/// A span of a communication stream of the reported replica, for the HTML report (the full trace
/// goes to a TraceSink instead, and is never held).
struct TraceEvent {
  int gpu = 0;
  std::string stream;  // "pp", "dp"
  std::string name;
  Seconds start_s = 0;
  Seconds end_s = 0;
};

/// One pass as it ran on a pipeline rank's compute stream: what timelines are drawn from.
struct PassSpan {
  int rank = 0;  // pipeline rank
  PassKind kind = PassKind::forward;
  int microbatch = 0;
  int stage = 0;  // model stage
  Seconds start_s = 0;
  Seconds end_s = 0;
};

/// One distinct collective an iteration ran (by what it is, op, size and group shape) and what ran
/// it: NCCL's tuner's pick (or, under collectives: {algorithm: best}, the fastest alone) on its
/// channels. `what`: tp (TP and the scatter-gather's all-gather), cp, zero and zero_experts
/// (ZeRO's per-layer collectives), gradients (buckets, parameter gathers, syncs between copies).
struct CollectiveRun {
  std::string what;
  Op op = Op::all_reduce;
  Bytes bytes = 0;
  int ranks = 0;
  int nodes = 0;
  std::string algorithm;
  std::string protocol;
  int channels = 0;
  auto operator<=>(const CollectiveRun&) const = default;
};

struct IterationResult {
  Seconds iteration_s = 0;
  std::vector<RankBreakdown> ranks;  // by pipeline rank
  std::vector<TraceEvent> events;
  std::vector<PassSpan> passes;      // in each rank's table order
  Bytes pp_bytes = 0;                // sent between pipeline ranks by one TP rank of one pipeline
  int replicas = 1;                  // data-parallel replicas of the job
  int simulated_replicas = 1;        // of which the engine ran these; the rest folded onto them
  int gpus_per_rank = 1;             // GPUs of one pipeline rank of a replica (tp x cp), all replayed
  int reported_replica = 0;          // the replica the breakdown, passes and events are from: the slowest
  /// Where the TP collectives ran: alone (proven isolated) or in place; empty when folded without proof.
  std::string tp_collectives;
  /// The same for context-parallel exchanges (ring-attention steps, CP all-gathers); empty without CP.
  std::string cp_exchanges;
  /// The same for MoE all-to-alls (dispatch and combine over each expert-parallel group); empty
  /// where they cross no replicas.
  std::string ep_all_to_alls;
  /// The same for ZeRO-2/3's per-layer collectives (gradient reduce-scatters, ZeRO-3's parameter
  /// all-gathers over each data-parallel group); empty without them.
  std::string zero_collectives;
  FoldMode fold = FoldMode::assume;  // how replicas were folded
  std::vector<CollectiveRun> collectives;  // sorted; empty with free communication
};

class TraceSink;

/// `trace`, when given, receives every GPU's slices it wants as the accounting walks the steps
/// (trace_sink.hpp): compute passes and their parts, each stream's communication with its own
/// duration, pipeline transfers with their arrows; folded GPUs get their class's, labelled so.
IterationResult simulate_iteration(FabricEngine& engine, const Router& router, const IterationPlan& plan,
                                   TraceSink* trace = nullptr);

}  // namespace clustersim
