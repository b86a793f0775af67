#pragma once
// A scenario simulated end to end: its cluster and engine, its iteration plan replayed, and the
// figures a user asks for - iteration time, throughput, model FLOP/s, MFU, memory and where each
// pipeline stage's time went.
#include <string>
#include <vector>

#include "simulator/flapping.hpp"
#include "simulator/iteration.hpp"
#include "simulator/link_tiers.hpp"
#include "topologies/user_error.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

struct StageReport {
  int pipeline_rank = 0;
  int gpu = 0;
  StageMemory memory;
  RankBreakdown time;
  std::string gpu_model;  // its GPUs' model ("H100"; "H100+H200" where replicas differ)
};

struct RunReport {
  std::string scenario;
  Seconds iteration_s = 0;
  double tokens_per_s = 0;
  /// Megatron's figure (Narayanan et al. eq. 3): the FLOPs the run executes, recomputation included,
  /// per second per GPU.
  double model_tflops_per_gpu = 0;
  /// PaLM's model FLOPs utilisation: 6N + 12 l s h FLOPs per token (no recomputation) per second,
  /// over the GPUs' dense peak in the run's precision.
  double mfu = 0;
  std::vector<StageReport> stages;
  IterationResult iteration;
  /// The first GPU of each pipeline rank of the reported replica: the GPU its events name.
  std::vector<int> rank_gpus;
  /// Each link tier's load over the iteration, for the traffic the engine replayed (folded
  /// replicas' own traffic is not on the fabric); empty unless asked for (link_tiers below).
  std::vector<LinkTierLoad> link_tiers;
  Bytes hbm_bytes = 0;  // of one GPU
  /// The job's slowest GPU under variability and its speed (-1 and 1 when every GPU is as calibrated).
  int slowest_gpu = -1;
  double slowest_speed = 1;
  /// Flapping links in this draw (variability.flapping_links); empty without them. iteration_s
  /// includes flaps.stall_s, which the breakdowns (iteration) do not.
  FlapDraw flaps;
};

/// A stage that does not fit in GPU memory: the user's error, told apart from the others so that
/// `validate` can report such a row as not fitting and still fail on a bad file.
class OutOfMemoryError : public UserError {
 public:
  using UserError::UserError;
};

/// The fold a run uses: `asked`, except that variability turns the unproven `assume` into `exact`
/// (replicas are unlike, so replica 0 cannot stand for the rest). run_training applies it; the
/// CLI asks it too, to print and record the fold it ran.
FoldMode fold_under(const VariabilitySpec& variability, FoldMode asked);
/// The same for a scenario: a job on GPUs of several models (a heterogeneous cluster) is unlike
/// across replicas too.
FoldMode fold_under(const ScenarioSpec& scenario, FoldMode asked);

/// Fills what follows from a simulated iteration (report.iteration and iteration_s set): throughput,
/// MFU, the slowest GPU, each stage's time and `memory`, and the GPUs the reported replica's events
/// name. run_training's, and each job's of a jobs scenario (multi_job.hpp).
void complete_report(RunReport& report, const ScenarioSpec& scenario, const IterationPlan& plan,
                     const std::vector<StageMemory>& memory);

/// Simulates one iteration. A scenario's variability (workloads/variability.hpp) degrades and fails
/// its links before anything is routed and sets each GPU's speed; under it `FoldMode::assume`
/// becomes exact, since variability is what makes replicas unlike. Memory beyond the GPU's HBM is an OutOfMemoryError naming the stage,
/// its largest part and the shortfall, unless allow_oom. `link_tiers` also sums each link tier's
/// bytes (one more pass over the flows' routes).
/// `trace`, when given, receives the iteration's trace as it is accounted (trace_sink.hpp).
RunReport run_training(const ScenarioSpec& scenario, bool allow_oom, const KernelTable* kernels = nullptr,
                       FoldMode fold = FoldMode::assume, Solver solver = Solver::fluid,
                       Placements placement = {}, bool link_tiers = false,
                       TraceSink* trace = nullptr);

}  // namespace clustersim
