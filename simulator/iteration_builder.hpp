#pragma once
// The iteration builder: one training iteration as a flow graph over every simulated GPU, replayed
// on the engine and accounted per pipeline rank. Private to simulator/ (iteration.hpp is the
// interface); its parts live in one file each: iteration.cpp (layout and the run),
// iteration_placement.cpp (which replicas are simulated, where TP collectives run),
// iteration_gradients.cpp (which algorithm each gradient collective runs, at which sizes),
// iteration_graph.cpp (passes, transfers, gradient collectives, syncs), iteration_account.cpp
// (finish times -> breakdowns) and iteration_trace.cpp (the Perfetto trace).
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/point_to_point.hpp"
#include "simulator/fold.hpp"
#include "simulator/iteration.hpp"
#include "simulator/pass_in_place.hpp"
#include "simulator/pass_times.hpp"
#include "simulator/trace_sink.hpp"

namespace clustersim {

inline bool is_input_gradient(PassKind k) { return k == PassKind::backward || k == PassKind::backward_input; }

/// Where a pass is in the flow graph, and what it waited for.
struct PassTasks {
  int replica = 0;
  int rank = -1;
  FlowId step = -1;         // the pass's last step
  FlowId entry = -1;        // its first: waits for its input
  FlowId transfer_in = -1;  // the pipeline transfer this pass waits for, if any
  FlowId arrival = -1;      // when its input is whole: the transfer, or the all-gather that follows it
  FlowId producer = -1;     // the pass that sent it
  int from_rank = -1;       // the pipeline rank that sent it
  int sent = 0;             // transfers, one per sending GPU, at ids transfer_in, transfer_in + 1, ...
  Bytes bytes = 0;          // each of them
};

class IterationBuilder {
 public:
  IterationBuilder(FabricEngine& engine, const Router& router, const IterationPlan& plan, TraceSink* trace)
      : engine_(engine),
        router_(router),
        plan_(plan),
        times_(engine, router, plan),
        in_place_flows_(router, times_),
        trace_(trace),
        pxn_transfers_(pxn_applies(router.cluster())) {}

  IterationResult run();
  /// The iteration's flow graph, built but not run: several jobs' graphs share one engine run
  /// (multi_job.hpp), each then accounted from its own flows' finish times.
  const FlowGraph& build();
  /// Finish times of build()'s flows (indexed as its graph) -> the result.
  IterationResult account(const std::vector<Seconds>& finish);
  /// Other jobs share the fabric: a TP group that crosses it (spans nodes) may meet their traffic,
  /// so its collectives run in place. Jobs hold whole nodes, so a group inside one meets none.
  void share_fabric() { shares_fabric_ = true; }

 private:
  int ranks() const { return plan_.shape.stages; }
  int members() const { return static_cast<int>(units_.front().size()); }
  int gpu(int replica, int rank, int member) const {
    return units_[static_cast<std::size_t>(replica * ranks() + rank)][static_cast<std::size_t>(member)];
  }
  /// The GPUs of a rank whose own transfers and syncs go on the fabric: all of them, except when
  /// replicas are folded without proof, where GPU 0 stands for its rank as it did before
  /// whole-cluster replay.
  int own_members() const { return plan_.fold == FoldMode::assume ? 1 : members(); }
  std::size_t unit(int replica, int rank) const { return static_cast<std::size_t>(replica * ranks() + rank); }
  /// The speed a unit computes at: its GPUs run in lockstep (TP and CP collectives every layer),
  /// so its slowest GPU's.
  double unit_speed(int replica, int rank) const {
    if (plan_.gpu_speed.empty()) return 1;
    // From the unit's own GPUs, not from 1: a unit of faster GPUs (a drawn speed above 1, a
    // faster model on a heterogeneous cluster) computes faster.
    const std::vector<int>& gpus = units_[unit(replica, rank)];
    double slowest = plan_.gpu_speed.at(static_cast<std::size_t>(gpus.front()));
    for (int g : gpus) slowest = std::min(slowest, plan_.gpu_speed.at(static_cast<std::size_t>(g)));
    return slowest;
  }
  /// Each unit's speed of a replica, by rank; empty when every GPU computes as calibrated.
  std::vector<double> replica_speeds(int replica) const;

  /// A hand-built plan (tests) names one GPU per rank and one data-parallel group: one replica.
  void normalise_layout();

  /// The pipeline rank pairs that send to each other, in a fixed order: what every replica sends.
  std::vector<std::pair<int, int>> transfer_pairs() const;

  /// The (rank, rank) pairs whose gradients an all-reduce inside a replica sums: the tied embedding
  /// and a stage held twice.
  struct SyncPair {
    int a, b;
    Bytes bytes;
  };
  std::vector<SyncPair> sync_pairs() const;

