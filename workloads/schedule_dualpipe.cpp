// DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, section 3.2.1) and DualPipeV, its V-shaped
// "cut-in-half" variant (Sea AI Lab), after the reference implementation github.com/deepseek-ai/
// DualPipe (dualpipe.py, dualpipev.py). Both run the same eight steps on every rank, whose counts
// are formulas in the rank; the main step pairs one microbatch's forward with another's full
// backward as one overlapped F&B unit, whose communication hides under the other's compute.
//
// DualPipe: p ranks, p stages, each held twice. Microbatches 0..m/2-1 enter at rank 0 and run down
// the ranks (chunk 0, stage r on rank r); m/2..m-1 enter at rank p-1 and run up (chunk 1, stage
// p-1-r). Rank r and rank p-1-r run mirrored tables. Needs even p and an even m >= 2p (the
// reference's asserts). DualPipeV: p ranks, 2p stages in a V (chunk 0 stage r, chunk 1 stage
// 2p-1-r, as ZB-V), every microbatch entering at rank 0; needs m >= 2p, any p.
// The reference's README gives, for S stages: bubble (S/2-1)(F&B+B-3W), two stages' parameters
// per rank, S+1 stage activations at peak. The replay meets the bubble exactly when F = B - W = W.
#include <algorithm>
#include <deque>
#include <functional>
#include <utility>

#include "workloads/schedule.hpp"

namespace clustersim {
namespace {

// Where the k-th pass of a phase goes: its microbatch and chunk on this rank.
using Placement = std::function<PassOp(int phase, int k)>;

class Table {
 public:
  explicit Table(Placement place) : place_(std::move(place)) {}
  void forward(int phase, bool overlap = false) {
    PassOp op = place_(phase, forwards_[phase]++);
    op.overlap_next = overlap;
    ops.push_back(op);
  }
  // A split backward queues its W (the reference's WeightGradStore); weight() runs the oldest.
  void backward(int phase, bool split = false) {
    PassOp op = place_(phase, backwards_[phase]++);
    op.kind = split ? PassKind::backward_input : PassKind::backward;
    ops.push_back(op);
    if (split) weights_.push_back({PassKind::backward_weight, op.microbatch, op.chunk});
  }
  void weight() {
    ops.push_back(weights_.front());
    weights_.pop_front();
  }
  void overlapped(int forward_phase, int backward_phase) {
    forward(forward_phase, true);
    backward(backward_phase);
  }
  std::vector<PassOp> ops;

 private:
  Placement place_;
  int forwards_[2] = {}, backwards_[2] = {};
  std::deque<PassOp> weights_;
};

// One rank's eight steps. `half`: ranks from an end of the pipe to its middle (DualPipe p/2,
// DualPipeV p); `hr`: this rank's distance from its end; `count`: microbatches per phase. Phase 0 is
// the direction whose warm-up reaches this rank first.
std::vector<PassOp> eight_steps(int half, int hr, int count, Placement place) {
  Table t(std::move(place));
  const int outer = half - hr - 1;  // ranks between this one and the middle
  for (int i = 0; i < 2 * outer; ++i) t.forward(0);
  for (int i = 0; i < hr + 1; ++i) t.forward(0), t.forward(1);
  for (int i = 0; i < outer; ++i) t.backward(1, true), t.weight(), t.forward(1);
  for (int i = 0; i < count - 2 * half + hr + 1; ++i) {
    if (i == 0 && outer == 0) {
      // The middle rank's first pair runs apart: the other half waits on this forward's output, so
      // it leaves before the backward runs, which shortens the bubble.
      t.forward(0);
      t.backward(1);
    } else {
      t.overlapped(0, 1);
    }
    t.overlapped(1, 0);
  }
  for (int i = 0; i < outer; ++i) t.backward(1), t.overlapped(1, 0);
  // The drain: the later half of these backwards split, so their Ws fill the last steps' waits.
  bool split = false;
  for (int i = 0; i < hr + 1; ++i) {
    if (i == (hr + 1) / 2 && hr % 2 == 1) split = true;
    t.backward(1, split);
    if (i == (hr + 1) / 2 && hr % 2 == 0) split = true;
    t.backward(0, split);
  }
  for (int i = 0; i < outer; ++i) t.weight(), t.backward(0, true);
  for (int i = 0; i < hr + 1; ++i) t.weight();
  return t.ops;
}

class DualPipe final : public Schedule {
 public:
  std::string name() const override { return "dualpipe"; }
  std::string description() const override {
    return "DualPipe: half the microbatches from each end, F&B overlapped; bubble (p/2-1)(F&B+B-3W), holds p+1";
  }
  int chunks_required() const override { return 2; }

  std::optional<std::string> not_applicable(const ScheduleShape& shape) const override {
    if (auto why = Schedule::not_applicable(shape)) return why;
    const int p = shape.stages, m = shape.microbatches;
    if (p % 2 != 0) return "dualpipe needs an even number of pipeline ranks, got p = " + std::to_string(p);
    if (m % 2 != 0 || m < 2 * p)
      return "dualpipe needs an even m of at least 2p = " + std::to_string(2 * p) +
             " microbatches (half enter at each end), got m = " + std::to_string(m);
    return std::nullopt;
  }

  int chunk_stage(const ScheduleShape& shape, int rank, int chunk) const override {
    return chunk == 0 ? rank : shape.stages - 1 - rank;
  }
  int model_stages(const ScheduleShape& shape) const override { return shape.stages; }

  std::vector<Slot> route(const ScheduleShape& shape, int microbatch) const override {
    const int p = shape.stages;
    std::vector<Slot> slots;
    for (int i = 0; i < p; ++i)
      slots.push_back(microbatch < shape.microbatches / 2 ? Slot{i, 0} : Slot{p - 1 - i, 1});
    return slots;
  }

  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    const int p = shape.stages, half_m = shape.microbatches / 2;
    // The second half of the ranks mirrors the first: its phase 0 is the upward direction.
    const int mirrored = rank >= p / 2 ? 1 : 0;
    return eight_steps(p / 2, std::min(rank, p - 1 - rank), half_m, [=](int phase, int k) {
      const int direction = phase ^ mirrored;
      return PassOp{PassKind::forward, direction * half_m + k, direction};
    });
  }
};

class DualPipeV final : public Schedule {
 public:
  std::string name() const override { return "dualpipev"; }
  std::string description() const override {
    return "DualPipeV: DualPipe cut in half, 2 chunks per rank in a V, F&B overlapped; holds 2p+1 chunks";
  }
  int chunks_required() const override { return 2; }

  std::optional<std::string> not_applicable(const ScheduleShape& shape) const override {
    if (auto why = Schedule::not_applicable(shape)) return why;
    if (shape.microbatches < 2 * shape.stages)
      return "dualpipev needs at least 2p = " + std::to_string(2 * shape.stages) + " microbatches, got m = " +
             std::to_string(shape.microbatches);
    return std::nullopt;
  }

  int chunk_stage(const ScheduleShape& shape, int rank, int chunk) const override {
    return chunk == 0 ? rank : 2 * shape.stages - 1 - rank;
  }

  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    return eight_steps(shape.stages, rank, shape.microbatches,
                       [](int phase, int k) { return PassOp{PassKind::forward, k, phase}; });
  }
};

}  // namespace

const Schedule& dualpipe_schedule() {
  static const DualPipe s;
  return s;
}

const Schedule& dualpipev_schedule() {
  static const DualPipeV s;
  return s;
}

}  // namespace clustersim
