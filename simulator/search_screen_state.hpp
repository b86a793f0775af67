#pragma once
// Inside the screen (search_screen.hpp), shared by its files, one idea each:
//   search_space.cpp            the space and a configuration's --set lines;
//   search_screen_costs.cpp     per-layer pass costs (computed once per tp, cp, microbatch,
//                               recompute, ZeRO, ep), collectives in closed form, replayed schedules;
//   search_screen.cpp           Screen::run: the levels of the space, each level's rules;
//   search_screen_candidate.cpp one (virtual stages, schedule) candidate: its schedule rules,
//                               memory, and iteration time.
// Not a public interface: only these files include it.
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "simulator/search_screen.hpp"
#include "workloads/plan_iteration.hpp"

namespace clustersim {

/// One pass kind's time on one GPU for one microbatch, and how much of it is waiting on others.
struct PassCost {
  Seconds f = 0, b = 0, bi = 0, w = 0;           // forward, full backward, input gradient, weight gradient
  Seconds f_wait = 0, b_wait = 0, bi_wait = 0, w_wait = 0;
  PassCost& operator+=(const PassCost& o) {
    f += o.f, b += o.b, bi += o.bi, w += o.w;
    f_wait += o.f_wait, b_wait += o.b_wait, bi_wait += o.bi_wait, w_wait += o.w_wait;
    return *this;
  }
};
inline PassCost operator*(double k, PassCost c) {
  c.f *= k, c.b *= k, c.bi *= k, c.w *= k;
  c.f_wait *= k, c.b_wait *= k, c.bi_wait *= k, c.w_wait *= k;
  return c;
}

/// The segments of one pp = 1 plan, split into one dense layer, one MoE layer, and what only the
/// first and the last stage run (embedding; output layer, loss, MTP).
struct SegmentLists {
  std::vector<Segment> f, bi, bw;
};
struct RawCosts {
  IterationPlan plan;  // of the pp = 1 probe: its traffic and groups
  SegmentLists dense, moe, first, last;
  double dense_params_per_layer = 0, expert_params_per_moe_layer = 0, embedding_params = 0;
  Bytes activation_bytes = 0;  // per GPU, sent between stages
  Bytes p2p_gather_bytes = 0;
  /// On a job that holds GPUs of several models: the compute of one dense layer, one MoE layer,
  /// the first stage's extra and the last stage's, on each model (by name), forward and backward.
  std::map<std::string, std::array<Seconds, 4>> compute_on;
};

struct Resolved {
  PassCost dense, moe, first, last;
};

struct ReplayShape {
  double makespan_units = 0;  // with F = 1, B = 2 (W = 1 where the schedule splits backward)
  std::vector<double> in_flight;              // per rank
  std::vector<std::vector<int>> held_by_chunk;  // per rank and chunk
};

/// What one (tp, cp, pp, ep, microbatch, recompute, ZeRO) point of the space fixes for every
/// (virtual stages, schedule) candidate under it: its layout and groups, its pass costs, its
/// pipeline transfer.
struct LayoutPoint {
  Configuration config;      // virtual_stages and schedule still to be set
  int microbatches = 0;      // per iteration, per pipeline
  const ModelSpec* local = nullptr;  // what one context-parallel rank holds of each sequence
  ParallelLayout layout;
  std::vector<int> dp_group;
  const RawCosts* raw = nullptr;
  Resolved costs;
  Seconds p2p_s = 0;         // one microbatch's activations to the next stage
  /// Each pipeline rank's GPU models (names) when the job holds several; empty when it holds one.
  std::vector<std::vector<std::string>> rank_models;
};

/// A candidate a rule removed: the rule's index in ScreenResult::removed and why.
struct Rejection {
  int rule = 0;
  std::string why;
};

struct Screen::State {
  ScenarioSpec base;
  Cluster cluster;
  int gpus = 0;
  int channels = 2;
  double nccl_share = 0;
  double peak_flops = 0;     // per GPU: the mean over the job's GPUs when they are of several models
  /// The job's GPU models by name, the scenario's own first, when it holds several; else empty.
  std::map<std::string, const GpuModel*> models;
  double tokens_per_iteration = 0, flops_per_token = 0;
  std::map<std::tuple<int, int, int, int, int, int>, std::shared_ptr<RawCosts>> raw;
  std::map<std::tuple<const Schedule*, int, int, int>, std::optional<ReplayShape>> replays;
  std::map<std::tuple<int, std::vector<int>, Bytes, bool>, Seconds> collectives;  // (op, group, bytes, tuned)
  std::map<const Schedule*, bool> split;

  explicit State(const ScenarioSpec& s);

  /// A collective's closed-form time: what NCCL's tuner predicts for its pick (TP, CP, ZeRO:
  /// the engine times that pick), or NCCL's ring with Simple (data-parallel gradients, which the
  /// engine always runs so).
  Seconds collective_s(Op op, const std::vector<int>& group, Bytes bytes, bool tuned);
  /// A point-to-point transfer of `bytes` from GPU a to GPU b (screen_transfer_s).
  Seconds transfer_s(int a, int b, Bytes bytes) { return screen_transfer_s(cluster, a, b, bytes, channels); }
  /// The scenario with a configuration's layout (nothing else of it checked or resolved).
  ScenarioSpec with(const Configuration& c, int pp_override = 0) const;
  /// The per-layer segments of a configuration's (tp, cp, microbatch, recompute, ZeRO, ep), cached.
  const RawCosts& raw_costs(const Configuration& c);
  /// One list of segments timed as PassTimes::pass times it, with closed-form communication;
  /// `zero_hiding` (layer -> compute its ZeRO collectives have hidden under) carries over to the
  /// next list of the same pass.
  std::pair<Seconds, Seconds> timed(const RawCosts& raw, const std::vector<Segment>& list, bool weight_in_pass,
                                    const std::vector<int>& tp_group, const std::vector<int>& cp_group,
                                    const std::vector<int>& dp_group, const std::vector<int>& expert_group,
                                    std::map<int, Seconds>& zero_hiding);
  PassCost pass_cost(const RawCosts& raw, const SegmentLists& l, const std::vector<int>& tp, const std::vector<int>& cp,
                     const std::vector<int>& dp, const std::vector<int>& ex);
  /// The cached replay (nullptr when the schedule cannot run the shape); its address stays valid.
  const ReplayShape* replay_shape(const Schedule& s, int p, int m, int v);

  /// The groups, pass costs and pipeline transfer of a point of the space (search_screen_costs.cpp).
  void resolve(LayoutPoint& point);
  /// One candidate under `point`, with `point.config`'s virtual stages and schedule set: its
  /// prediction, or the rule that removes it (search_screen_candidate.cpp). A rejection's `why` is
  /// written only for a rule that has removed nothing yet (`removed`), the one example kept.
  std::variant<ScreenPrediction, Rejection> evaluate(const LayoutPoint& point, const std::vector<ScreenRemoval>& removed);
};

}  // namespace clustersim
