#pragma once
// How long each pass of a pipeline rank takes: its segments with their times resolved. Compute
// comes from the plan; a blocking collective (TP, CP, ZeRO-2/3's per-layer ones, an MoE
// all-to-all) is timed alone on the fabric once per shape and cached, and shows only what the
// compute beside it does not hide, and slows that compute by the SMs it holds (interference_s,
// a compute part of its own). The iteration replays each pass as one timed step and keeps the parts
// for the breakdown and the trace; where TP or CP collectives must run among the job's other
// traffic, the parts say which (Part::collective, Part::ring_traffic) and pass_in_place.hpp
// replays them as flows.
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "simulator/engine.hpp"
#include "topologies/router.hpp"
#include "workloads/iteration_plan.hpp"

namespace clustersim {

struct Part {
  SegmentKind kind;
  std::string label;
  Seconds duration_s;
  /// A wait: the share of the GPU's SMs its communication kernel holds while it runs, what it takes
  /// from compute that an F&B unit runs beside it.
  double sm_share = 0;
  /// A collective over the unit's TP or CP groups, or ZeRO's over its data-parallel groups (`group`):
  /// its index in PassTimes::choice (-1 for anything else), and the compute beside it that hides it
  /// (duration_s = max(0, alone - hidden)).
  int collective = -1;
  Seconds hidden_s = 0;
  /// A ring-attention step: its traffic (IterationPlan::traffic, -1 for anything else), run `steps`
  /// times, each beside hidden_s of compute (duration_s = steps x max(0, alone - hidden)).
  int ring_traffic = -1;
  int steps = 1;
  /// An MoE all-to-all (dispatch or combine): its traffic, which runs in place over the
  /// expert-parallel group's units where they run it among the job's traffic; -1 for anything else.
  int ep_traffic = -1;
  /// A wait's communication as it runs on its own stream, for traces: its whole time (alone on the
  /// fabric; duration_s is only what compute did not hide), what it moves and over which group.
  Seconds comm_s = 0;
  Op op = Op::all_reduce;
  Bytes bytes = 0;
  CommGroup group = CommGroup::tp;
  /// Ring attention's exchange runs beside the attention compute before it, so on its stream it
  /// ends where the wait ends; every other collective starts where its wait starts.
  bool hidden_before = false;
  int layer = -1;  // the model layer (Segment::layer)
};

/// How a TP collective ran alone: the (algorithm, protocol) NCCL's tuner picked or that was
/// fastest, its time, and its channels: NCCL's for its size (fewer for small messages,
/// nccl_channels_for_size).
struct CollectiveChoice {
  Op op = Op::all_reduce;
  Bytes bytes = 0;
  const Algorithm* algorithm = nullptr;
  Protocol protocol;
  Seconds alone_s = 0;
  int channels = 1;
  CommGroup group = CommGroup::tp;  // what its group is
  int ranks = 0, nodes = 0;         // its group's shape
};

/// Whether the plan's pinned algorithm (collectives.algorithm naming one) runs `request`: it
/// implements the op and can run on its group.
inline bool pinned_runs(const IterationPlan& plan, const Cluster& cluster, CollectiveRequest request) {
  request.protocol = Protocol{};  // any of its protocols
  return plan.pinned && plan.pinned->supports(request.op) && !plan.pinned->not_applicable(cluster, request);
}

/// What runs `request` in an iteration: the pinned algorithm where it runs (the fastest of its
/// protocols, simulated), else NCCL's tuner's pick (closed form, nothing simulated) or, under
/// collectives.algorithm best, the fastest simulated pair; each on NCCL's channels for its size.
/// `alone_s`: its time alone on the fabric, where it was simulated to choose it.
struct IterationPick {
  const Algorithm* algorithm = nullptr;
  Protocol protocol;
  int channels = 1;
  std::optional<Seconds> alone_s;
};
IterationPick iteration_pick(FabricEngine& engine, const Router& router, const IterationPlan& plan,
                             const CollectiveRequest& request);

/// Communication-computation interference: a kernel holding `sm_share` of the SMs for `comm_s`
/// slows the `compute_s` beside it to 1 - sm_share of its speed while it runs, so the two take
/// max(comm_s, compute_s + sm_share x comm_s) together. What this adds beyond the compute and the
/// communication's own exposed max(0, comm_s - compute_s); 0 with nothing beside it.
Seconds interference_s(Seconds comm_s, Seconds compute_s, double sm_share);

/// What a ZeRO collective of `comm_s` planned under `planned_hidden_s` of its layer's compute finds
/// left to hide it, once the layer's earlier ZeRO collectives have used `used_s` of it (updated).
Seconds zero_hidden_s(Seconds comm_s, Seconds planned_hidden_s, Seconds& used_s);

/// A pass's steps back to back on the compute stream, and their total.
struct PassShape {
  std::vector<Part> parts;
  Seconds duration_s = 0;
  /// An F&B unit's communication, which its parts fold into one exposed wait: each wait of both
  /// passes with when it starts, from the unit's start (B's under F's compute, then F's under B's).
  std::vector<std::pair<Seconds, Part>> beside;
};

/// Steps that wait on other GPUs rather than compute: what an F&B unit can hide.
bool is_wait(SegmentKind k);

/// A pass's compute and waits apart, as an F&B unit overlaps them: its compute, its waits, and what
/// its waits' kernels take from compute beside them (each wait x its SM share).
struct WaitSplit {
  Seconds compute = 0, comm = 0, charge = 0;
};
WaitSplit split_waits(const PassShape& shape);

/// The kind of wait an F&B unit holds most of (by planned time), which its exposed communication is
/// charged to.
SegmentKind most_waited(const std::vector<std::pair<Seconds, Part>>& beside);

class PassTimes {
 public:
  PassTimes(FabricEngine& engine, const Router& router, const IterationPlan& plan)
      : engine_(engine), router_(router), plan_(plan) {}

