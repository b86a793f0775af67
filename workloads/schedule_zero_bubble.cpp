// The handcrafted zero-bubble schedules ZB-H1 and ZB-H2 (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024, section 2 and Figure 3). The backward is split into its input gradient
// (B), which the previous stage waits for, and its weight gradient (W), which nobody waits for and
// so can fill bubbles. Both follow one pattern on rank r: `warmup` forwards, then for each
// microbatch its B, the oldest delayed W once `delay` Bs have run, and the next forward; the
// remaining Ws close the table.
//
// ZB-H1 keeps 1F1B's order and memory (p - r forwards before the first B) and delays rank r's Ws by
// r, so the later ranks, which start their Bs sooner, spend the cool-down on Ws: the bubble drops
// from 1F1B's (p-1)(F+B) to (p-1)(F+B-2W), with B the full backward. ZB-H2 fills the warm-up with
// 2(p-r)-1 forwards (rank 0 holds 2p-1) and delays rank r's Ws by 2r+1, which packs rank r's passes
// into one unbroken span starting at its first forward: a parallelogram whose bubble
// (p-1)(F+B-3W) is zero when F = B - W = W.
#include <algorithm>

#include "workloads/schedule.hpp"

namespace clustersim {
namespace {

std::vector<PassOp> delayed_weight_table(int m, int warmup, int delay) {
  std::vector<PassOp> ops;
  int forwards = std::min(warmup, m), weights = 0;
  for (int j = 0; j < forwards; ++j) ops.push_back({PassKind::forward, j, 0});
  for (int j = 0; j < m; ++j) {
    ops.push_back({PassKind::backward_input, j, 0});
    if (j >= delay) ops.push_back({PassKind::backward_weight, weights++, 0});
    if (forwards < m) ops.push_back({PassKind::forward, forwards++, 0});
  }
  while (weights < m) ops.push_back({PassKind::backward_weight, weights++, 0});
  return ops;
}

class ZeroBubbleH1 final : public Schedule {
 public:
  std::string name() const override { return "zb-h1"; }
  std::string description() const override {
    return "zero bubble H1: 1F1B with B and W split, W delayed by rank; bubble (p-1)(F+B-2W), holds p";
  }
  int chunks_required() const override { return 1; }
  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    return delayed_weight_table(shape.microbatches, shape.stages - rank, rank);
  }
};

class ZeroBubbleH2 final : public Schedule {
 public:
  std::string name() const override { return "zb-h2"; }
  std::string description() const override {
    return "zero bubble H2: 2(p-r)-1 warm-up forwards, W delayed by 2r+1; bubble (p-1)(F+B-3W), holds 2p-1";
  }
  int chunks_required() const override { return 1; }
  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    return delayed_weight_table(shape.microbatches, 2 * (shape.stages - rank) - 1, 2 * rank + 1);
  }
};

}  // namespace

const Schedule& zb_h1_schedule() {
  static const ZeroBubbleH1 s;
  return s;
}

const Schedule& zb_h2_schedule() {
  static const ZeroBubbleH2 s;
  return s;
}

}  // namespace clustersim
