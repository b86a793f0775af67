#pragma once
// A pass whose TP collectives, context-parallel exchanges, MoE all-to-alls or ZeRO collectives run
// in place among the job's other traffic, rather than timed alone: where a group's links also carry
// pipeline, data-parallel or another kind's flows (traffic_isolation.hpp). The pass becomes a chain
// on its unit's GPUs: its compute as timers, and each such collective as the flows of every TP (or
// CP) group of the unit, lowered with the (algorithm, protocol) that was fastest alone, beside a
// timer of the compute that hides it; a ring-attention exchange is its steps one after another,
// each beside its share of the attention compute; an all-to-all (a ZeRO collective), a wait that
// the builder joins to its expert-parallel (data-parallel) groups' flows across units. The chain
// takes the pass's compute plus, per collective (per step), max(0, its time in place - hidden):
// what the one timed step takes with the alone time, so a collective that meets nothing gives the
// same result.
#include <map>
#include <tuple>
#include <vector>

#include "simulator/pass_times.hpp"

namespace clustersim {

struct PassChain {
  FlowId entry = -1;  // waits for what the pass waits for
  FlowId exit = -1;   // ends the pass
  struct Collective {
    std::size_t part;  // index in the shape's parts (an F&B unit's: in its `beside`)
    FlowId head;       // the step it starts after
    FlowId join;       // its (last step's) flows and hiding compute both done
    int ep_traffic;    // an MoE all-to-all, whose flows the builder joins across units; else -1
    Seconds hidden_s = 0;  // the compute beside each step: the part's, unless the chain ran out of it
  };
  std::vector<Collective> collectives;
  /// An F&B unit (add_fb_unit_in_place): its entry is a zero-time step, and what exceeds its
  /// compute parts is its exposed communication.
  bool fb_unit = false;
};

/// Adds `sub`'s flows to `graph`, their dependencies shifted with them and those without any
/// after `after`; returns their ids.
std::vector<FlowId> append_after(FlowGraph& graph, FlowGraph sub, FlowId after);

/// The flows of the collectives and traffics that run in place, lowered once per group: a
/// whole-cluster iteration runs the same few over the same groups in every pass, and routing them
/// again each time was a third of what building a 16K-GPU graph cost.
class InPlaceFlows {
 public:
  InPlaceFlows(const Router& router, const PassTimes& times) : router_(router), times_(times) {}
  /// TP (or CP) collective `choice` (PassTimes::choice) over `group`, with the identical flows that
  /// nothing waits on (a ring's channels that take one path) as one flow with copies.
  const FlowGraph& collective(int choice, const std::vector<int>& group);
  /// Traffic `traffic` (an all-to-all or a ring step) over `gpus` (PassTimes::lower_traffic).
  const FlowGraph& traffic(int traffic, const std::vector<int>& gpus);

 private:
  const Router& router_;
  const PassTimes& times_;
  std::map<std::pair<int, std::vector<int>>, FlowGraph> collectives_, traffics_;
};

/// A unit's TP and CP groups (every one of each), and which kinds run in place. An MoE all-to-all
/// in place spans several replicas' units: the chain leaves a wait for it (its collective's head
/// and join, with nothing between them) that the builder joins to the expert-parallel group's
/// flows once every unit of the group has its chain.
struct UnitGroups {
  std::vector<std::vector<int>> tp, cp;
  bool tp_in_place = false, cp_in_place = false, ep_in_place = false;
  /// ZeRO-2/3's per-layer collectives span every replica: like an all-to-all in place, the chain
  /// leaves a wait (beside the compute that hides it) that the builder joins to the data-parallel
  /// groups' flows.
  bool zero_in_place = false;
};

/// Adds `shape` as a chain on GPU `gpu`, its collectives that run in place over `groups`; the
/// entry waits for `after`.
PassChain add_pass_in_place(FlowGraph& graph, InPlaceFlows& flows, const PassShape& shape, const UnitGroups& groups,
                            int gpu, std::vector<FlowId> after);

/// An F&B unit of `first` and `second` (DualPipe; PassTimes::overlapped) whose MoE all-to-alls run
/// in place: `second`'s waits one after another beside `first`'s compute (with the SMs its waits
/// take), then `first`'s beside `second`'s. A wait that runs in place leaves a wait for the builder
/// to join to its group's flows; the others keep their alone times. With every wait at its alone
/// time the unit takes what `unit` (their overlapped shape) planned.
PassChain add_fb_unit_in_place(FlowGraph& graph, const PassShape& first, const PassShape& second, const UnitGroups& groups,
                               int gpu, std::vector<FlowId> after);

/// The shape's parts with each in-place collective's exposed time as it ran.
std::vector<Part> realized_parts(const PassShape& shape, const PassChain& chain, const std::vector<Seconds>& finish);

/// Whether a part runs in place among `groups`' kinds.
bool runs_in_place(const Part& part, const UnitGroups& groups);

/// Whether a shape has a part that runs in place.
bool has_part_in_place(const PassShape& shape, const UnitGroups& groups);

}  // namespace clustersim
