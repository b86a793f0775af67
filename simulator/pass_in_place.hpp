#pragma once
// A pass whose TP collectives run in place among the job's other traffic, rather than timed alone:
// where a TP group's links also carry pipeline or data-parallel flows (traffic_isolation.hpp).
// The pass becomes a chain on its unit's GPUs: its compute as timers, and each TP collective as
// the flows of every TP group of the unit, lowered with the (algorithm, protocol) that was fastest
// alone, beside a timer of the compute that hides it. The chain takes the pass's compute plus, per
// collective, max(0, its time in place - hidden): what the one timed step takes with the alone
// time, so a collective that meets nothing gives the same result.
#include <vector>

#include "simulator/pass_times.hpp"

namespace clustersim {

struct PassChain {
  FlowId entry = -1;  // waits for what the pass waits for
  FlowId exit = -1;   // ends the pass
  struct Collective {
    std::size_t part;  // index in the shape's parts
    FlowId head;       // the step it starts after
    FlowId join;       // its flows and its hiding compute both done
  };
  std::vector<Collective> collectives;
};

/// Adds `sub`'s flows to `graph`, their dependencies shifted with them and those without any
/// after `after`; returns their ids.
std::vector<FlowId> append_after(FlowGraph& graph, FlowGraph sub, FlowId after);

/// Lowers one TP collective over `group` into `graph`, its first flows after `after`; returns its
/// flows.
std::vector<FlowId> add_lowered_collective(FlowGraph& graph, const Router& router, const CollectiveChoice& choice,
                                           const std::vector<int>& group, int channels, FlowId after);

/// Adds `shape` as a chain on GPU `gpu`, with its TP collectives over `tp_groups` (every TP group
/// of the unit); the entry waits for `after`.
PassChain add_pass_in_place(FlowGraph& graph, const Router& router, const PassTimes& times, const PassShape& shape,
                            const std::vector<std::vector<int>>& tp_groups, int channels, int gpu,
                            std::vector<FlowId> after);

/// The shape's parts with each in-place collective's exposed time as it ran.
std::vector<Part> realized_parts(const PassShape& shape, const PassChain& chain, const std::vector<Seconds>& finish);

/// Whether a shape has a TP collective that takes time.
bool has_tp_collective(const PassShape& shape);

}  // namespace clustersim
