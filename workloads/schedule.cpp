// The schedule registry, and the one replay loop behind both check_schedule and replay: a schedule
// is only trusted once its tables have been run against the pass dependencies.
#include "workloads/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim {

const Schedule& gpipe_schedule();
const Schedule& one_f_one_b_schedule();
const Schedule& interleaved_schedule();
const Schedule& breadth_first_schedule();
const Schedule& zb_h1_schedule();
const Schedule& zb_h2_schedule();
const Schedule& zb_v_schedule();
const Schedule& dualpipe_schedule();
const Schedule& dualpipev_schedule();

std::vector<const Schedule*> all_schedules() {
  return {&gpipe_schedule(),  &one_f_one_b_schedule(), &interleaved_schedule(),
          &breadth_first_schedule(), &zb_h1_schedule(), &zb_h2_schedule(),
          &zb_v_schedule(),   &dualpipe_schedule(),    &dualpipev_schedule()};
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
  if (const int v = chunks_required(); v > 0 && shape.chunks != v)
    return name() + " runs " + (v == 1 ? std::string("one chunk") : std::to_string(v) + " chunks") +
           " per rank (got " + std::to_string(shape.chunks) + ")";
  return std::nullopt;
}

int Schedule::chunk_stage(const ScheduleShape& shape, int rank, int chunk) const {
  return chunk * shape.stages + rank;
}

int Schedule::model_stages(const ScheduleShape& shape) const { return shape.stages * shape.chunks; }

std::vector<Slot> Schedule::route(const ScheduleShape& shape, int) const {
  // A stage no slot holds keeps {-1, -1}, which the checker reports.
  std::vector<Slot> slots(std::max(model_stages(shape), 0), Slot{-1, -1});
  for (int r = 0; r < shape.stages; ++r)
    for (int c = 0; c < shape.chunks; ++c) {
      const int k = chunk_stage(shape, r, c);
      if (k >= 0 && k < static_cast<int>(slots.size()) && slots[k].rank < 0) slots[k] = {r, c};
    }
  return slots;
}

namespace {

// Per-pass durations. overlapped < 0: an F&B unit takes its two passes' sum.
struct Durations {
  Seconds forward = 1, backward = 1, input = 1, weight = 1, overlapped = -1;
  Seconds of(PassKind k) const {
    switch (k) {
      case PassKind::forward: return forward;
      case PassKind::backward: return backward;
      case PassKind::backward_input: return input;
      case PassKind::backward_weight: return weight;
    }
    return 0;
  }
  Durations scaled(double s) const {
    return {forward * s, backward * s, input * s, weight * s, overlapped < 0 ? overlapped : overlapped * s};
  }
};

bool is_input_gradient(PassKind k) { return k == PassKind::backward || k == PassKind::backward_input; }

std::string where(int rank, int chunk, int stage) {
  return "rank " + std::to_string(rank) + " chunk " + std::to_string(chunk) + " (stage " + std::to_string(stage) + ")";
}

std::string pass_text(const PassOp& op) {
  return std::string(to_string(op.kind)) + " of microbatch " + std::to_string(op.microbatch) + " chunk " +
         std::to_string(op.chunk);
}

class Replayer {
 public:
  Replayer(const Schedule& s, const ScheduleShape& shape, const std::vector<double>& rank_scale = {})
      : s_(s), shape_(shape), rank_scale_(rank_scale) {}

  // nullopt and timing filled, or what is wrong. `d` is at the 1/p-of-the-model scale.
  std::optional<std::string> run(const Durations& d) {
    if (auto why = s_.not_applicable(shape_)) return "not applicable: " + *why;
    p_ = shape_.stages, m_ = shape_.microbatches, v_ = shape_.chunks, n_ = s_.model_stages(shape_);
    if (n_ < 1) return "model_stages is " + std::to_string(n_) + ", expected at least 1";
    if (auto e = map_routes()) return e;
    if (auto e = load_tables()) return e;
    return execute(d.scaled(static_cast<double>(p_) / n_));
  }
  ScheduleTiming timing;

 private:
  // Every route position i must be a slot that holds model stage i.
  std::optional<std::string> map_routes() {
    position_.assign(static_cast<size_t>(m_) * p_ * v_, -1);
    routes_.resize(m_);
    for (int j = 0; j < m_; ++j) {
      routes_[j] = s_.route(shape_, j);
      const std::string of = "route of microbatch " + std::to_string(j);
      if (static_cast<int>(routes_[j].size()) != n_)
        return of + " has " + std::to_string(routes_[j].size()) + " slots for " + std::to_string(n_) + " model stages";
      for (int i = 0; i < n_; ++i) {
        const auto [r, c] = routes_[j][i];
        const std::string at = " at position " + std::to_string(i) + " is rank " + std::to_string(r) + " chunk " +
                               std::to_string(c);
        if (r < 0 || r >= p_ || c < 0 || c >= v_) return of + at + ", out of range (or no slot holds stage " + std::to_string(i) + ")";
        if (const int k = s_.chunk_stage(shape_, r, c); k != i)
          return of + at + ", which holds stage " + std::to_string(k) + ", not " + std::to_string(i);
        position_[slot_index(j, r, c)] = i;
      }
    }
    return std::nullopt;
  }

