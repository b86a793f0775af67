#pragma once
// A training scenario as the user writes it (scenarios/*.yaml), resolved into values: the cluster,
// the model, the parallel layout, the schedule, the batch and the precision. Every inconsistency
// between them is a UserError here, before anything is simulated.
//
// Paths in a scenario (cluster, model, catalog, calibration) are relative to the scenario file. The
// GPU catalog is the scenario's `catalog:` (the CLI's --catalog) when given; else gpus.yaml beside
// the cluster file, else in the folder above it (scenarios/gpus.yaml for the shipped clusters), so a
// copied scenarios/ tree, or a cluster with its catalog beside it, carries its own.
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topologies/cluster_spec.hpp"
#include "topologies/node_groups.hpp"
#include "workloads/calibration_file.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/failure_model.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/layout.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model.hpp"
#include "workloads/moe_routing.hpp"
#include "workloads/schedule.hpp"
#include "workloads/variability.hpp"

namespace clustersim {

/// How an MoE model's tokens are routed and moved, from the scenario's `moe:` block.
struct MoeRunSpec {
  RoutingModel routing = RoutingModel::uniform;
  double hot_factor = 1;  // skewed / random: the hottest expert's load over the mean
  std::uint64_t seed = 0;
  bool deepep = false;    // node-limited DeepEP dispatch (network once per node, NVLink fan-out)
};

struct ScenarioSpec {
  std::string file;
  int parallel_line = 0;         // where `parallel:` is written, for errors about the whole layout
  std::string name;
  std::string cluster_file;      // resolved against the scenario's folder
  std::string catalog_file;      // the GPU catalog the cluster's GPU was read from
  /// The command line's `--set cluster.PATH=VALUE` overrides, applied to the cluster file as read.
  std::vector<std::string> cluster_overrides;
  ClusterSpec cluster;
  GpuModel gpu;                  // the cluster's GPU, from the catalog
  /// A heterogeneous cluster's node groups (the cluster file's `node_groups:`) and their GPU models,
  /// from the same catalog.
  std::vector<NodeGroup> node_groups;
  std::map<std::string, GpuModel> group_gpus;
  /// parallel.stage_gpus: the GPU model of each pipeline rank (empty: the nodes' own, in order).
  std::vector<std::string> stage_gpus;
  /// The nodes the job runs on, in rank order (stage_gpus places it); empty: the cluster's first.
  std::vector<int> nodes;
  std::optional<Calibration> calibration;  // `calibration: FILE`, already applied to cluster and gpu
  ModelSpec model;
  ParallelLayout layout;         // over the cluster's first layout.world() GPUs
  int virtual_stages = 1;        // v: model chunks per pipeline rank
  int ep = 1;                    // expert parallelism, carved out of dp: experts split over ep ranks
  bool cp_all_gather = false;    // context parallelism by all-gathering K and V (Llama 3), not a ring
  std::vector<int> stage_layers; // layers per model stage, in order (stage_split.hpp); 0 only on the first or last
  MoeRunSpec moe;
  bool sequence_parallel = false;
  bool distributed_optimizer = false;  // ZeRO-1: optimizer state sharded over DP
  int zero_stage = 0;            // 0 none; 1 optimizer state (= distributed_optimizer); 2 + gradients; 3 + parameters (FSDP)
  bool reshard_after_forward = true;  // ZeRO-3: free gathered parameters after forward, gather again for backward
  bool overlap_p2p_comm = true;     // false: a pipeline send holds its sender until it lands (Megatron-LM's synchronous p2p)
  // true: DP gradients reduce in buckets during the last backward (Megatron-Core's
  // --overlap-grad-reduce, PyTorch DDP); false: in one piece after the rank's whole backward.
  bool overlap_grad_reduce = true;
  // The dtype data-parallel gradients are kept and reduced in (fp32, bf16, fp16); empty: by
  // precision (gradient_reduce_bytes). Megatron-Core's grad_reduce_in_fp32, NeMo's grad_sync_dtype.
  std::string grad_reduce_dtype;
  // The dtype Adam keeps its state in (the parameters' copy and both moments): fp32 (Megatron-LM's
  // default, 12 B a parameter) or bf16 (6 B: Apex's DistributedFusedAdam `dtype`, NeMo's optim.dtype).
  std::string optimizer_dtype = "fp32";
  // true: the distributed optimizer's (or ZeRO-3's) parameter all-gathers move FP8 weights, 1 byte a
  // parameter (Megatron-Core's fp8_param_gather, NeMo's FP8 parameters); false: bf16, 2 bytes.
  bool fp8_param_gather = false;
  // true: the distributed optimizer's updated parameters are all-gathered during the next
  // iteration's forward, each model chunk's before its first forward (Megatron-Core's
  // overlap_param_gather with align_param_gather, NeMo's overlap_param_sync); false: after the
  // optimizer step, before the iteration ends.
  bool overlap_param_gather = false;
  // true: Megatron's asynchronous TP backward. A column-parallel linear's input-gradient all-reduce
  // (reduce-scatter under SP) runs during its weight-gradient GEMM, and under SP the re-gather of
  // its sequence-sharded input runs during its input-gradient GEMM. false: both block the compute
  // stream, as Megatron-LM did before it (2021).
  bool overlap_tp_backward = true;
  // true: the weight-gradient GEMM accumulates into the gradient buffer (Megatron's
  // --gradient-accumulation-fusion); false: each microbatch's weight gradients are added to it by a
  // separate pass over every parameter (Megatron-LM's DDP hook before 2022, and for fp16 gradients
  // until September 2022).
  bool gradient_accumulation_fusion = true;
  // collectives.algorithm: best (false) times each collective of an iteration with the fastest
  // simulated (algorithm, protocol); nccl (true) with what NCCL's tuner picks
  // (collectives/tuner_nccl.hpp); an algorithm's name pins it (pinned_algorithm) wherever it can
  // run the collective, NCCL's tuner picking the rest.
  bool nccl_tuner = false;
  std::string pinned_algorithm;  // empty: none pinned
  /// "nccl", "best" or the pinned algorithm: what collectives.algorithm says.
  std::string collectives_algorithm() const { return !pinned_algorithm.empty() ? pinned_algorithm : nccl_tuner ? "nccl" : "best"; }
  std::string schedule_name;
  const Schedule* schedule = nullptr;
  int global_batch = 0;          // sequences per iteration
  int microbatch = 0;            // sequences per microbatch
  std::string precision;         // a datatype of the GPU catalog ("bf16", "fp8", ...)
  Recompute recompute = Recompute::none;
  RecomputeModules recompute_modules;  // `recompute: {modules: [...]}` (recompute is then none)
  AttentionKernel attention = AttentionKernel::flash;  // "unfused" for pre-FlashAttention Megatron runs
  VariabilitySpec variability;   // `variability:`: per-GPU speeds, degraded and failed links
  ReliabilitySpec reliability;   // `reliability:`: failure rates, detection, relaunch, checkpoints (goodput)

