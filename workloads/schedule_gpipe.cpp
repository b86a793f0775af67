// GPipe (Huang et al. 2019): every microbatch's forward, then every backward. Bubble (p-1)(F+B),
// and a rank holds all m microbatches' activations at the turn.
#include "workloads/schedule.hpp"

namespace clustersim {
namespace {

class GPipe final : public Schedule {
 public:
  std::string name() const override { return "gpipe"; }
  int chunks_required() const override { return 1; }
  bool runs_blocking_p2p() const override { return true; }
  std::string description() const override {
    return "all forwards then all backwards; holds m microbatches";
  }

  std::optional<std::string> not_applicable(const ScheduleShape& shape) const override {
    if (auto why = Schedule::not_applicable(shape)) return why;
    if (shape.chunks != 1)
      return "gpipe runs one chunk per rank (got " + std::to_string(shape.chunks) + "); use interleaved";
    return std::nullopt;
  }

  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int) const override {
    std::vector<PassOp> ops;
    for (int j = 0; j < shape.microbatches; ++j) ops.push_back({PassKind::forward, j, 0});
    // Backward order does not change the makespan or the peak with uniform stages.
    for (int j = 0; j < shape.microbatches; ++j) ops.push_back({PassKind::backward, j, 0});
    return ops;
  }
};

}  // namespace

const Schedule& gpipe_schedule() {
  static const GPipe s;
  return s;
}

}  // namespace clustersim