  /// The route a pipeline transfer takes: one connection per GPU pair, as NCCL keeps one per peer,
  /// so every microbatch hashes onto the same path (a training run's router keeps it, routed once).
  /// On a fabric with rails it is NCCL's send/recv with PXN (collectives/point_to_point.hpp): over
  /// NVLink to the GPU on the receiver's rail, then that rail, so it never changes rails in the fabric.
  Route transfer_route(int src, int dst) const;

  /// The links a flow over `links` loads as the engine runs it: every way's where the fabric's
  /// routing splits it (collectives/spray.hpp), so that the fold and the isolation proof see them.
  std::vector<LinkDir> as_run(std::vector<LinkDir> links) const;

  /// The job's traffic other than TP collectives, as the fold and the isolation proof see it:
  /// each replica's own flows (every GPU's pipeline transfers, the syncs inside it) and the
  /// gradient collectives shared between replicas. Empty when folded without proof or free.
  FoldInput job_traffic() const;

  /// Times every pass of every rank alone (and the scatter-gather's all-gather), and notes which
  /// rank runs each (model stage, forward?, microbatch), before any pass is placed.
  void plan_passes();

  Segment gather_segment() const {
    Segment gather;
    gather.tp_op = Op::all_gather;
    gather.tp_bytes = plan_.p2p_gather_bytes;
    return gather;
  }

  /// The TP groups of one unit: its members in runs of tp (tp fastest). A hand-built plan's unit
  /// of one GPU stands for its rank's TP group.
  std::vector<std::vector<int>> tp_groups(int replica, int rank) const;

  /// The CP groups of one unit: for each TP position, its members across the cp slices (the unit
  /// is tp x cp members, tp fastest). A hand-built plan's unit of one GPU stands for its rank's.
  std::vector<std::vector<int>> cp_groups(int replica, int rank) const;

  /// A unit's TP and CP groups, for the kinds that run in place.
  UnitGroups unit_groups(int replica, int rank) const;

  /// Replicas per expert-parallel group, 1 where MoE all-to-alls cross no replicas.
  int ep_replicas() const {
    const int ep = plan_.expert_parallel;
    return ep > 1 && replicas_ % ep == 0 ? ep : 1;
  }

  /// The expert-parallel groups of `rank` in replicas block * ep .. block * ep + ep - 1: one per
  /// member position, its GPUs that member of each replica's unit.
  std::vector<std::vector<int>> ep_groups(int block, int rank) const;

  /// The traffics (IterationPlan::traffic indices) of the plan's steps of one kind: ring-attention
  /// steps (cp_comm) or MoE all-to-alls (ep_comm).
  std::vector<int> traffics_of(SegmentKind kind) const;

  /// Every collective over `kind` (TP or CP) that `rank` runs, lowered over `group` as it ran
  /// alone, and for CP one step of each ring-attention exchange (lowered once: the passes that
  /// run them in place reuse it).
  std::vector<OwnFlow> group_flows(int rank, CommGroup kind, const std::vector<int>& group);

  /// TP collectives, CP exchanges, MoE all-to-alls and ZeRO-2/3's per-layer collectives each keep
  /// their alone times where no link of any of their groups carries other traffic of the job
  /// (traffic_isolation.hpp), the other kinds included; elsewhere they run in place. MoE
  /// all-to-alls in place join the replicas of an expert-parallel group, which then fold only as a
  /// whole (onto another group's replicas); ZeRO's in place join every replica, and their flows
  /// are shared traffic to the fold, as the gradient collectives are.
  void place_unit_collectives(FoldInput& traffic);

  /// Every MoE all-to-all and ZeRO collective in place: per pipeline rank and pass, the flows of
  /// its groups (an expert-parallel group of replicas' units; every data-parallel group of the rank)
  /// start once every simulated unit it spans has reached it, and every such unit goes on once they
  /// all end (a synchronous collective waits for its slowest member).
  void add_cross_unit_waits();

  /// Room for the whole graph before it grows: a whole-cluster graph is millions of flows, and
  /// growing by doubling would move every one several times. Reserved pages that stay unused are
  /// never touched, so the estimate errs high: per pass a step, each member's transfer, their
  /// join and a gather, and as much again for the gradient collectives and tails.
  void reserve_flows();

  /// Decides which replicas are simulated: those whose traffic is not provably an image of
  /// another simulated replica's (fold.hpp).
  void fold(const FoldInput& in);