  int gpus() const { return layout.world(); }
  /// The GPU model of a cluster node: its node group's, else the cluster's (`gpu`).
  const GpuModel& gpu_of_node(int node) const;
  /// Its name as the cluster file writes it (cluster.gpu for the cluster's own).
  const std::string& gpu_name_of_node(int node) const { return clustersim::gpu_of_node(node_groups, cluster.gpu, node); }
  /// The cluster node holding the job's GPU `job_gpu` (0 .. gpus() - 1).
  int node_of(int job_gpu) const;
  /// Whether some GPU of the job is of another model than `gpu`.
  bool heterogeneous() const;
  /// The job's GPUs by model, in the order first met: "256 H100-SXM", "128 H200-SXM + 128 H100-SXM".
  std::string gpus_text() const;
  /// FP8 or an MX format: GEMMs take 1-byte inputs, so whatever only feeds a GEMM (saved GEMM
  /// inputs, sequence-parallel input all-gathers, MoE dispatch) moves and stays in 1 byte.
  bool eight_bit_gemm_inputs() const { return is_eight_bit(precision); }
  /// Bytes per parameter of the gradients reduced across data parallelism. Megatron-LM reduces them
  /// in the parameters' dtype under fp16 (--accumulate-allreduce-grads-in-fp32 is off by default)
  /// and forces fp32 under bf16; FP8 and MX recipes keep bf16 parameters, so fp32 as well.
  /// parallel.grad_reduce_dtype overrides it (NeMo's MLPerf runs reduce bf16 gradients).
  int gradient_reduce_bytes() const { return std::strcmp(gradient_reduce_dtype(), "fp32") == 0 ? 4 : 2; }
  const char* gradient_reduce_dtype() const {
    if (!grad_reduce_dtype.empty()) return grad_reduce_dtype.c_str();
    return precision == "fp16" ? "fp16" : "fp32";
  }
  /// Bytes per parameter the data-parallel parameter all-gathers move.
  int parameter_gather_bytes() const { return fp8_param_gather ? 1 : 2; }
  /// Bytes per parameter of the gradient buffer the memory model holds: the stated reduce width,
  /// else fp32 main gradients (kept under fp16 as well, as the memory model always has).
  double gradient_buffer_bytes() const { return grad_reduce_dtype.empty() ? 4.0 : gradient_reduce_bytes(); }
  /// Bytes of one element of the optimizer's state (its parameter copy, Adam's m and v).
  int optimizer_state_element_bytes() const { return optimizer_dtype == "bf16" ? 2 : 4; }
  /// Bytes of optimizer state per parameter: the parameter copy and Adam's two moments.
  double optimizer_state_bytes_per_param() const { return 3.0 * optimizer_state_element_bytes(); }
  /// Microbatches each pipeline runs per iteration (m).
  int microbatches() const { return global_batch / (microbatch * layout.dp); }
  /// Tokens of one microbatch on one GPU of a context-parallel group.
  long local_tokens() const { return long(microbatch) * model.seq_len / layout.cp; }
  ScheduleShape schedule_shape() const { return {layout.pp, microbatches(), virtual_stages, 0}; }
  /// The first layer of model stage k.
  int first_layer(int stage) const;
  /// The first model stage with language-model layers: 1 when an encoder has a stage of its own.
  int first_language_stage() const {
    return model.encoder && model.encoder->placement == EncoderPlacement::own_stage ? 1 : 0;
  }
  /// The routing of one MoE layer over the representative expert-parallel group, `tokens_per_rank`
  /// tokens on each of its ranks.
  MoeRoutingSpec moe_routing(std::int64_t tokens_per_rank) const;
  /// The GPUs of the representative expert-parallel group: tp 0, pp 0, the first ep data-parallel ranks.
  std::vector<int> ep_group() const;
};

/// What is wrong with a scenario's layout against `gpus` and its model's shape (divisibility of
/// heads, FFN, KV heads, layers, sequence by 2 x cp; tp x cp x pp x dp = gpus), as the field under
/// `parallel` to change ("" for the whole layout) and what was expected; nullopt when it fits.
/// load_scenario fails at that field; `search` screens candidate layouts with it.
struct LayoutProblem {
  std::string field;
  std::string expected;
};
std::optional<LayoutProblem> layout_problem(const ScenarioSpec& s, int gpus, bool stage_split_given);

/// Reads, overrides and validates a scenario. Each of these is a UserError at the field to change:
/// gpus above the cluster's; tp x pp x dp != gpus (at parallel); layers not divisible by pp, or by
/// pp x virtual_stages, or an impossible uneven split (stage_split.hpp); heads not divisible by tp; kv_heads neither a multiple nor a divisor of tp
/// (tp > kv_heads is fine when each KV head is replicated on tp / kv_heads ranks, as Megatron-Core
/// does for GQA); global_batch not a multiple of microbatch x dp; a schedule that is unknown or
/// cannot run the shape (its not_applicable reason); a precision the GPU lacks; a cluster or model
/// file that cannot be opened; a cluster GPU missing from the catalog (at the cluster's gpu); any
/// unknown key.
/// `overrides` are "dotted.path=value" (the CLI's --set), applied to the YAML before validation; the
/// value is read as a YAML scalar, and an error in it names the scenario file and the field. An
/// override of a field the schema lacks is a UserError on "command line", field "--set".
/// "cluster.PATH=VALUE" sets a field of the cluster file instead (cluster.fabric.tiers.0.oversubscription=2).
/// A --set of tp, pp, cp or gpus without one of dp derives dp again from the GPU count; a layout may
/// also leave one of tp, pp and dp out of the file (it is derived the same way).
ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

/// A path a file names at `field`, relative to `dir` (the file's folder) unless absolute; one that
/// cannot be opened is an error at the field. Serving files (workloads/serving) name theirs so.
std::string resolve_scenario_path(const std::filesystem::path& dir, const YamlField& field);
/// The cluster `field` names, with "cluster.PATH=VALUE" `overrides` applied, and its GPU from
/// `catalog` or the catalog beside it: fills s.cluster_file, cluster, catalog_file, gpu and
/// cluster_overrides, as load_scenario does. Serving files read their cluster with it.
void read_scenario_cluster(const std::filesystem::path& dir, const YamlField& field, ScenarioSpec& s,
                           const std::vector<std::string>& overrides, const std::optional<YamlField>& catalog);

/// Every field --set can reach, as dotted paths ("parallel.tp"), for messages and listings.
std::vector<std::string> scenario_fields();

}  // namespace clustersim
