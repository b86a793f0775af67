// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv 2401.10241, section 6): two chunks a
// rank in a V, rank r holding stages r and 2p-1-r, so a microbatch runs down the ranks and back up
// and the last stage sits on rank 0. With B and W split and F = B = W, every rank runs without a
// gap from its first forward to its last W, and holds 2p chunk activations (p microbatches, as
// 1F1B). The order is the authors' handcrafted one (sail-sg/zero-bubble-pipeline-parallelism, tag
// zero-bubble-v0.1.0, handcrafted_zb_v.py): the table is built for max(m, 2p-1) microbatches and
// the padding ones dropped, so any m runs; below 2p-1 it has bubbles.
#include <algorithm>

#include "workloads/schedule.hpp"

namespace clustersim {
namespace {

// Rank r's passes, counting microbatches per (kind, chunk) in order. Ws run oldest first per chunk.
class Table {
 public:
  void add(PassKind kind, int chunk) { ops.push_back({kind, next_[static_cast<int>(kind)][chunk]++, chunk}); }
  int count(PassKind kind, int chunk) const { return next_[static_cast<int>(kind)][chunk]; }
  std::vector<PassOp> ops;

 private:
  int next_[4][2] = {};
};

class ZeroBubbleV final : public Schedule {
 public:
  std::string name() const override { return "zb-v"; }
  std::string description() const override {
    return "zero bubble V: 2 chunks per rank in a V (stages r and 2p-1-r); no bubble when F = B = W, holds p";
  }
  int chunks_required() const override { return 2; }

  int chunk_stage(const ScheduleShape& shape, int rank, int chunk) const override {
    return chunk == 0 ? rank : 2 * shape.stages - 1 - rank;
  }

  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    const int p = shape.stages, m = shape.microbatches, n = std::max(m, 2 * p - 1);
    const PassKind F = PassKind::forward, B = PassKind::backward_input, W = PassKind::backward_weight;
    Table t;
    // Warm-up: fill the V's first leg, then interleave the second leg's forwards as they arrive.
    for (int i = 0; i < 2 * (p - rank) - 1; ++i) t.add(F, 0);
    for (int i = 0; i < rank; ++i) t.add(F, 1), t.add(F, 0);
    for (int i = 0; i < p - rank; ++i) t.add(F, 1), t.add(B, 1), t.add(W, 1);
    // Steady: one microbatch through both chunks per round, each B followed by its W.
    while (t.count(F, 1) < t.count(F, 0) || t.count(F, 0) < n) {
      if (t.count(F, 0) < n) t.add(F, 0);
      t.add(B, 0), t.add(W, 0), t.add(F, 1), t.add(B, 1), t.add(W, 1);
    }
    // Cool-down: the remaining Bs first (others wait on them), Ws where they would idle, then the rest.
    for (int i = 0; i < rank; ++i) t.add(B, 0), t.add(B, 1);
    for (int i = 0; i < p - rank; ++i) t.add(B, 0), t.add(W, 0);
    while (t.count(W, 1) < n) t.add(W, 1);
    while (t.count(W, 0) < n) t.add(W, 0);
    std::erase_if(t.ops, [m](const PassOp& op) { return op.microbatch >= m; });
    return t.ops;
  }
};

}  // namespace

const Schedule& zb_v_schedule() {
  static const ZeroBubbleV s;
  return s;
}

}  // namespace clustersim
