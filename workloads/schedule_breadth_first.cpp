// Breadth-first (looped) pipeline schedule (Lamy-Poirier, "Breadth-First Pipeline Parallelism",
// MLSys 2023): every microbatch of the batch through chunk 0, then all through chunk 1, and so on.
// It is Megatron's interleaved 1F1B with the microbatch group g = m, so this delegates to it. Same
// (p-1)(F+B)/v bubble, but a rank holds up to (v-1)m + 2(p-r-1) + 1 chunk activations.
#include "workloads/schedule.hpp"

namespace clustersim {

const Schedule& interleaved_schedule();

namespace {

class BreadthFirst final : public Schedule {
 public:
  std::string name() const override { return "breadth-first"; }
  std::string description() const override {
    return "looped schedule: interleaved 1F1B with the whole batch as one microbatch group (g = m)";
  }

  std::optional<std::string> not_applicable(const ScheduleShape& shape) const override {
    if (auto why = Schedule::not_applicable(shape)) return why;
    if (shape.chunks < 2) return "breadth-first needs at least 2 chunks per rank; with one use gpipe or 1f1b";
    if (shape.microbatches < shape.stages)
      return "breadth-first needs at least p = " + std::to_string(shape.stages) + " microbatches, got " +
             std::to_string(shape.microbatches);
    if (shape.group_size != 0 && shape.group_size != shape.microbatches)
      return "breadth-first runs all m = " + std::to_string(shape.microbatches) +
             " microbatches as one group; got group size " + std::to_string(shape.group_size) + " (use interleaved)";
    return interleaved_schedule().not_applicable(as_interleaved(shape));
  }

  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    return interleaved_schedule().rank_ops(as_interleaved(shape), rank);
  }

 private:
  static ScheduleShape as_interleaved(ScheduleShape shape) {
    shape.group_size = shape.microbatches;
    return shape;
  }
};

}  // namespace

const Schedule& breadth_first_schedule() {
  static const BreadthFirst s;
  return s;
}

}  // namespace clustersim
