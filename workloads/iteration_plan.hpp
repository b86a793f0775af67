#pragma once
// What one training iteration asks of each pipeline stage, as a value the engine replays: per model
// stage (chunk), the segments of one microbatch's forward and backward on one GPU, the bytes sent
// between stages, and the gradients reduced across data parallelism. Built from a scenario by
// plan_iteration(); tests build it directly (uniform stages, free communication).
//
// Every GPU: a pipeline rank's segments are the same on all its GPUs (the TP and CP ranks of a
// replica run in lockstep, joined by their blocking collectives), so segments are kept once per
// model stage; `unit_gpus` places them on every GPU of the job, and the engine puts every GPU's
// pipeline transfers and every data-parallel group's gradient collectives on the fabric. Replicas
// whose traffic provably cannot differ are folded (simulator/fold.hpp).
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "workloads/schedule.hpp"

namespace clustersim {

/// What a step of the compute stream is: work, repeated work, a blocking TP collective, a blocking
/// expert-parallel all-to-all (MoE dispatch or combine), waiting at an all-to-all for the rank whose
/// experts got the most tokens (expert load imbalance), context-parallel K/V exchange, or ZeRO-2/3's
/// per-layer parameter all-gather and gradient reduce-scatter (prefetched: only what the layer's
/// compute does not hide shows).
enum class SegmentKind { compute, recompute, tp_comm, ep_comm, imbalance, cp_comm, dp_comm };
/// The group a collective step runs over.
enum class CommGroup { tp, cp, dp, expert_dp };
/// Which data-parallel replicas the engine may simulate once for several: `exact` folds those
/// whose traffic is provably identical and isolated (fold.hpp), `none` simulates every replica,
/// `all` requires that every replica folds into one and is an error where that is not exact.
/// `assume` is the engine as it was before whole-cluster replay, and its fast default until it
/// runs whole clusters at speed (README, "Whole-cluster replay"): replica 0 alone, its first GPU
/// per rank sending for the rank, and TP rank 0's data-parallel groups alone on the fabric.
enum class FoldMode { exact, none, all, assume };
const char* to_string(FoldMode mode);
/// Where TP collectives run under whole-cluster replay (every mode but `assume`): `automatic` times
/// them alone where that is provably exact (no link of a TP group carries other traffic) and runs
/// them in place among the rest elsewhere; `alone` and `in_place` force one or the other, to see
/// what contention costs.
enum class TpPlacement { automatic, alone, in_place };
const char* to_string(TpPlacement placement);
/// Under whole-cluster replay, where TP collectives, context-parallel exchanges, MoE all-to-alls and
/// ZeRO-2/3's per-layer collectives are timed.
struct Placements {
  TpPlacement tp = TpPlacement::automatic;
  TpPlacement cp = TpPlacement::automatic;
  TpPlacement ep = TpPlacement::automatic;
  TpPlacement zero = TpPlacement::automatic;
};
const char* to_string(SegmentKind kind);

/// One step on a GPU's compute stream. Compute has a duration; a TP collective blocks it (Megatron
/// waits for it before the next GEMM) for whatever the compute beside it does not hide, and is
/// timed by the engine over its group, cached per shape.
struct Segment {
  SegmentKind kind = SegmentKind::compute;
  std::string label;       // "layer 3 fwd", "attention all-reduce", ...
  Seconds duration_s = 0;  // compute and recompute
  Op tp_op = Op::all_reduce;
  Bytes tp_bytes = 0;      // tp_comm: nccl-tests size of the collective
  int traffic = -1;        // ep_comm, cp_comm ring: index into IterationPlan::traffic
  /// cp_comm: a ring-attention step repeated `repeat` times; without traffic, a collective (tp_op,
  /// tp_bytes) over the context-parallel group.
  int repeat = 1;
  /// A collective that runs beside compute (each ring-attention step, ZeRO's per-layer collectives,
  /// SP's backward re-gather) shows only what exceeds the hidden_s of compute running meanwhile.
  Seconds hidden_s = 0;
  /// tp_comm in a backward: also hidden under this much weight-gradient compute, when the weight
  /// gradient runs in the same pass (not when a zero-bubble schedule defers it).
  Seconds hidden_by_weight_s = 0;
  CommGroup group = CommGroup::tp;  // tp_comm, cp_comm and dp_comm collectives
  int layer = -1;  // the model's transformer layer it belongs to (-1: outside the layers), for traces
};

/// One MoE all-to-all over the representative expert-parallel group. Plain: bytes[i][j] from
/// gpus[i] to gpus[j]. DeepEP: network_bytes[i][node] crosses the fabric once per node and
/// nvlink_bytes[i][j] fans out inside it, timed as DeepEP's kernels (collectives/algo_deepep.hpp),
/// whose chunks are token_bytes a token.
struct GroupTraffic {
  std::string label;  // "dispatch", "combine", ...
  std::vector<int> gpus;
  bool deepep = false;
  int ranks_per_node = 1;
  double token_bytes = 0;
  std::vector<std::vector<double>> bytes, network_bytes, nvlink_bytes;
};

struct StagePlan {
  std::vector<Segment> forward;          // one microbatch
  std::vector<Segment> backward_input;   // input gradient (with any recompute first)
  std::vector<Segment> backward_weight;  // weight gradient; a full backward runs both back to back
  Bytes activation_bytes = 0;            // sent forward to the next stage, and its gradient back
  Bytes gradient_bytes = 0;              // this chunk's gradients on one GPU, reduced across DP
  Bytes expert_gradient_bytes = 0;       // its routed experts' gradients, reduced across expert DP
  // (both at IterationPlan::gradient_bytes_per_param)
};

struct IterationPlan {
  const Schedule* schedule = nullptr;
  ScheduleShape shape;
  std::vector<StagePlan> stages;          // by global model stage, p * v of them
  std::vector<int> rank_gpu;              // pipeline rank -> representative GPU
  std::vector<std::vector<int>> tp_group; // pipeline rank -> GPUs of its TP group
  std::vector<std::vector<int>> dp_group; // pipeline rank -> GPUs of its DP group (the TP rank 0 one)
  std::vector<std::vector<int>> expert_dp_group;  // pipeline rank -> replicas of its experts (dp / ep)
  std::vector<std::vector<int>> cp_group; // pipeline rank -> GPUs sharing its sequences (context parallel)
  /// The whole job: unit_gpus[replica * ranks + rank] lists the GPUs (tp x cp "members", tp
  /// fastest) of one pipeline rank of one data-parallel replica; unit_gpus[rank][0] is rank_gpu.
  /// Empty: one replica of one member per rank (rank_gpu), as hand-built plans in tests have.
  std::vector<std::vector<int>> unit_gpus;
  int replicas = 1;
  /// Replicas per expert-parallel group: the units of `expert_parallel` consecutive replicas at one
  /// pipeline rank exchange tokens at every MoE all-to-all (member m with member m). 1: none.
  int expert_parallel = 1;
  /// Per pipeline rank, every data-parallel group (one per TP rank) and every expert group; empty:
  /// dp_group and expert_dp_group alone.
  std::vector<std::vector<std::vector<int>>> dp_groups, expert_dp_groups;
  FoldMode fold = FoldMode::assume;
  Placements placement;
  std::vector<GroupTraffic> traffic;      // the all-to-alls and ring steps segments refer to
  bool distributed_optimizer = false;     // ZeRO-1: reduce-scatter gradients, all-gather parameters
  bool blocking_p2p = false;              // a pipeline send holds its sender until it lands (Megatron's synchronous p2p)
  Bytes p2p_gather_bytes = 0;             // scatter-gather: the receivers' NVLink all-gather of each transfer, 0 if none
  bool overlap_grad_reduce = true;        // false: gradient collectives wait for the rank's last backward
  int zero_stage = 0;                     // 2, 3: gradients reduce-scattered per layer; 3: parameters gathered per layer
  Seconds optimizer_s = 0;                // optimizer step on one GPU of a pipeline rank
  int gradient_bytes_per_param = 4;       // the width gradients are reduced in (2 under fp16)
  int parameter_gather_bytes = 2;         // the width updated parameters are all-gathered in (1: FP8)
  bool overlap_param_gather = false;      // true: gathered before each chunk's first forward, not after the optimizer
  /// Tied input embedding and output layer on different pipeline ranks: their gradients are summed
  /// by an all-reduce between the first and the last stage (per TP rank) before the optimizer step.
  Bytes embedding_sync_bytes = 0;
  int embedding_stage = 0;  // the model stage holding the input embedding: the first with language layers
  int channels = 2;                       // per collective, for TP, PP and DP flows
  bool nccl_tuner = false;                // every collective: NCCL's tuner picks (else the fastest simulated)
  /// collectives.algorithm naming an algorithm: it runs every collective it can (the fastest of its
  /// protocols, simulated alone); the rest as nccl_tuner says.
  const Algorithm* pinned = nullptr;
  /// Communication-computation interference (simulator/pass_times.hpp): the share of the GPU's SMs
  /// an NCCL collective holds while it runs (one CUDA block per channel, `channels` of them) and the
  /// share DeepEP's dispatch and combine hold; compute beside them keeps the rest. 0: none.
  double nccl_sm_share = 0;
  double deepep_sm_share = 0;
  bool free_communication = false;        // every transfer and collective takes no time
  /// Each GPU's compute speed relative to the catalog (workloads/variability.hpp), by GPU id;
  /// empty: every GPU as calibrated. A unit's GPUs run in lockstep, so it computes at its slowest's.
  std::vector<double> gpu_speed;
};

}  // namespace clustersim
