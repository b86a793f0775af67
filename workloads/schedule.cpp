// The schedule registry, and the one replay loop behind both check_schedule and replay: a schedule
// is only trusted once its tables have been run against the pass dependencies.
#include "workloads/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim {

const Schedule& gpipe_schedule();
const Schedule& one_f_one_b_schedule();
const Schedule& interleaved_schedule();

std::vector<const Schedule*> all_schedules() {
  return {&gpipe_schedule(), &one_f_one_b_schedule(), &interleaved_schedule()};
}

const Schedule* find_schedule(const std::string& name) {
  for (const Schedule* s : all_schedules())
    if (s->name() == name) return s;
  return nullptr;
}

std::string schedule_names() {
  std::string out;
  for (const Schedule* s : all_schedules()) out += (out.empty() ? "" : ", ") + s->name();
  return out;
}

const char* to_string(PassKind kind) {
  switch (kind) {
    case PassKind::forward: return "forward";
    case PassKind::backward: return "backward";
    case PassKind::backward_input: return "backward_input";
    case PassKind::backward_weight: return "backward_weight";
  }
  return "?";
}

std::optional<std::string> Schedule::not_applicable(const ScheduleShape& shape) const {
  if (shape.stages < 1) return "needs at least 1 pipeline stage, got " + std::to_string(shape.stages);
  if (shape.microbatches < 1) return "needs at least 1 microbatch, got " + std::to_string(shape.microbatches);
  if (shape.chunks < 1) return "needs at least 1 chunk per rank, got " + std::to_string(shape.chunks);
  if (shape.group_size < 0) return "group size must be positive (0 means p), got " + std::to_string(shape.group_size);
  return std::nullopt;
}

int Schedule::chunk_stage(const ScheduleShape& shape, int rank, int chunk) const {
  return chunk * shape.stages + rank;
}

namespace {

// Per-chunk pass durations.
struct Durations {
  Seconds forward = 1, backward = 1, input = 1, weight = 1;
  Seconds of(PassKind k) const {
    switch (k) {
      case PassKind::forward: return forward;
      case PassKind::backward: return backward;
      case PassKind::backward_input: return input;
      case PassKind::backward_weight: return weight;
    }
    return 0;
  }
};

std::string where(int rank, int chunk, int stage) {
  return "rank " + std::to_string(rank) + " chunk " + std::to_string(chunk) + " (stage " + std::to_string(stage) + ")";
}

std::string pass_text(const PassOp& op) {
  return std::string(to_string(op.kind)) + " of microbatch " + std::to_string(op.microbatch) + " chunk " +
         std::to_string(op.chunk);
}

class Replayer {
 public:
  Replayer(const Schedule& s, const ScheduleShape& shape) : s_(s), shape_(shape) {}

  // nullopt and timing_ filled, or what is wrong.
  std::optional<std::string> run(const Durations& d) {
    if (auto why = s_.not_applicable(shape_)) return "not applicable: " + *why;
    p_ = shape_.stages, m_ = shape_.microbatches, v_ = shape_.chunks;
    if (auto e = map_stages()) return e;
    if (auto e = load_tables()) return e;
    return execute(d);
  }
  ScheduleTiming timing;

 private:
  // (rank, chunk) <-> global stage must be a bijection onto 0..p*v-1.
  std::optional<std::string> map_stages() {
    slot_of_stage_.assign(p_ * v_, -1);
    stage_of_slot_.assign(p_ * v_, -1);
    for (int r = 0; r < p_; ++r)
      for (int c = 0; c < v_; ++c) {
        const int k = s_.chunk_stage(shape_, r, c);
        if (k < 0 || k >= p_ * v_ || slot_of_stage_[k] >= 0)
          return "chunk_stage maps rank " + std::to_string(r) + " chunk " + std::to_string(c) + " to stage " +
                 std::to_string(k) + ", out of range or already held";
        slot_of_stage_[k] = r * v_ + c;
        stage_of_slot_[r * v_ + c] = k;
      }
    return std::nullopt;
  }

  // Every (stage, microbatch) needs one forward, one input gradient and one weight gradient.
  std::optional<std::string> load_tables() {
    ops_.resize(p_);
    std::vector<int> nf(p_ * v_ * m_), ni(p_ * v_ * m_), nw(p_ * v_ * m_);
    for (int r = 0; r < p_; ++r) {
      ops_[r] = s_.rank_ops(shape_, r);
      for (size_t i = 0; i < ops_[r].size(); ++i) {
        const PassOp& op = ops_[r][i];
        if (op.chunk < 0 || op.chunk >= v_ || op.microbatch < 0 || op.microbatch >= m_)
          return "rank " + std::to_string(r) + " pass " + std::to_string(i) + " (" + pass_text(op) +
                 ") is out of range";
        const int at = index(stage(r, op.chunk), op.microbatch);
        if (op.kind == PassKind::forward) ++nf[at];
        if (op.kind == PassKind::backward || op.kind == PassKind::backward_input) ++ni[at];
        if (op.kind == PassKind::backward || op.kind == PassKind::backward_weight) ++nw[at];
      }
    }
    for (int k = 0; k < p_ * v_; ++k)
      for (int j = 0; j < m_; ++j) {
        const int at = index(k, j), r = slot_of_stage_[k] / v_, c = slot_of_stage_[k] % v_;
        const std::pair<const char*, int> counts[] = {
            {"forward", nf[at]}, {"input gradient", ni[at]}, {"weight gradient", nw[at]}};
        for (auto [what, n] : counts)
          if (n != 1)
            return std::string(n == 0 ? "missing " : "duplicated ") + what + " of microbatch " + std::to_string(j) +
                   " at " + where(r, c, k) + ": runs " + std::to_string(n) + " times";
      }
    return std::nullopt;
  }

