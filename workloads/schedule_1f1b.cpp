// 1F1B (PipeDream-Flush, Narayanan et al. 2021; Megatron's non-interleaved schedule): rank r runs
// p-r-1 warm-up forwards, then alternates one forward and one backward, then drains the backwards.
// Same bubble as GPipe, (p-1)(F+B), but rank 0 holds at most p microbatches instead of m.
#include <algorithm>

#include "workloads/schedule.hpp"

namespace clustersim {
namespace {

class OneFOneB final : public Schedule {
 public:
  std::string name() const override { return "1f1b"; }
  int chunks_required() const override { return 1; }
  bool runs_blocking_p2p() const override { return true; }
  std::string description() const override {
    return "one forward one backward after p-r-1 warm-up forwards; holds p microbatches";
  }

  std::optional<std::string> not_applicable(const ScheduleShape& shape) const override {
    if (shape.chunks != 1)
      return "1f1b runs one chunk per rank (got " + std::to_string(shape.chunks) + "); use interleaved";
    return Schedule::not_applicable(shape);
  }

  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    const int m = shape.microbatches;
    const int warmup = std::min(shape.stages - rank - 1, m);
    std::vector<PassOp> ops;
    for (int j = 0; j < warmup; ++j) ops.push_back({PassKind::forward, j, 0});
    for (int j = 0; j + warmup < m; ++j) {
      ops.push_back({PassKind::forward, j + warmup, 0});
      ops.push_back({PassKind::backward, j, 0});
    }
    for (int j = m - warmup; j < m; ++j) ops.push_back({PassKind::backward, j, 0});
    return ops;
  }
};

}  // namespace

const Schedule& one_f_one_b_schedule() {
  static const OneFOneB s;
  return s;
}

}  // namespace clustersim
