// The zero-bubble (ZB-H1, ZB-H2, ZB-V), DualPipe, DualPipeV and breadth-first schedules replayed
// with uniform stages and free communication, against closed forms.
//
// Times: F, B, W are one microbatch's forward, full backward and weight-gradient part through 1/p of
// the model (replay's scale); B - W is the input-gradient pass. "F = B = W" in the papers means
// F = B_input = W, so B = 2F here. Sources: the bubble and peak-activation table in
// shared/reference/hardware.md; Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024; ZB-V in
// arXiv 2401.10241); the DualPipe README (github.com/deepseek-ai/DualPipe), whose table has the
// DualPipe and DualPipeV rows with S stages and F&B the time of an overlapped forward-backward pair.
//
// Which bubble each formula is (ScheduleTiming: idle_s = makespan - busy; a rank's span idle =
// end_s - start_s - busy_s):
// - ZB-H1 (p-1)(F+B-2W): makespan - busy on every rank, which is also rank 0's span idle.
// - ZB-H2 (p-1)(F+B-3W): rank 0's span idle, the largest of any rank (the ZB paper measures a
//   rank's own span: its parallelogram's ranks start (p-1)F apart, and makespan - busy keeps that).
// - ZB-V "about 0": every rank's span idle is exactly 0; makespan - busy is (p-1)F/2.
// - DualPipe (S/2-1)(F&B+B-3W): the largest makespan - busy of any rank, on the middle ranks p/2-1
//   and p/2 (DualPipeV: the V's tip, rank p-1); with F&B = F+B every rank has it.
// The ZB-H1 and ZB-H2 forms hold exactly for any times with W <= F and W <= B - W; DualPipe's only
// at F = B - W = W, for F&B from B to F+B (see the last test for what other times give).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>
#include <utility>

#include "workloads/schedule.hpp"

using namespace clustersim;

namespace {

const int kStages[] = {2, 4, 8, 16};
// (F, B input, W) with W <= F and W <= B input, where the ZB-H1 and ZB-H2 forms are exact.
const std::tuple<double, double, double> kSplitTimes[] = {{1, 1, 1}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0.5}, {1.5, 1, 0.7}};

void check_exact(Seconds replayed, Seconds closed_form) {
  INFO("replayed " << replayed << " s, closed form " << closed_form << " s");
  CHECK(std::abs(replayed - closed_form) <= 1e-9 * std::max(1.0, std::abs(closed_form)));
}

Seconds span_idle(const ScheduleTiming& t, int rank) { return t.end_s[rank] - t.start_s[rank] - t.busy_s[rank]; }

std::string shape_text(const ScheduleShape& s) {
  return "p=" + std::to_string(s.stages) + " m=" + std::to_string(s.microbatches) + " v=" + std::to_string(s.chunks) +
         " g=" + std::to_string(s.group_size);
}

// Shapes each schedule must run: its smallest m, non-multiples where it takes them, and beyond.
std::vector<ScheduleShape> shapes(const std::string& name, int p) {
  std::vector<ScheduleShape> out;
  if (name == "zb-h1" || name == "zb-h2")
    for (int m : {1, std::max(p - 1, 1), p, 2 * p - 1, 2 * p, 3 * p + 1, 4 * p}) out.push_back({p, m, 1, 0});
  if (name == "zb-v")
    for (int m : {1, p, 2 * p - 2, 2 * p - 1, 2 * p, 3 * p + 1, 4 * p}) out.push_back({p, m, 2, 0});
  if (name == "dualpipe")
    for (int m : {2 * p, 2 * p + 2, 3 * p, 4 * p + 2, 6 * p}) out.push_back({p, m, 2, 0});
  if (name == "dualpipev")
    for (int m : {2 * p, 2 * p + 1, 3 * p + 1, 5 * p}) out.push_back({p, m, 2, 0});
  if (name == "breadth-first")
    for (int v : {2, 3})
      for (int m : {p, p + 1, 2 * p, 3 * p + 1}) out.push_back({p, m, v, 0});
  return out;
}