  // Every microbatch needs one forward, one input gradient and one weight gradient at every slot
  // on its route, and none off it.
  std::optional<std::string> load_tables() {
    ops_.resize(p_);
    std::vector<int> nf(m_ * n_), ni(m_ * n_), nw(m_ * n_);
    for (int r = 0; r < p_; ++r) {
      ops_[r] = s_.rank_ops(shape_, r);
      for (size_t i = 0; i < ops_[r].size(); ++i) {
        const PassOp& op = ops_[r][i];
        // Built only for an error: a replay walks every pass of every rank (search replays thousands).
        const auto pass = [&] { return "rank " + std::to_string(r) + " pass " + std::to_string(i) + " (" + pass_text(op) + ")"; };
        if (op.chunk < 0 || op.chunk >= v_ || op.microbatch < 0 || op.microbatch >= m_)
          return pass() + " is out of range";
        const int pos = position_[slot_index(op.microbatch, r, op.chunk)];
        if (pos < 0)
          return pass() + " is off the route of microbatch " + std::to_string(op.microbatch) + ", which never visits rank " +
                 std::to_string(r) + " chunk " + std::to_string(op.chunk);
        if (op.overlap_next && op.kind != PassKind::forward) return pass() + " has overlap_next but is not a forward";
        if (op.overlap_next && (i + 1 == ops_[r].size() || !is_input_gradient(ops_[r][i + 1].kind)))
          return pass() + " has overlap_next but the next pass is not an input gradient";
        const int at = index(op.microbatch, pos);
        if (op.kind == PassKind::forward) ++nf[at];
        if (is_input_gradient(op.kind)) ++ni[at];
        if (op.kind == PassKind::backward || op.kind == PassKind::backward_weight) ++nw[at];
      }
    }
    for (int k = 0; k < n_; ++k)
      for (int j = 0; j < m_; ++j) {
        const int at = index(j, k);
        const std::pair<const char*, int> counts[] = {
            {"forward", nf[at]}, {"input gradient", ni[at]}, {"weight gradient", nw[at]}};
        for (auto [what, n] : counts)
          if (n != 1)
            return std::string(n == 0 ? "missing " : "duplicated ") + what + " of microbatch " + std::to_string(j) +
                   " at " + where(routes_[j][k].rank, routes_[j][k].chunk, k) + ": runs " + std::to_string(n) + " times";
      }
    return std::nullopt;
  }

