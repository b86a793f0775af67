// MPI's recursive algorithms on a power-of-two group (Thakur, Rabenseifner and Gropp, "Optimization
// of Collective Communication Operations in MPICH", IJHPCA 2005), partner i XOR d in every step:
//   recursive_doubling  all-reduce: log2 n steps, each exchanging the whole buffer with the partner
//                       2^k away (latency-optimal, for small messages); all-gather: step k
//                       exchanges the 2^k blocks of S/n gathered so far.
//   halving_doubling    reduce-scatter by recursive halving (step k exchanges S / 2^(k+1) with the
//                       partner n / 2^(k+1) away), and all-reduce as Rabenseifner's: that
//                       reduce-scatter, then recursive-doubling all-gather back up; 2 log2 n steps
//                       and 2(n-1)/n of the buffer each way, the ring's bandwidth.
// MPICH folds a non-power-of-two group into one first (extra steps); not modelled: such groups are
// refused. Each step pays the protocol's hop latency (NVLink or network) and the route's; the
// first also the protocol's ring base latency.
#include "collectives/pipeline.hpp"
#include "collectives/steps.hpp"

namespace clustersim {
namespace {

/// Every rank exchanges `bytes` with rank XOR `distance`.
Step exchange(int n, int distance, double bytes) {
  Step step;
  for (int i = 0; i < n; ++i) step.push_back({i, i ^ distance, bytes});
  return step;
}

class Recursive final : public Algorithm {
 public:
  explicit Recursive(bool halving) : halving_(halving) {}
  std::string name() const override { return halving_ ? "halving_doubling" : "recursive_doubling"; }
  std::string description() const override {
    return halving_ ? "MPI's recursive halving reduce-scatter, then recursive doubling all-gather (Rabenseifner)"
                    : "MPI's recursive doubling: log2 n exchanges, for small messages";
  }
  std::vector<Op> ops() const override {
    return halving_ ? std::vector<Op>{Op::all_reduce, Op::reduce_scatter} : std::vector<Op>{Op::all_reduce, Op::all_gather};
  }
  bool in_iteration_auto() const override { return false; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    const std::size_t n = req.ranks.size();
    if (n & (n - 1)) return name() + " needs a power-of-two number of ranks, not " + std::to_string(n);
    return std::nullopt;
  }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    const int n = static_cast<int>(req.ranks.size());
    if (n < 2) return {};
    const int levels = ceil_log2(n);
    const double size = static_cast<double>(req.size_bytes);
    std::vector<Step> steps;
    if (halving_) {
      for (int k = 0; k < levels; ++k) steps.push_back(exchange(n, n >> (k + 1), size / (2 << k)));
      if (req.op == Op::all_reduce)
        for (int k = levels - 1; k >= 0; --k) steps.push_back(exchange(n, n >> (k + 1), size / (2 << k)));
    } else {
      for (int k = 0; k < levels; ++k)
        steps.push_back(exchange(n, 1 << k, req.op == Op::all_reduce ? size : size * (1 << k) / n));
    }
    StepLatency latency;
    latency.first_step_s = req.protocol.base_latency(AlgoFamily::ring);
    return lower_steps(router, req, steps, latency);
  }

 private:
  bool halving_;
};

}  // namespace

const Algorithm& recursive_doubling_algorithm() {
  static Recursive instance(false);
  return instance;
}

const Algorithm& halving_doubling_algorithm() {
  static Recursive instance(true);
  return instance;
}

}  // namespace clustersim
