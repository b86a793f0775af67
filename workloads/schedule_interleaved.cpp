// Megatron-LM's interleaved 1F1B (Narayanan et al. 2021): each rank holds v chunks, stage
// chunk*p + rank. Passes follow one table of (microbatch, chunk): microbatches in groups of g, and
// within a group every chunk in turn, 0..v-1. Forward k runs table entry k; backward k runs entry
// k with its chunk mirrored (v-1-chunk), so backwards walk the chunks in reverse. Rank r runs
// (p-r-1)*2 + (v-1)*g warm-up forwards (capped at m*v), then one forward one backward, then drains.
// Bubble (p-1)(F+B)/v; rank 0 peaks at warm-up + 1 chunk activations, p + (p-1)/v microbatches
// when g = p and m >= 2p.
#include <algorithm>
#include <utility>

#include "workloads/schedule.hpp"

namespace clustersim {
namespace {

class Interleaved final : public Schedule {
 public:
  std::string name() const override { return "interleaved"; }
  bool runs_blocking_p2p() const override { return true; }
  std::string description() const override {
    return "Megatron's interleaved 1F1B: v chunks per rank in microbatch groups; bubble (p-1)(F+B)/v";
  }

  // Megatron's own limits (schedules.py): p <= g <= m, and a last group that is full or holds at
  // least p microbatches. A shorter one adds bubbles, and for some shapes the tables deadlock
  // (check_schedule finds one at p = 4, m = 5, v = 3, g = 4).
  std::optional<std::string> not_applicable(const ScheduleShape& shape) const override {
    if (auto why = Schedule::not_applicable(shape)) return why;
    const int p = shape.stages, m = shape.microbatches, g = shape.group();
    if (shape.chunks < 2) return "interleaved needs at least 2 chunks per rank; with one use 1f1b";
    if (g < p || g > m)
      return "microbatch group size " + std::to_string(g) + " must lie between p = " + std::to_string(p) +
             " and m = " + std::to_string(m);
    if (m % g != 0 && m % g < p)
      return "m = " + std::to_string(m) + " is not a multiple of the group size " + std::to_string(g) +
             " and its last group of " + std::to_string(m % g) + " is shorter than p = " + std::to_string(p);
    return std::nullopt;
  }

  std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const override {
    const int p = shape.stages, m = shape.microbatches, v = shape.chunks, g = shape.group();
    std::vector<std::pair<int, int>> table;  // (microbatch, chunk)
    for (int first = 0; first < m; first += g)
      for (int c = 0; c < v; ++c)
        for (int j = first; j < std::min(first + g, m); ++j) table.emplace_back(j, c);
    const int total = m * v;
    const int warmup = std::min((p - rank - 1) * 2 + (v - 1) * g, total);
    auto forward = [&](int k) { return PassOp{PassKind::forward, table[k].first, table[k].second}; };
    auto backward = [&](int k) { return PassOp{PassKind::backward, table[k].first, v - 1 - table[k].second}; };
    std::vector<PassOp> ops;
    for (int k = 0; k < warmup; ++k) ops.push_back(forward(k));
    for (int k = 0; k + warmup < total; ++k) {
      ops.push_back(forward(k + warmup));
      ops.push_back(backward(k));
    }
    for (int k = total - warmup; k < total; ++k) ops.push_back(backward(k));
    return ops;
  }
};

}  // namespace

const Schedule& interleaved_schedule() {
  static const Interleaved s;
  return s;
}

}  // namespace clustersim