  std::optional<std::string> execute(const Durations& d) {
    forward_end_.assign(m_ * n_, -1);
    input_end_.assign(m_ * n_, -1);
    std::vector<size_t> next(p_, 0);
    std::vector<Seconds> free(p_, 0);
    std::vector<int> held(p_, 0);
    timing = ScheduleTiming{};
    timing.busy_s.assign(p_, 0);
    timing.start_s.assign(p_, -1);
    timing.peak_chunk_activations.assign(p_, 0);
    timing.peak_held_by_chunk.assign(p_, std::vector<int>(v_, 0));
    std::vector<std::vector<int>> held_by_chunk(p_, std::vector<int>(v_, 0));
    // Start times depend only on finished passes, so sweeping ranks until none advances gives the
    // same times as an event queue.
    for (bool advanced = true; advanced;) {
      advanced = false;
      for (int r = 0; r < p_; ++r)
        while (next[r] < ops_[r].size()) {
          const size_t size = unit_size(r, next[r]);
          Seconds start = free[r], duration = 0;
          bool ready = true;
          for (size_t u = 0; u < size && ready; ++u) {
            const PassOp& op = ops_[r][next[r] + u];
            ready = ready_at(r, op, start);
            duration += d.of(op.kind);
          }
          if (!ready) break;
          if (size == 2 && d.overlapped >= 0) duration = d.overlapped;
          if (!rank_scale_.empty()) duration *= rank_scale_[static_cast<size_t>(r)];
          const Seconds end = start + duration;
          if (timing.start_s[r] < 0) timing.start_s[r] = start;
          timing.busy_s[r] += duration;
          free[r] = end;
          // The forward counts before the backward frees: an F&B unit holds both at once.
          for (size_t u = 0; u < size; ++u) {
            const PassOp& op = ops_[r][next[r] + u];
            const int at = index(op.microbatch, position_[slot_index(op.microbatch, r, op.chunk)]);
            if (op.kind == PassKind::forward) {
              forward_end_[at] = end;
              timing.peak_chunk_activations[r] = std::max(timing.peak_chunk_activations[r], ++held[r]);
              int& chunk_peak = timing.peak_held_by_chunk[r][op.chunk];
              chunk_peak = std::max(chunk_peak, ++held_by_chunk[r][op.chunk]);
            } else if (is_input_gradient(op.kind)) {
              input_end_[at] = end;
              --held[r];
              --held_by_chunk[r][op.chunk];
            }
          }
          next[r] += size;
          advanced = true;
        }
    }
    std::string stuck;
    for (int r = 0; r < p_; ++r)
      if (next[r] < ops_[r].size())
        stuck += (stuck.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " at pass " +
                 std::to_string(next[r]) + " (" + unit_text(r, next[r]) + ") waits for " + waiting_for(r, next[r]);
    if (!stuck.empty()) return "deadlock: " + stuck;
    timing.makespan_s = *std::max_element(free.begin(), free.end());
    for (int r = 0; r < p_; ++r) {
      timing.idle_s.push_back(timing.makespan_s - timing.busy_s[r]);
      timing.start_s[r] = std::max<Seconds>(timing.start_s[r], 0);  // a rank with no passes
      timing.end_s.push_back(free[r]);
      timing.peak_in_flight_microbatches.push_back(static_cast<double>(timing.peak_chunk_activations[r]) * p_ / n_);
    }
    return std::nullopt;
  }

  // An overlap_next forward and the pass after it run as one unit.
  size_t unit_size(int rank, size_t at) const { return ops_[rank][at].overlap_next ? 2 : 1; }

  std::string unit_text(int rank, size_t at) const {
    std::string text = pass_text(ops_[rank][at]);
    if (unit_size(rank, at) == 2) text += " overlapped with " + pass_text(ops_[rank][at + 1]);
    return text;
  }

  // The dependencies of a pass, as (index into forward_end_ or input_end_, is-forward) pairs.
  struct Dep { int at; bool forward; };
  std::vector<Dep> deps(int rank, const PassOp& op) const {
    const int i = position_[slot_index(op.microbatch, rank, op.chunk)], at = index(op.microbatch, i);
    switch (op.kind) {
      case PassKind::forward: return i > 0 ? std::vector<Dep>{{at - 1, true}} : std::vector<Dep>{};
      case PassKind::backward:
      case PassKind::backward_input:
        return i + 1 < n_ ? std::vector<Dep>{{at, true}, {at + 1, false}} : std::vector<Dep>{{at, true}};
      case PassKind::backward_weight: return {{at, false}};
    }
    return {};
  }

  // Whether op's dependencies are done; if so, start becomes at least their latest end.
  bool ready_at(int rank, const PassOp& op, Seconds& start) const {
    for (Dep dep : deps(rank, op)) {
      const Seconds t = dep.forward ? forward_end_[dep.at] : input_end_[dep.at];
      if (t < 0) return false;
      start = std::max(start, t);
    }
    return true;
  }

  std::string waiting_for(int rank, size_t at) const {
    for (size_t u = 0; u < unit_size(rank, at); ++u)
      for (Dep dep : deps(rank, ops_[rank][at + u])) {
        if ((dep.forward ? forward_end_[dep.at] : input_end_[dep.at]) >= 0) continue;
        const int j = dep.at / n_, k = dep.at % n_;
        return std::string(dep.forward ? "the forward" : "the input gradient") + " of microbatch " + std::to_string(j) +
               " at " + where(routes_[j][k].rank, routes_[j][k].chunk, k);
      }
    return "nothing";
  }

  size_t slot_index(int microbatch, int rank, int chunk) const {
    return (static_cast<size_t>(microbatch) * p_ + rank) * v_ + chunk;
  }
  int index(int microbatch, int position) const { return microbatch * n_ + position; }

  const Schedule& s_;
  ScheduleShape shape_;
  std::vector<double> rank_scale_;           // per rank; empty: every rank at 1
  int p_ = 0, m_ = 0, v_ = 0, n_ = 0;        // n: model stages, the length of every route
  std::vector<std::vector<Slot>> routes_;    // per microbatch
  std::vector<int> position_;                // per (microbatch, rank, chunk): place on the route, -1 if off it
  std::vector<std::vector<PassOp>> ops_;
  std::vector<Seconds> forward_end_, input_end_;  // per (microbatch, position); -1: not run yet
};

}  // namespace

std::optional<std::string> check_schedule(const Schedule& schedule, const ScheduleShape& shape) {
  Replayer replayer(schedule, shape);
  return replayer.run(Durations{});
}

ScheduleTiming replay(const Schedule& schedule, const ScheduleShape& shape, Seconds forward_s, Seconds backward_s,
                      Seconds weight_s, Seconds overlapped_s, const std::vector<double>& rank_scale) {
  if (forward_s < 0 || backward_s < 0 || weight_s < 0 || weight_s > backward_s)
    throw std::invalid_argument("replay needs non-negative times with weight_s <= backward_s");
  if (!rank_scale.empty() && rank_scale.size() != static_cast<std::size_t>(shape.stages))
    throw std::invalid_argument("replay needs one rank_scale per rank");
  Replayer replayer(schedule, shape, rank_scale);
  const Durations d{forward_s, backward_s, backward_s - weight_s, weight_s, overlapped_s};
  if (auto error = replayer.run(d)) throw std::invalid_argument(schedule.name() + ": " + *error);
  return replayer.timing;
}

}  // namespace clustersim