// Counts each microbatch's passes per slot from the tables alone, without the checker: one F, one
// input gradient and one weight gradient at each slot of its route, nothing elsewhere.
std::string route_counts(const Schedule& s, const ScheduleShape& shape) {
  std::map<std::tuple<int, int, int>, std::tuple<int, int, int>> counts;  // (mb, rank, chunk) -> (F, B, W)
  for (int r = 0; r < shape.stages; ++r)
    for (const PassOp& op : s.rank_ops(shape, r)) {
      auto& [f, b, w] = counts[{op.microbatch, r, op.chunk}];
      f += op.kind == PassKind::forward;
      b += op.kind == PassKind::backward || op.kind == PassKind::backward_input;
      w += op.kind == PassKind::backward || op.kind == PassKind::backward_weight;
    }
  size_t on_route = 0;
  for (int j = 0; j < shape.microbatches; ++j) {
    const std::vector<Slot> route = s.route(shape, j);
    if (static_cast<int>(route.size()) != s.model_stages(shape)) return "route length of microbatch " + std::to_string(j);
    for (int i = 0; i < static_cast<int>(route.size()); ++i) {
      if (s.chunk_stage(shape, route[i].rank, route[i].chunk) != i) return "route stage of microbatch " + std::to_string(j);
      if (counts[{j, route[i].rank, route[i].chunk}] != std::tuple(1, 1, 1))
        return "passes of microbatch " + std::to_string(j) + " at position " + std::to_string(i);
      ++on_route;
    }
  }
  return counts.size() == on_route ? "ok" : "a pass off its route";
}

// A registered schedule with one rank's table edited, for feeding the checker broken tables.
class Edited final : public Schedule {
 public:
  using Edit = std::function<void(std::vector<PassOp>&)>;
  Edited(const char* base, int rank, Edit edit) : base_(*find_schedule(base)), rank_(rank), edit_(std::move(edit)) {}
  std::string name() const override { return "edited " + base_.name(); }
  std::string description() const override { return "a test table"; }
  std::optional<std::string> not_applicable(const ScheduleShape& s) const override { return base_.not_applicable(s); }
  int chunk_stage(const ScheduleShape& s, int r, int c) const override { return base_.chunk_stage(s, r, c); }
  int model_stages(const ScheduleShape& s) const override { return base_.model_stages(s); }
  std::vector<Slot> route(const ScheduleShape& s, int j) const override { return base_.route(s, j); }
  std::vector<PassOp> rank_ops(const ScheduleShape& s, int r) const override {
    auto ops = base_.rank_ops(s, r);
    if (r == rank_) edit_(ops);
    return ops;
  }

 private:
  const Schedule& base_;
  int rank_;
  Edit edit_;
};

std::string problem(const Schedule& s, const ScheduleShape& shape) { return check_schedule(s, shape).value_or("none"); }

}  // namespace

TEST_CASE("every new schedule runs each pass once per slot on its route without deadlock") {
  for (const char* name : {"zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev", "breadth-first"})
    for (int p : kStages)
      for (const ScheduleShape& shape : shapes(name, p)) {
        INFO(name << " " << shape_text(shape));
        CHECK(problem(*find_schedule(name), shape) == "none");
        CHECK(route_counts(*find_schedule(name), shape) == "ok");
      }
  // DualPipeV takes any rank count, one included (both chunks on one GPU).
  for (int p : {1, 3, 5})
    for (const ScheduleShape& shape : shapes("dualpipev", p)) {
      INFO("dualpipev " << shape_text(shape));
      CHECK(problem(*find_schedule("dualpipev"), shape) == "none");
    }
}