  /// Megatron-Core's gradient bucket on a rank's chunk `chunk`: max(40M, 1M x group size)
  /// parameters on its first chunk when reduction overlaps the backward, else the whole chunk.
  Bytes reduce_bucket_bytes(int chunk, std::size_t group_size, Bytes bytes) const;
  /// The first bucket of an updated-parameter all-gather, by the same rule.
  Bytes gather_bucket_bytes(std::size_t group_size) const;
  /// The (op, size) of every gradient collective `rank` runs on a group of kind `kind` (0 dense,
  /// 1 experts, as gradient_groups orders them): its buckets and parameter gathers.
  std::vector<std::pair<Op, Bytes>> gradient_sizes(int rank, std::size_t kind, std::size_t group_size) const;

  struct GradientChoice {
    const Algorithm* algorithm;
    Protocol protocol;
    int channels;
    int ranks, nodes;  // the group's shape
  };
  /// What a gradient bucket, parameter gather or sync runs: NCCL's tuner's pick for its size
  /// (collectives: {algorithm: nccl}, the default), or the fastest alone (algorithm: best), on
  /// NCCL's channels for that size (fewer for small messages).
  GradientChoice gradient_choice(Op op, const std::vector<int>& group, Bytes bytes) const;
  FlowGraph gradient_flows(Op op, const std::vector<int>& group, Bytes bytes) const;
  /// One lowering per distinct (algorithm, op, channels) those sizes pick on `group`: the links the
  /// fold and the isolation proof see it load (an algorithm's links do not change with size or protocol).
  std::vector<FlowGraph> gradient_patterns(const std::vector<int>& group, const std::vector<std::pair<Op, Bytes>>& sizes) const;

  using PassKey = std::tuple<int, int, bool, int>;  // (replica, model stage, forward?, microbatch)

  /// One replica's steps on one pipeline rank: its GPUs run them in lockstep.
  void add_rank_passes(int replica, int rank);

  /// Forward activations go to the next model stage; input gradients go back to the previous one.
  /// Without sequence parallelism each TP rank sends 1/t of the tensor and the receivers all-gather
  /// it over NVLink (Megatron's scatter-gather, Narayanan et al. 2021 section 4.1). A blocking
  /// transfer (Megatron's synchronous send/recv) holds the sender until it ends; the receiver is
  /// taken to have posted its receive in time (waiting for it too could deadlock a table whose
  /// ranks post in another order than ours).
  void add_transfers();

  /// Adds a gradient-side collective (gradient_choice) after `after`; returns the flows that end it.
  std::vector<FlowId> add_collective(Op op, const std::vector<int>& group, Bytes bytes, FlowId after);

  /// The (rank, chunk) slots of the first and the last model stage whose tied embedding gradients
  /// an all-reduce sums; none when one rank holds both. A schedule that holds stages twice
  /// (DualPipe) keeps a first and a last stage on one rank: the tied gradients meet there, and the
  /// replica sync sums the copies.
  std::optional<std::vector<std::pair<int, int>>> embedding_slots() const;

  /// The tied embedding's gradient all-reduce between the ranks of the first and the last model
  /// stage, once both have run their last backward of those stages.
  void add_embedding_sync(int replica);

  /// A stage held by several ranks (DualPipe's two directions) has one gradient per copy: they are
  /// summed by an all-reduce between the holders before the optimizer step.
  void add_replica_sync(int replica);

  /// An all-reduce between the GPUs of some (rank, chunk) slots of one replica, one per member,
  /// once each slot has run its last pass on that chunk; the ranks' optimizer steps wait for it.
  void sync_after(int replica, const std::vector<std::pair<int, int>>& slots, Bytes bytes);

  /// A chunk's gradients and the groups that reduce them: dense weights over data parallelism (a
  /// group per TP rank), routed experts over their replicas (a group per TP and expert rank).
  std::vector<std::pair<const std::vector<std::vector<int>>*, Bytes>> gradient_groups(int rank, const StagePlan& sp) const;

  /// A zero-time step after all of `flows`.
  FlowId join(int gpu_id, std::vector<FlowId> flows);

  /// A chunk's gradient reduction over its groups, overlapped with its last backward pass the way
  /// Megatron-Core's DDP does it: the rank's first chunk is cut into buckets of max(40M, 1M x group
  /// size) parameters, each reduced as soon as the backward has produced it on every replica
  /// (gradients come out at an even rate over the pass, layer after layer); its later chunks are one
  /// bucket each, reduced when the chunk's backward ends (distributed.py: disable_bucketing for
  /// model_chunk_idx > 0). Buckets on one group run one after another, as NCCL orders them on its
  /// stream, after whatever that group ran before (`queue`: per group, the ends of its last
  /// collective, updated); the groups of a rank's TP ranks run side by side.
  std::vector<FlowId> add_bucketed_reduce(int rank, int chunk, Op op, const std::vector<std::vector<int>>& groups,
                                          Bytes bytes, std::vector<std::vector<FlowId>>& queue);
  /// `rank`'s chunks in the order their last passes run (the order it issues their reductions).
  std::vector<int> chunks_by_last_pass(int rank) const;

