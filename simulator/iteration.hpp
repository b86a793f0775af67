#pragma once
// One training iteration replayed on the fabric engine: every pass of every pipeline rank's schedule
// table becomes timed steps on its representative GPU, pipeline transfers become flows between
// stages, and data-parallel gradient collectives become flows over the fabric, started as the last
// backward of each chunk ends. The result says how long the iteration took and where each pipeline
// rank's time went.
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

struct TraceEvent {
  int gpu = 0;
  std::string stream;  // "compute", "pp", "dp"
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

struct IterationResult {
  Seconds iteration_s = 0;
  std::vector<RankBreakdown> ranks;  // by pipeline rank
  std::vector<TraceEvent> events;
  std::vector<PassSpan> passes;      // in each rank's table order
  Bytes pp_bytes = 0;                // sent between pipeline ranks by one TP rank of one pipeline
};

IterationResult simulate_iteration(FabricEngine& engine, const Router& router, const IterationPlan& plan);

}  // namespace clustersim