TEST_CASE("V schedules hold stages r and 2p-1-r and dualpipe sends half the microbatches each way") {
  const ScheduleShape v{4, 8, 2, 0};
  for (const char* name : {"zb-v", "dualpipev"}) {
    const Schedule& s = *find_schedule(name);
    CHECK(s.model_stages(v) == 8);
    CHECK(s.route(v, 5) == std::vector<Slot>{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {3, 1}, {2, 1}, {1, 1}, {0, 1}});
  }
  const Schedule& dual = *find_schedule("dualpipe");
  CHECK(dual.model_stages(v) == 4);
  CHECK(dual.chunk_stage(v, 1, 0) == 1);
  CHECK(dual.chunk_stage(v, 1, 1) == 2);  // parameters held twice: stage 2 also on rank 2 chunk 0
  for (int j : {0, 3}) CHECK(dual.route(v, j) == std::vector<Slot>{{0, 0}, {1, 0}, {2, 0}, {3, 0}});
  for (int j : {4, 7}) CHECK(dual.route(v, j) == std::vector<Slot>{{3, 1}, {2, 1}, {1, 1}, {0, 1}});
  CHECK(find_schedule("zb-h1")->route(ScheduleShape{3, 2, 1, 0}, 1) == std::vector<Slot>{{0, 0}, {1, 0}, {2, 0}});
}

TEST_CASE("zb-h1 idles (p-1)(F+B-2W) on every rank once m reaches p") {
  for (int p : kStages)
    for (int m : {p, 2 * p, 3 * p + 1})
      for (auto [f, input, w] : kSplitTimes) {
        const double b = input + w;
        INFO("p=" << p << " m=" << m << " F=" << f << " B=" << b << " W=" << w);
        const ScheduleTiming t = replay(*find_schedule("zb-h1"), {p, m, 1, 0}, f, b, w);
        check_exact(t.makespan_s, m * (f + b) + (p - 1) * (f + b - 2 * w));
        for (int r = 0; r < p; ++r) check_exact(t.idle_s[r], (p - 1) * (f + b - 2 * w));
        check_exact(span_idle(t, 0), (p - 1) * (f + b - 2 * w));
      }
}

TEST_CASE("zb-h2 idles (p-1)(F+B-3W) inside rank 0's span once m reaches 2p") {
  for (int p : kStages)
    for (int m : {2 * p, 2 * p + 1, 4 * p})
      for (auto [f, input, w] : kSplitTimes) {
        const double b = input + w;
        INFO("p=" << p << " m=" << m << " F=" << f << " B=" << b << " W=" << w);
        const ScheduleTiming t = replay(*find_schedule("zb-h2"), {p, m, 1, 0}, f, b, w);
        check_exact(span_idle(t, 0), (p - 1) * (f + b - 3 * w));
        for (int r = 1; r < p; ++r) CHECK(span_idle(t, r) <= span_idle(t, 0) + 1e-9);
      }
  // F = B - W = W: a parallelogram, each rank busy without a gap from its first forward; the last
  // starts (p-1)F late. One microbatch fewer and the warm-up cannot fill: a bubble appears.
  for (int p : kStages) {
    const ScheduleTiming t = replay(*find_schedule("zb-h2"), {p, 2 * p, 1, 0}, 1, 2, 1);
    for (int r = 0; r < p; ++r) check_exact(span_idle(t, r), 0);
    check_exact(t.makespan_s, 2 * p * 3 + (p - 1));
    const ScheduleTiming short_of = replay(*find_schedule("zb-h2"), {p, 2 * p - 1, 1, 0}, 1, 2, 1);
    CHECK(span_idle(short_of, 0) > 0.5);
  }
}

TEST_CASE("zb-v has no bubble in any rank's span when F equals B input and W from m = 2p-1") {
  // A pass is half a rank's share (2p stages). Every rank runs 6m passes without a gap; rank r
  // starts r passes late, so the iteration is (6m + p - 1) F/2.
  for (int p : kStages)
    for (int m : {2 * p - 1, 2 * p, 3 * p + 1, 4 * p}) {
      INFO("p=" << p << " m=" << m);
      const ScheduleTiming t = replay(*find_schedule("zb-v"), {p, m, 2, 0}, 1, 2, 1);
      check_exact(t.makespan_s, (6 * m + p - 1) * 0.5);
      for (int r = 0; r < p; ++r) {
        check_exact(span_idle(t, r), 0);
        check_exact(t.idle_s[r], (p - 1) * 0.5);
      }
      const ScheduleTiming short_of = replay(*find_schedule("zb-v"), {p, 2 * p - 2, 2, 0}, 1, 2, 1);
      CHECK(span_idle(short_of, 0) > 0.5);
    }
}