  std::optional<std::string> execute(const Durations& d) {
    const int n = p_ * v_ * m_;
    forward_end_.assign(n, -1);
    input_end_.assign(n, -1);
    std::vector<size_t> next(p_, 0);
    std::vector<Seconds> free(p_, 0);
    std::vector<int> held(p_, 0);
    timing = ScheduleTiming{};
    timing.busy_s.assign(p_, 0);
    timing.peak_chunk_activations.assign(p_, 0);
    // Start times depend only on finished passes, so sweeping ranks until none advances gives the
    // same times as an event queue.
    for (bool advanced = true; advanced;) {
      advanced = false;
      for (int r = 0; r < p_; ++r)
        for (; next[r] < ops_[r].size(); ++next[r], advanced = true) {
          const PassOp& op = ops_[r][next[r]];
          const auto [ready, start] = ready_at(r, op, free[r]);
          if (!ready) break;
          const Seconds end = start + d.of(op.kind);
          timing.busy_s[r] += end - start;
          free[r] = end;
          const int at = index(stage(r, op.chunk), op.microbatch);
          if (op.kind == PassKind::forward) {
            forward_end_[at] = end;
            timing.peak_chunk_activations[r] = std::max(timing.peak_chunk_activations[r], ++held[r]);
          } else if (op.kind != PassKind::backward_weight) {
            input_end_[at] = end;
            --held[r];
          }
        }
    }
    std::string stuck;
    for (int r = 0; r < p_; ++r)
      if (next[r] < ops_[r].size())
        stuck += (stuck.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " at pass " +
                 std::to_string(next[r]) + " (" + pass_text(ops_[r][next[r]]) + ") waits for " +
                 waiting_for(r, ops_[r][next[r]]);
    if (!stuck.empty()) return "deadlock: " + stuck;
    timing.makespan_s = *std::max_element(free.begin(), free.end());
    for (int r = 0; r < p_; ++r) {
      timing.idle_s.push_back(timing.makespan_s - timing.busy_s[r]);
      timing.peak_in_flight_microbatches.push_back(static_cast<double>(timing.peak_chunk_activations[r]) / v_);
    }
    return std::nullopt;
  }

  // The dependencies of a pass, as (index into forward_end_ or input_end_, is-forward) pairs.
  struct Dep { int at; bool forward; };
  std::vector<Dep> deps(int rank, const PassOp& op) const {
    const int k = stage(rank, op.chunk), at = index(k, op.microbatch);
    switch (op.kind) {
      case PassKind::forward: return k > 0 ? std::vector<Dep>{{at - m_, true}} : std::vector<Dep>{};
      case PassKind::backward:
      case PassKind::backward_input:
        return k + 1 < p_ * v_ ? std::vector<Dep>{{at, true}, {at + m_, false}} : std::vector<Dep>{{at, true}};
      case PassKind::backward_weight: return {{at, false}};
    }
    return {};
  }

  std::pair<bool, Seconds> ready_at(int rank, const PassOp& op, Seconds free) const {
    Seconds start = free;
    for (Dep dep : deps(rank, op)) {
      const Seconds t = dep.forward ? forward_end_[dep.at] : input_end_[dep.at];
      if (t < 0) return {false, 0};
      start = std::max(start, t);
    }
    return {true, start};
  }

  std::string waiting_for(int rank, const PassOp& op) const {
    for (Dep dep : deps(rank, op)) {
      if ((dep.forward ? forward_end_[dep.at] : input_end_[dep.at]) >= 0) continue;
      const int k = dep.at / m_, slot = slot_of_stage_[k];
      return std::string(dep.forward ? "the forward" : "the input gradient") + " of microbatch " +
             std::to_string(dep.at % m_) + " at " + where(slot / v_, slot % v_, k);
    }
    return "nothing";
  }

  int stage(int rank, int chunk) const { return stage_of_slot_[rank * v_ + chunk]; }
  int index(int stage, int microbatch) const { return stage * m_ + microbatch; }

  const Schedule& s_;
  ScheduleShape shape_;
  int p_ = 0, m_ = 0, v_ = 0;
  std::vector<int> slot_of_stage_, stage_of_slot_;  // slot = rank * v + chunk
  std::vector<std::vector<PassOp>> ops_;
  std::vector<Seconds> forward_end_, input_end_;     // -1: not run yet
};

}  // namespace

std::optional<std::string> check_schedule(const Schedule& schedule, const ScheduleShape& shape) {
  Replayer replayer(schedule, shape);
  return replayer.run(Durations{});
}

ScheduleTiming replay(const Schedule& schedule, const ScheduleShape& shape, Seconds forward_s, Seconds backward_s,
                      Seconds weight_s) {
  if (forward_s < 0 || backward_s < 0 || weight_s < 0 || weight_s > backward_s)
    throw std::invalid_argument("replay needs non-negative times with weight_s <= backward_s");
  const double v = shape.chunks > 0 ? shape.chunks : 1;
  Durations d{forward_s / v, backward_s / v, (backward_s - weight_s) / v, weight_s / v};
  Replayer replayer(schedule, shape);
  if (auto error = replayer.run(d)) throw std::invalid_argument(schedule.name() + ": " + *error);
  return replayer.timing;
}

}  // namespace clustersim