  /// Gradient collectives per chunk, bucketed under its last backward (or, not overlapped, in one
  /// piece as the rank's last backward ends on every replica), then each replica's optimizer step,
  /// then (with the distributed optimizer) the parameter all-gather.
  void add_tail(int rank);
  /// overlap_param_gather: each chunk's updated-parameter all-gather ahead of its first forward.
  void add_parameter_gathers();
  /// The parameter all-gathers of `rank`'s chunk `chunk`, after `after`; their ends. `part`: 0 the
  /// whole chunk, 1 its first bucket, 2 the rest.
  std::vector<FlowId> add_parameter_gather(int rank, int chunk, FlowId after, int part = 0);

  static Seconds& bucket(RankBreakdown& b, SegmentKind kind);
  /// Every distinct collective the iteration ran, and what ran it (IterationResult::collectives).
  std::vector<CollectiveRun> collectives_run() const;

  Seconds start_of(const std::vector<Seconds>& finish, FlowId id) const {
    Seconds t = 0;
    for (FlowId a : graph_.flows[id].after) t = std::max(t, finish[a]);
    return t;
  }

  /// The simulated replica that ends last (the first of those on a tie): the breakdown is its.
  int slowest_replica(const std::vector<Seconds>& finish) const;

  struct Step {
    FlowId id;     // its last step
    FlowId entry;  // its first
    std::optional<PassChain> chain;  // TP collectives in place
    int replica;
    int rank;
    const PassShape* shape;
    PassOp op;
    int stage;
    std::optional<PassOp> partner;  // the second pass of an overlapped F&B unit
    int partner_stage;
  };

  FabricEngine& engine_;
  const Router& router_;
  const IterationPlan& plan_;
  PassTimes times_;
  InPlaceFlows in_place_flows_;  // lowered once per group, for every pass that runs them in place
  FlowGraph graph_;
  std::vector<std::vector<int>> units_;  // [replica * ranks + rank] -> its GPUs
  int replicas_ = 1;
  std::vector<std::vector<std::vector<int>>> dp_groups_, expert_groups_;  // [rank] -> groups
  std::vector<int> simulated_;  // the replicas the engine runs; the rest fold onto them
  std::vector<Step> steps_;
  std::map<PassKey, PassTasks> passes_;
  std::vector<std::vector<std::pair<int, int>>> holders_;  // model stage -> (rank, chunk) slots holding it
  std::map<std::tuple<int, int, int>, FlowId> last_of_chunk_;  // (replica, rank, chunk) -> last step of its last pass
  std::vector<FlowId> rank_last_, optimizer_, rank_end_;  // by unit
  std::map<FlowId, FlowId> next_step_;  // a rank's step -> its next
  std::map<std::tuple<int, bool, int>, int> pass_rank_;  // (model stage, forward?, microbatch) -> its pipeline rank
  bool tp_in_place_ = false, cp_in_place_ = false, ep_in_place_ = false, zero_in_place_ = false;
  bool shares_fabric_ = false;
  std::string tp_placement_, cp_placement_, ep_placement_, zero_placement_;
  int fold_block_ = 1;  // replicas the fold maps as one: an expert-parallel group's, in place
  std::map<FlowId, std::pair<FlowId, Seconds>> chain_entry_;  // a pass in place: last step -> (entry, planned time)
  std::vector<std::vector<FlowId>> dp_flows_;     // by rank: its gradient collectives (replica 0's syncs too)
  std::vector<std::vector<FlowId>> extra_waits_;  // by unit: syncs its optimizer step waits for
  mutable std::map<std::tuple<Op, Bytes, std::vector<int>>, GradientChoice> gradient_choices_;  // gradient_choice's
  std::map<FlowId, std::vector<FlowId>> gather_wait_;  // a pass (last step) -> parameter gathers it waits for
  Bytes pp_bytes_ = 0;
  TraceSink* trace_ = nullptr;
  bool pxn_transfers_;  // pipeline transfers go by PXN (transfer_route)
  std::vector<int> simulated_as_;  // by replica: the simulated replica it folds onto (itself if simulated)
  struct CommRecord {
    int rank;
    int replica;  // a collective inside one replica (its copies fold with it); -1: across replicas
    Op op;
    Bytes bytes;
    std::vector<int> group;
    FlowId after;
    std::vector<FlowId> ends;
    const char* label;
  };
  std::vector<CommRecord> comm_records_;  // the gradient collectives, kept for a trace only

  void record_comm(int rank, int replica, Op op, Bytes bytes, const std::vector<int>& group, FlowId after,
                   const std::vector<FlowId>& ends, const char* label);

  void write_trace(const std::vector<Seconds>& finish);
};

}  // namespace clustersim