TEST_CASE("dualpipe idles (p/2-1)(F&B+B-3W) on its middle ranks when F equals B input and W") {
  const double f = 1, b = 2, w = 1;
  for (int p : kStages)
    for (int m : {2 * p, 2 * p + 2, 3 * p, 6 * p})
      for (double fb : {f + b, 2.5, 2.0}) {  // F&B from no compute overlap down to B alone
        INFO("p=" << p << " m=" << m << " F&B=" << fb);
        const ScheduleTiming t = replay(*find_schedule("dualpipe"), {p, m, 2, 0}, f, b, w, fb == f + b ? -1 : fb);
        const double bubble = (p / 2 - 1) * (fb + b - 3 * w);
        check_exact(*std::max_element(t.idle_s.begin(), t.idle_s.end()), bubble);
        for (int r : {p / 2 - 1, p / 2}) check_exact(t.idle_s[r], bubble);
        if (fb == f + b)
          for (int r = 0; r < p; ++r) check_exact(t.idle_s[r], bubble);
        // Busy: every pass once, each overlapped unit fb instead of F+B.
        for (int r = 0; r < p; ++r) {
          const auto ops = find_schedule("dualpipe")->rank_ops({p, m, 2, 0}, r);
          const auto units = std::count_if(ops.begin(), ops.end(), [](const PassOp& op) { return op.overlap_next; });
          check_exact(t.busy_s[r], m * (f + b) - units * (f + b - fb));
        }
      }
}

TEST_CASE("dualpipev idles (S/2-1)(F&B+B-3W) with S = 2p stages when F equals B input and W") {
  // One pass is a stage, half a rank's share: F/2, B/2, W/2, and F&B at the same scale.
  const double f = 1, b = 2, w = 1;
  for (int p : {1, 2, 3, 4, 8, 16})
    for (int m : {2 * p, 2 * p + 1, 5 * p})
      for (double fb : {f + b, 2.5, 2.0}) {
        INFO("p=" << p << " m=" << m << " F&B=" << fb);
        const ScheduleTiming t = replay(*find_schedule("dualpipev"), {p, m, 2, 0}, f, b, w, fb == f + b ? -1 : fb);
        const double bubble = (2 * p / 2 - 1) * (fb + b - 3 * w) / 2;
        check_exact(*std::max_element(t.idle_s.begin(), t.idle_s.end()), bubble);
        check_exact(t.idle_s[p - 1], bubble);
      }
}

TEST_CASE("peak in-flight activations follow the table") {
  for (int p : kStages) {
    INFO("p=" << p);
    const int m = 4 * p;
    // ZB-H1 keeps 1F1B's p - r; ZB-H2 warms up 2(p-r)-1, 2p-1 on rank 0.
    const ScheduleTiming h1 = replay(*find_schedule("zb-h1"), {p, m, 1, 0}, 1, 2, 1);
    const ScheduleTiming h2 = replay(*find_schedule("zb-h2"), {p, m, 1, 0}, 1, 2, 1);
    CHECK(h1.peak_in_flight_microbatches[0] == p);
    CHECK(h2.peak_in_flight_microbatches[0] == 2 * p - 1);
    for (int r = 0; r < p; ++r) {
      CHECK(h1.peak_chunk_activations[r] == p - r);
      CHECK(h2.peak_chunk_activations[r] == 2 * (p - r) - 1);
    }
    // ZB-V: 2p chunks, half a share each, on every rank: p microbatches, as 1F1B's rank 0.
    const ScheduleTiming v = replay(*find_schedule("zb-v"), {p, m, 2, 0}, 1, 2, 1);
    // DualPipe: p+1 stage activations on every rank, a stage being a rank's share. DualPipeV: S+1 =
    // 2p+1 stage activations for S = 2p stages, each half a rank's share: p + 1/2 microbatches.
    const ScheduleTiming dual = replay(*find_schedule("dualpipe"), {p, m, 2, 0}, 1, 2, 1);
    const ScheduleTiming dualv = replay(*find_schedule("dualpipev"), {p, m, 2, 0}, 1, 2, 1);
    for (int r = 0; r < p; ++r) {
      CHECK(v.peak_chunk_activations[r] == 2 * p);
      CHECK(v.peak_in_flight_microbatches[r] == p);
      CHECK(dual.peak_chunk_activations[r] == p + 1);
      CHECK(dual.peak_in_flight_microbatches[r] == p + 1);
      CHECK(dualv.peak_chunk_activations[r] == 2 * p + 1);
      CHECK(dualv.peak_in_flight_microbatches[r] == p + 0.5);
    }
  }
}

