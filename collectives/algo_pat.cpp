// PAT, Parallel Aggregated Trees (NCCL >= 2.23, all-gather and reduce-scatter with one GPU per
// node; NCCL's tuner enables it only when nNodes == nRanks, src/graph/tuning.cc). As its paper
// describes it (S. Jeaugey, "PAT: a new algorithm for all-gather and reduce-scatter operations at
// scale", arXiv:2506.20252, 2025), it is Bruck's algorithm with the dimensions reversed: the far
// dimension first, so the large late steps go to near ranks, with aggregation bounded by NCCL's
// intermediate buffers. A logarithmic number of network steps, and each rank sends and receives
// (n-1)/n of the buffer in all: the ring's bandwidth with a log-depth latency.
//
// Lowering (lower_steps): all-gather step k = 0 .. ceil(log2 n)-1 sends min(2^k, n - 2^k) blocks of
// S/n to the rank 2^(L-1-k) further on; reduce-scatter runs the same steps in reverse order.
// Not modelled: the extra steps NCCL takes when a block no longer fits its buffers (large sizes,
// where bandwidth hides their latency). Each step moves in lockstep (one flow per channel over every
// send's route) unless the request asks for one flow per send (steps.hpp: up to 2% slower, 80x
// faster on 2,048 nodes).
//
// Latency is NCCL's cost model for PAT (src/graph/tuning.cc, NCCL 2.2x; Simple protocol only):
// base 8 us, log2(n) x (network PAT hop 14 us / 3.5), and a term linear in the ranks, 2.8 us each,
// that the tuner's own comment hopes to remove. Plus each message's route latency.
#include <algorithm>

#include "collectives/pipeline.hpp"
#include "collectives/steps.hpp"

namespace clustersim {
namespace {

constexpr Seconds kPatBaseLatency_s = 8e-6;
constexpr Seconds kPatStepLatency_s = 14e-6 / 3.5;
constexpr Seconds kPatPerRankLatency_s = 2.8e-6;

class Pat final : public Algorithm {
 public:
  std::string name() const override { return "pat"; }
  std::string description() const override {
    return "NCCL's Parallel Aggregated Trees: reversed-dimension Bruck, log-depth, one GPU per node";
  }
  std::vector<Op> ops() const override { return {Op::all_gather, Op::reduce_scatter}; }
  bool runs_protocol(const Protocol& p) const override { return p.name == "Simple" || p.name == "ideal"; }
  bool in_iteration_auto() const override { return false; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    const std::size_t nodes = ranks_by_node(cluster, req.ranks).size();
    if (nodes != req.ranks.size())
      return "pat needs one GPU per node (as NCCL enables it); these " + std::to_string(req.ranks.size()) +
             " ranks sit on " + std::to_string(nodes) + " nodes";
    return std::nullopt;
  }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    const int n = static_cast<int>(req.ranks.size());
    if (n < 2) return {};
    const int levels = ceil_log2(n);
    const double block = static_cast<double>(req.size_bytes) / n;
    std::vector<Step> steps;
    for (int k = 0; k < levels; ++k) {
      const int distance = 1 << (levels - 1 - k), blocks = std::min(1 << k, n - (1 << k));
      Step step;
      for (int i = 0; i < n; ++i) step.push_back({i, (i + distance) % n, blocks * block});
      steps.push_back(std::move(step));
    }
    if (req.op == Op::reduce_scatter) std::reverse(steps.begin(), steps.end());
    const bool simple = req.protocol.name == "Simple";
    StepLatency latency;
    latency.first_step_s = simple ? kPatBaseLatency_s + kPatPerRankLatency_s * n : 0;
    latency.per_step_s = simple ? kPatStepLatency_s : 0;
    latency.protocol_hop = false;
    return lower_steps(router, req, steps, latency, req.flows);
  }
};

}  // namespace

const Algorithm& pat_algorithm() {
  static Pat instance;
  return instance;
}

}  // namespace clustersim
