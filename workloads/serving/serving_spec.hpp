#pragma once
// An inference-serving setup as the user writes it (scenarios/serving/*.yaml): the cluster, model
// and GPU catalog of a training scenario, and a `serving:` section with the replicas, their
// parallelism, the KV cache, the scheduler, the router, the request stream and the SLO. Every field
// is read and range-checked here; a bad one is a UserError at its line.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topologies/cluster_spec.hpp"
#include "topologies/node_groups.hpp"
#include "topologies/units.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/model.hpp"
#include "workloads/serving/replica_placement.hpp"

namespace clustersim {

/// One replica's GPUs: tp x pp x dp_attention, placed consecutively (replica r from GPU r x gpus()).
/// ep divides tp: the routed experts are split over ep ranks of the tensor-parallel group, each
/// expert's FFN over tp / ep of them. Data-parallel attention (dp_attention > 1, MoE models, pp 1;
/// SGLang's --enable-dp-attention, vLLM's data-parallel MoE deployment, DeepSeek-V3's serving): the
/// replica is dp_attention attention ranks of tp GPUs, each scheduling its own requests over its own
/// KV cache, while the routed experts split over ep ranks of all its GPUs (ep a multiple of
/// dp_attention dividing dp_attention x tp); every MoE layer's all-to-all joins the ranks, so they
/// step together.
/// redundant_experts: extra copies of hot routed experts over the ep ranks (DeepSeek's EPLB: 32 on
/// top of V3's 256 lets ep be 72 or 144); with them the routed tokens are taken as balanced.
/// dispatch: how the MoE all-to-alls move tokens: all_to_all (each token-expert copy to its GPU,
/// 2-byte activations both ways) or deepep (DeepEP's kernels as SGLang and DeepSeek serve: a token
/// once to each node it needs over the NIC, then over NVLink to each GPU there that holds one of its
/// experts; FP8 dispatch under an 8-bit precision, bf16 combine).
struct ServingParallel {
  int tp = 1, pp = 1, ep = 1, dp_attention = 1, redundant_experts = 0;
  bool deepep = false;
  /// Two-batch overlap (SGLang's --enable-two-batch-overlap, DeepSeek's serving): each attention
  /// rank splits its batch in two and runs one half's all-to-alls beside the other's compute.
  bool two_batch_overlap = false;
  int gpus() const { return tp * pp * dp_attention; }
  /// GPUs one routed expert's FFN is split over.
  int expert_tp() const { return tp * dp_attention / ep; }
};

struct KvCacheSpec {
  int dtype_bytes = 2;            // bf16 / fp16: 2; fp8: 1
  std::string dtype = "bf16";
  int block_tokens = 16;          // vLLM's default block size
  double memory_fraction = 0.9;   // of HBM the engine may use (vLLM's gpu_memory_utilization)
  double swap_space_GiB = 4;      // host memory per GPU for swapped-out blocks (vLLM's --swap-space)
  bool prefix_caching = false;    // full blocks of a shared prefix kept and reused (vLLM's enable_prefix_caching)
};

enum class SchedulePriority { decode, prefill };

/// What a request preempted for lack of KV blocks loses: recompute frees its blocks and prefills it
/// again; swap copies its blocks to host memory over PCIe and back when it resumes (vLLM's two
/// modes), falling back to recompute when the swap space is full.
enum class PreemptionMode { recompute, swap };

struct SchedulerSpec {
  long max_batch_tokens = 2048;    // token budget per iteration (vLLM's max_num_batched_tokens)
  long max_batch_requests = 256;   // requests per iteration (vLLM's max_num_seqs)
  bool chunked_prefill = true;     // Sarathi: a prompt split into chunks within the budget
  SchedulePriority priority = SchedulePriority::decode;
  PreemptionMode preemption = PreemptionMode::recompute;
  /// Batches a replica runs at once through its pipeline stages, each with its own scheduler over
  /// its share of the KV blocks (vLLM's virtual engines: pp of them). 1 to pp; unwritten: pp.
  int batches_in_flight = 0;
};

enum class RouterKind { round_robin, least_loaded, kv_aware };
const char* to_string(RouterKind r);

enum class ArrivalKind { poisson, gamma, trace };

/// A token count: fixed (min == max) or uniform over [min, max].
struct TokenCount {
  long min = 0, max = 0;
};

/// Prompts that start with one of `count` shared prefixes of `tokens` tokens (a system prompt, few-shot
/// examples): what prefix caching can reuse. tokens 0: none.
struct SharedPrefixSpec {
  long tokens = 0;
  int count = 1;
};

struct RequestStreamSpec {
  ArrivalKind arrival = ArrivalKind::poisson;
  double rate_per_s = 1;
  double cv = 1;                  // gamma: coefficient of variation of the inter-arrival times
  Seconds duration_s = 60;        // arrivals in [0, duration)
  TokenCount prompt_tokens, output_tokens;
  SharedPrefixSpec shared_prefix;
  std::uint64_t seed = 0;
  std::string trace_file;         // arrival: trace
  double time_scale = 1;          // arrival: trace: every arrival time multiplied by this (0.5: twice the rate)
  int line = 0;                   // where `requests:` is written
};

struct SloSpec {
  bool declared = false;
  Seconds ttft_s = 0, tpot_s = 0;  // 0: no target on that figure
};

/// Prefill and decode on separate replica pools; the prompt's KV cache moves between them.
struct DisaggregationSpec {
  bool enabled = false;
  int prefill_replicas = 0, decode_replicas = 0;
  std::string prefill_gpu, decode_gpu;  // each pool's GPU model on a heterogeneous cluster ("" : serving.gpu's, or any)
};

enum class SpeculativeMethod { none, draft, mtp };

/// Speculative decoding: `tokens` proposed per step (a draft model's sequential decode steps, or
/// MTP heads), each accepted with `acceptance_rate` while the ones before it were; the target
/// verifies them in one forward of tokens + 1 query positions per request.
struct SpeculativeSpec {
  SpeculativeMethod method = SpeculativeMethod::none;
  int tokens = 0;
  double acceptance_rate = 0;
  /// acceptance_rate written as a list: token i's own rate (drafts degrade along the proposal); empty
  /// when one rate serves every position.
  std::vector<double> acceptance_by_position;
  double acceptance(int position) const {
    return acceptance_by_position.empty() ? acceptance_rate : acceptance_by_position[std::size_t(position)];
  }
  std::optional<ModelSpec> draft_model;
  std::string draft_model_file;
};

/// The host's time per iteration: the serving engine's CPU scheduling the batch, preparing its
/// inputs, sampling, processing the outputs and calling the tensor-parallel workers, `iteration`
/// once plus `per_request` for each request in the batch (Vidur's CPU-overhead model). Serialized
/// with the GPU's forward (vLLM v0 and Sarathi-Serve: the next batch is scheduled only after this
/// one's outputs are processed) or overlapped with it (SGLang's overlap scheduler, vLLM V1's async
/// scheduling), where the iteration takes the longer of the two. Undeclared: no host time (the GPU's
/// work alone, as an engine that hides its host entirely).
struct HostSpec {
  bool declared = false;
  Seconds iteration_s = 0, per_request_s = 0;
  bool overlapped = false;
  Seconds time_s(long requests) const { return iteration_s + per_request_s * double(requests); }
};

struct ServingSpec {
  std::string file, name;
  std::string cluster_file, catalog_file;
  ClusterSpec cluster;
  GpuModel gpu;  // the cluster's
  /// A heterogeneous cluster's node groups and their models, from the same catalog.
  std::vector<NodeGroup> node_groups;
  std::map<std::string, GpuModel> group_gpus;
  std::string serving_gpu;  // serving.gpu: every replica on this model ("" : where they fall)
  std::vector<ReplicaPlacement> placement;  // per replica, prefill pool first
  ModelSpec model;
  std::string precision = "bf16";
  int replicas = 1;  // with disaggregation: prefill + decode replicas
  int serving_line = 0, parallel_line = 0;
  ServingParallel parallel;
  KvCacheSpec kv;
  SchedulerSpec scheduler;
  RouterKind router = RouterKind::round_robin;
  RequestStreamSpec requests;
  SloSpec slo;
  DisaggregationSpec disaggregation;
  SpeculativeSpec speculative;
  HostSpec host;
  Seconds series_interval_s = 0;  // 0: the horizon / 100

  int gpus() const { return replicas * parallel.gpus(); }
  /// The catalog entry of a model this cluster holds.
  const GpuModel& gpu_model(const std::string& name) const { return name == gpu.name ? gpu : group_gpus.at(name); }
  /// The fleet's GPUs per model, in the order the replicas first use them.
  std::vector<std::pair<std::string, int>> gpus_by_model() const;
  /// "24 H100-SXM", or "8 H100-SXM + 16 H200-SXM" when the replicas hold several models.
  std::string gpus_text() const;
  /// This spec as replica `r` sees it: `gpu` its own model (the iteration cost and memory read it).
  ServingSpec on_replica_gpu(int r) const;
};

/// Reads, overrides (--set serving.scheduler.max_batch_tokens=4096; cluster.PATH=VALUE for the
/// cluster file) and validates a serving file.
ServingSpec load_serving(const std::string& path, const std::vector<std::string>& overrides = {});

/// Every field --set can reach in a serving file, as dotted paths.
std::vector<std::string> serving_fields();

/// "500ms", "2 s", "50us": a duration with its unit (s, ms, us); anything else is an error at `f`.
Seconds parse_duration(const YamlField& f);

}  // namespace clustersim