TEST_CASE("breadth-first is interleaved with the whole batch as one group") {
  const Schedule& bf = *find_schedule("breadth-first");
  const Schedule& il = *find_schedule("interleaved");
  for (int p : kStages)
    for (const ScheduleShape& s : shapes("breadth-first", p)) {
      const ScheduleShape g{s.stages, s.microbatches, s.chunks, s.microbatches};
      INFO(shape_text(s));
      for (int r = 0; r < p; ++r) CHECK(bf.rank_ops(s, r) == il.rank_ops(g, r));
      const ScheduleTiming a = replay(bf, s, 1, 2), b = replay(il, g, 1, 2);
      CHECK(a.makespan_s == b.makespan_s);
      CHECK(a.peak_chunk_activations == b.peak_chunk_activations);
      check_exact(a.makespan_s, s.microbatches * 3.0 + (p - 1) * 3.0 / s.chunks);
    }
}

TEST_CASE("shapes a schedule cannot run are refused with the reason") {
  auto why = [](const char* name, ScheduleShape s) { return find_schedule(name)->not_applicable(s).value_or("none"); };
  CHECK(why("dualpipe", {3, 6, 2, 0}) == "dualpipe needs an even number of pipeline ranks, got p = 3");
  CHECK(why("dualpipe", {4, 6, 2, 0}).find("even m of at least 2p = 8") != std::string::npos);
  CHECK(why("dualpipe", {4, 9, 2, 0}).find("got m = 9") != std::string::npos);
  CHECK(why("dualpipev", {3, 6, 2, 0}) == "none");  // the reference asserts no parity
  CHECK(why("dualpipev", {4, 7, 2, 0}) == "dualpipev needs at least 2p = 8 microbatches, got m = 7");
  CHECK(why("zb-h1", {4, 8, 2, 0}) == "zb-h1 runs one chunk per rank (got 2)");
  CHECK(why("zb-h2", {4, 8, 3, 0}) == "zb-h2 runs one chunk per rank (got 3)");
  for (const char* name : {"zb-v", "dualpipe", "dualpipev"})
    CHECK(why(name, {4, 8, 1, 0}) == std::string(name) + " runs 2 chunks per rank (got 1)");
  CHECK(why("breadth-first", {4, 8, 1, 0}).find("at least 2 chunks") != std::string::npos);
  CHECK(why("breadth-first", {4, 3, 2, 0}) == "breadth-first needs at least p = 4 microbatches, got 3");
  CHECK(why("breadth-first", {4, 8, 2, 4}).find("got group size 4") != std::string::npos);
  CHECK(why("breadth-first", {4, 8, 2, 8}) == "none");
  for (const char* name : {"zb-h1", "zb-h2"}) CHECK(find_schedule(name)->chunks_required() == 1);
  for (const char* name : {"zb-v", "dualpipe", "dualpipev"}) CHECK(find_schedule(name)->chunks_required() == 2);
  for (const char* name : {"interleaved", "breadth-first"}) CHECK(find_schedule(name)->chunks_required() == 0);
  CHECK(problem(*find_schedule("dualpipe"), {3, 6, 2, 0}).find("not applicable: dualpipe needs an even") == 0);
}