  /// A pass of `rank` on model `stage`; passes of the same (rank, stage, kind) share one shape,
  /// whose reference stays valid.
  const PassShape& pass(int rank, int stage, PassKind kind);
  /// An overlapped F&B unit (DualPipe) of a forward and a backward shape.
  const PassShape& overlapped(const PassShape& f, const PassShape& b);
  /// `shape` on a unit whose GPUs compute at `speed` of the catalog's (workloads/variability.hpp):
  /// its compute parts (interference included) take 1/speed as long, and a TP collective hidden
  /// under compute is hidden by that compute as it now runs; other waits (all-to-alls, ring
  /// steps, ZeRO's collectives, expert imbalance) keep their times. Speed 1 is `shape` itself.
  const PassShape& slowed(const PassShape& shape, double speed);
  /// A TP collective of `rank`: what the compute beside it does not hide.
  Seconds tp_time(int rank, const Segment& s, bool weight_in_pass);
  /// The TP collective `s` of `rank` as timed alone (-1 if it takes no time: no bytes, a group of one).
  int tp_choice(int rank, const Segment& s);
  const CollectiveChoice& choice(int index) const { return choices_[static_cast<std::size_t>(index)]; }
  /// Every choice made so far, one per (rank, group kind, op, size).
  const std::vector<CollectiveChoice>& choices() const { return choices_; }
  /// Every choice made for `rank`'s collectives over `group` (TP, CP, or ZeRO's DP or expert DP) so far.
  std::vector<int> choices_of(int rank, CommGroup group) const;
  /// A traffic (an all-to-all or a ring step) over `gpus` in place of the GPUs it was planned on,
  /// position for position: the flows its alone time comes from.
  FlowGraph lower_traffic(int traffic, const std::vector<int>& gpus) const;

 private:
  Seconds interference(int rank, const Segment& s, bool weight_in_pass);
  double sm_share(const Segment& s) const;
  Seconds cp_time(int rank, const Segment& s);
  Seconds zero_time(int rank, const Segment& s);
  /// The data-parallel group a ZeRO collective of `rank` runs over: dense weights' or routed experts'.
  const std::vector<int>& zero_group(int rank, const Segment& s) const;
  Seconds comm_time(int rank, const Segment& s);
  Bytes traffic_bytes(int traffic) const;
  Seconds collective_time(int rank, const Segment& s, const std::vector<int>& group);
  int collective_choice(int rank, const Segment& s, const std::vector<int>& group);
  Seconds traffic_time(int traffic);

  FabricEngine& engine_;
  const Router& router_;
  const IterationPlan& plan_;
  std::map<std::tuple<int, CommGroup, Op, Bytes>, int> tp_cache_;  // -> choices_
  std::vector<CollectiveChoice> choices_;
  std::map<int, Seconds> traffic_cache_;
  std::map<std::tuple<int, int, PassKind>, PassShape> shapes_;  // node-based: references stay valid
  std::map<std::pair<const PassShape*, const PassShape*>, PassShape> overlapped_;
  std::map<std::pair<const PassShape*, double>, PassShape> slowed_;
};

}  // namespace clustersim
