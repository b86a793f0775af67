#pragma once
// The search's screen: every parallel configuration of a scenario in a space, checked with the
// scenario loader's own rules (layout_problem, the schedules' not_applicable, the memory model) and
// timed without the engine: the same compute segments plan_iteration builds, collectives at NCCL's
// closed-form cost (collectives/tuner_nccl.hpp), the pipeline as the schedule's own table replayed
// with uniform passes (workloads/schedule.hpp), and the data-parallel gradient buckets in closed
// form. Per-layer costs are computed once per (tp, cp, microbatch, recompute, ZeRO, ep) and
// resolved once per pp, so the inner loop over virtual stages and schedules is arithmetic.
// `clustersim search` replays the best of them on the engine (cli/cmd_search.cpp).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "topologies/cluster.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

/// What `--vary` may name, in the order a configuration is written.
const std::vector<std::string>& search_dimensions();
/// What a search varies by default: every dimension, but pp where parallel.stage_gpus fixes it.
std::vector<std::string> default_search_dimensions(const ScenarioSpec& s);

/// The values each dimension takes; a dimension not varied holds the scenario's own value.
struct SearchSpace {
  std::vector<int> tp, pp, cp, ep, virtual_stages, microbatch, zero_stage;
  std::vector<Recompute> recompute;
  std::vector<const Schedule*> schedules;
};

/// The space a scenario spans when `vary` (names from search_dimensions()) are varied over the
/// values a run could use: tp, cp, ep powers of two (tp up to a node, cp up to 16), pp every
/// divisor of the GPUs up to the layers, virtual stages 1 to 8, microbatches powers of two up to
/// 16, every recompute mode, ZeRO stages 0 to 3, every registered schedule.
SearchSpace search_space(const ScenarioSpec& base, const std::vector<std::string>& vary);

/// A pipeline transfer of `bytes` from GPU a to GPU b as the screen prices it: over the bandwidth
/// NCCL's model gives the pair with `channels` channels (its network bandwidth across nodes, NVLink
/// inside one). NCCL's tuner does not model send/recv, so its predicted time cannot serve here.
Seconds screen_transfer_s(const Cluster& cluster, int a, int b, Bytes bytes, int channels);

struct Configuration {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, virtual_stages = 1, microbatch = 1, zero_stage = 0;
  Recompute recompute = Recompute::none;
  const Schedule* schedule = nullptr;
  /// The --set lines that make the scenario this configuration.
  std::vector<std::string> overrides() const;
  /// "tp 8 pp 8 dp 16 v 3 mb 1 full zero 0 interleaved" (cp and ep only when above 1).
  std::string text() const;
};

struct ScreenPrediction {
  Configuration config;
  Seconds iteration_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  Bytes memory_bytes = 0;       // the fullest pipeline stage, per GPU
  Seconds exposed_comm_s = 0;   // TP, CP, EP, ZeRO waits of the slowest rank, pipeline transfers, data-parallel tail
  Seconds bubble_s = 0;         // the pipeline's idle time on the slowest rank
};

/// How many candidates each rule removed, in the order they are checked, and one message of it.
struct ScreenRemoval {
  std::string rule;
  long count = 0;
  std::string example;  // the first configuration it removed and why
};

struct ScreenResult {
  long candidates = 0;                   // every point of the space
  std::vector<ScreenPrediction> valid;   // ranked, fastest first
  std::vector<ScreenRemoval> removed;    // by rule, in checking order
};

/// Screens a space. `progress(done, total)` is called now and then (may be empty).
class Screen {
 public:
  explicit Screen(const ScenarioSpec& base);
  ~Screen();
  ScreenResult run(const SearchSpace& space, const std::function<void(long, long)>& progress = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace clustersim