TEST_CASE("an F&B unit starts when both passes may and ends both at once") {
  // One rank, one stage: F0, then F1 overlapped with B0, then B1. The unit takes F+B, or the
  // overlapped time given; nothing of B0 can start before F1's unit does.
  struct Unit final : Schedule {
    std::string name() const override { return "unit"; }
    std::string description() const override { return "a test table"; }
    std::vector<PassOp> rank_ops(const ScheduleShape&, int) const override {
      return {{PassKind::forward, 0, 0}, {PassKind::forward, 1, 0, true}, {PassKind::backward, 0, 0},
              {PassKind::backward, 1, 0}};
    }
  } unit;
  const ScheduleShape one{1, 2, 1, 0};
  check_exact(replay(unit, one, 1, 2).makespan_s, 1 + 3 + 2);
  check_exact(replay(unit, one, 1, 2, 0, 2.25).makespan_s, 1 + 2.25 + 2);
  CHECK(replay(unit, one, 1, 2).peak_chunk_activations[0] == 2);
}

TEST_CASE("the checker reports bad overlap off-route passes and stuck F&B units") {
  const ScheduleShape shape{4, 8, 2, 0};
  // Rank 0's first op is a forward of microbatch 0 (chunk 0); chunk 1 is off its downward route.
  Edited off_route("dualpipe", 0, [](std::vector<PassOp>& ops) { ops[0].chunk = 1; });
  CHECK(problem(off_route, shape) ==
        "rank 0 pass 0 (forward of microbatch 0 chunk 1) is off the route of microbatch 0, which never visits rank 0 "
        "chunk 1");
  Edited last_overlaps("dualpipe", 1, [](std::vector<PassOp>& ops) { ops.back().overlap_next = true; });
  CHECK(problem(last_overlaps, shape).find("has overlap_next but is not a forward") != std::string::npos);
  Edited forward_pair("zb-v", 0, [](std::vector<PassOp>& ops) { ops[0].overlap_next = true; });
  CHECK(problem(forward_pair, shape) ==
        "rank 0 pass 0 (forward of microbatch 0 chunk 0) has overlap_next but the next pass is not an input gradient");
  // A unit that holds a pass and its own dependency never starts.
  struct Own final : Schedule {
    std::string name() const override { return "own"; }
    std::string description() const override { return "a test table"; }
    std::vector<PassOp> rank_ops(const ScheduleShape&, int) const override {
      return {{PassKind::forward, 0, 0, true}, {PassKind::backward, 0, 0}};
    }
  } own;
  CHECK(problem(own, {1, 1, 1, 0}) ==
        "deadlock: rank 0 at pass 0 (forward of microbatch 0 chunk 0 overlapped with backward of microbatch 0 chunk 0) "
        "waits for the forward of microbatch 0 at rank 0 chunk 0 (stage 0)");
}

TEST_CASE("other time ratios miss dualpipe's published form and zb-v's zero") {
  // The DualPipe form is read off its F = B = W figure. With p = 8 and m = 16 the replayed largest
  // makespan - busy against it, F&B = F+B:
  //   (F, B, W) = (2, 2, 1): 12 against 9;  (1, 3, 1): 11 against 12;  (1.5, 1.7, 0.7): 9.9 against 8.4.
  struct Case { double f, b, w, dual, form; };
  for (Case c : {Case{2, 2, 1, 12, 9}, Case{1, 3, 1, 11, 12}, Case{1.5, 1.7, 0.7, 9.9, 8.4}}) {
    INFO("F=" << c.f << " B=" << c.b << " W=" << c.w);
    const ScheduleTiming t = replay(*find_schedule("dualpipe"), {8, 16, 2, 0}, c.f, c.b, c.w);
    check_exact(*std::max_element(t.idle_s.begin(), t.idle_s.end()), c.dual);
    check_exact(3 * ((c.f + c.b) + c.b - 3 * c.w), c.form);
  }
  // ZB-V's order is tuned for equal passes; with B input twice F and W its span idles.
  const ScheduleTiming v = replay(*find_schedule("zb-v"), {4, 8, 2, 0}, 1, 3, 1);
  CHECK(span_idle(v, 0) > 1);
}
