// Pipeline schedules replayed with uniform stages and free communication, against closed forms.
// F and B are one microbatch's forward and full backward through one rank's whole share of the
// model (all v chunks), so one chunk's pass takes F/v or B/v. Sources: GPipe and 1F1B take
// (m+p-1)(F+B) (Narayanan et al. 2021, section 2.2.1); interleaved 1F1B shrinks the bubble to
// (p-1)(F+B)/v (same paper, section 2.2.2); peaks from shared/reference/hardware.md and Megatron's
// warm-up count (p-r-1)*2 + (v-1)*g.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "workloads/schedule.hpp"

using namespace clustersim;

namespace {

const int kStages[] = {2, 4, 8, 16};
// (F, B): backward twice the forward as in a transformer, equal, and a forward slower than its backward.
const std::pair<double, double> kTimes[] = {{1.0, 2.0}, {1.5, 1.5}, {2.0, 0.7}};

void check_exact(Seconds replayed, Seconds closed_form) {
  INFO("replayed " << replayed << " s, closed form " << closed_form << " s");
  CHECK(std::abs(replayed - closed_form) / closed_form < 1e-9);
}

// Microbatch counts that gpipe and 1f1b take for p stages: fewer than p, exactly p, and beyond.
std::vector<int> flat_microbatches(int p) { return {1, p - 1 > 0 ? p - 1 : 1, p, 2 * p, 4 * p, 3 * p + 1}; }

// Interleaved shapes Megatron accepts: m a multiple of g = p, or g = 2p with a last group of p.
std::vector<ScheduleShape> interleaved_shapes(int p) {
  std::vector<ScheduleShape> shapes;
  for (int v : {2, 3, 4}) {
    for (int m : {p, 2 * p, 4 * p}) shapes.push_back({p, m, v, 0});
    shapes.push_back({p, 3 * p, v, 2 * p});
    shapes.push_back({p, 4 * p, v, 2 * p});
  }
  return shapes;
}

std::string shape_text(const ScheduleShape& s) {
  return "p=" + std::to_string(s.stages) + " m=" + std::to_string(s.microbatches) + " v=" + std::to_string(s.chunks) +
         " g=" + std::to_string(s.group());
}

// A schedule given as a function, for feeding the checker broken or unusual tables.
class TableSchedule final : public Schedule {
 public:
  using Table = std::function<std::vector<PassOp>(const ScheduleShape&, int)>;
  explicit TableSchedule(Table table) : table_(std::move(table)) {}
  std::string name() const override { return "table"; }
  std::string description() const override { return "a test table"; }
  std::optional<std::string> not_applicable(const ScheduleShape&) const override { return std::nullopt; }
  std::vector<PassOp> rank_ops(const ScheduleShape& s, int rank) const override { return table_(s, rank); }

 private:
  Table table_;
};

std::vector<PassOp> gpipe_ops(int m) { return find_schedule("gpipe")->rank_ops({1, m, 1, 0}, 0); }

std::string problem(const Schedule& s, const ScheduleShape& shape) { return check_schedule(s, shape).value_or("none"); }

}  // namespace

TEST_CASE("the registry lists every schedule by name and nothing else") {
  CHECK(schedule_names() == "gpipe, 1f1b, interleaved, breadth-first, zb-h1, zb-h2, zb-v, dualpipe, dualpipev");
  for (const Schedule* s : all_schedules()) {
    CHECK(find_schedule(s->name()) == s);
    CHECK_FALSE(s->description().empty());
  }
  CHECK(find_schedule("zb-h3") == nullptr);
  CHECK(find_schedule("") == nullptr);
}

TEST_CASE("every pass of gpipe and 1f1b runs once without deadlock") {
  for (const char* name : {"gpipe", "1f1b"})
    for (int p : kStages)
      for (int m : flat_microbatches(p)) {
        const ScheduleShape shape{p, m, 1, 0};
        INFO(name << " " << shape_text(shape));
        CHECK(problem(*find_schedule(name), shape) == "none");
      }
}

TEST_CASE("every pass of interleaved runs once per chunk without deadlock") {
  for (int p : kStages)
    for (const ScheduleShape& shape : interleaved_shapes(p)) {
      INFO(shape_text(shape));
      CHECK(problem(*find_schedule("interleaved"), shape) == "none");
    }
}

TEST_CASE("gpipe and 1f1b take (m+p-1)(F+B) and idle (p-1)(F+B) on every rank") {
  for (const char* name : {"gpipe", "1f1b"})
    for (int p : kStages)
      for (int m : flat_microbatches(p))
        for (auto [f, b] : kTimes) {
          INFO(name << " p=" << p << " m=" << m << " F=" << f << " B=" << b);
          const ScheduleTiming t = replay(*find_schedule(name), {p, m, 1, 0}, f, b);
          check_exact(t.makespan_s, (m + p - 1) * (f + b));
          for (int r = 0; r < p; ++r) check_exact(t.idle_s[r], (p - 1) * (f + b));
        }
}

TEST_CASE("interleaved takes m(F+B) + (p-1)(F+B)/v") {
  for (int p : kStages)
    for (const ScheduleShape& s : interleaved_shapes(p))
      for (auto [f, b] : kTimes) {
        INFO(shape_text(s) << " F=" << f << " B=" << b);
        const ScheduleTiming t = replay(*find_schedule("interleaved"), s, f, b);
        check_exact(t.makespan_s, s.microbatches * (f + b) + (p - 1) * (f + b) / s.chunks);
        for (int r = 0; r < p; ++r) check_exact(t.busy_s[r], s.microbatches * (f + b));
      }
}

TEST_CASE("gpipe holds all m microbatches and 1f1b holds min of p-r and m on rank r") {
  for (int p : kStages)
    for (int m : flat_microbatches(p)) {
      INFO("p=" << p << " m=" << m);
      const ScheduleTiming gpipe = replay(*find_schedule("gpipe"), {p, m, 1, 0}, 1, 2);
      const ScheduleTiming one = replay(*find_schedule("1f1b"), {p, m, 1, 0}, 1, 2);
      CHECK(gpipe.peak_in_flight_microbatches[0] == m);
      CHECK(one.peak_in_flight_microbatches[0] == std::min(p, m));  // hardware.md: p
      for (int r = 0; r < p; ++r) CHECK(one.peak_chunk_activations[r] == std::min(p - r, m));
    }
}

TEST_CASE("interleaved holds its warm-up count plus one chunk on every rank") {
  // In chunk activations: Megatron's warm-up (p-r-1)*2 + (v-1)*g forwards, then the first steady
  // forward runs before the first backward frees one; capped at all m*v chunks.
  for (int p : kStages)
    for (const ScheduleShape& s : interleaved_shapes(p)) {
      INFO(shape_text(s));
      const ScheduleTiming t = replay(*find_schedule("interleaved"), s, 1, 2);
      const int v = s.chunks, g = s.group();
      for (int r = 0; r < p; ++r)
        CHECK(t.peak_chunk_activations[r] == std::min((p - r - 1) * 2 + (v - 1) * g + 1, s.microbatches * v));
      // hardware.md's p + (p-1)/v microbatches on rank 0 is exact once m*v exceeds the warm-up.
      if (g == p && s.microbatches >= 2 * p)
        CHECK(std::abs(t.peak_in_flight_microbatches[0] - (p + (p - 1.0) / v)) < 1e-12);
    }
}

TEST_CASE("interleaved refuses m that is not a multiple of the group size") {
  const Schedule& s = *find_schedule("interleaved");
  const auto why = s.not_applicable({4, 6, 2, 0});
  REQUIRE(why);
  CHECK(why->find("not a multiple of the group size 4") != std::string::npos);
  CHECK(s.not_applicable({4, 12, 2, 8}) == std::nullopt);  // last group of 4 = p: Megatron accepts it
  CHECK(s.not_applicable({4, 2, 2, 0}));                   // fewer microbatches than the group
  CHECK(s.not_applicable({4, 8, 1, 0}));                   // one chunk is plain 1f1b
  CHECK(find_schedule("gpipe")->not_applicable({4, 8, 2, 0}));
  CHECK(find_schedule("1f1b")->not_applicable({0, 8, 1, 0}));
  CHECK(problem(s, {4, 6, 2, 0}).find("not applicable: m = 6") == 0);
  CHECK_THROWS_AS(replay(s, {4, 6, 2, 0}, 1, 2), std::invalid_argument);
}

TEST_CASE("the checker finds the deadlock that makes Megatron refuse a short last group") {
  // Megatron's table with g = 4 and m = 5 on p = 4: the last group has one microbatch.
  const ScheduleShape shape{4, 5, 3, 4};
  TableSchedule loose([](const ScheduleShape& s, int r) { return find_schedule("interleaved")->rank_ops(s, r); });
  CHECK(problem(loose, shape).find("deadlock: rank 0") == 0);
}

TEST_CASE("the checker reports missing duplicated out-of-range and deadlocked passes") {
  const ScheduleShape shape{2, 3, 1, 0};
  auto drop_last = [](const ScheduleShape& s, int) {
    auto ops = gpipe_ops(s.microbatches);
    ops.pop_back();
    return ops;
  };
  auto repeat_first = [](const ScheduleShape& s, int) {
    auto ops = gpipe_ops(s.microbatches);
    ops.push_back(ops[0]);
    return ops;
  };
  auto bad_chunk = [](const ScheduleShape& s, int) {
    auto ops = gpipe_ops(s.microbatches);
    ops[0].chunk = 1;
    return ops;
  };
  // A cycle across ranks: rank 0 has no warm-up, so its B of microbatch 0 waits on rank 1, which
  // runs microbatch 1's forward first and so waits on rank 0.
  auto crossed = [](const ScheduleShape& s, int r) {
    auto ops = gpipe_ops(s.microbatches);
    if (r == 1) std::swap(ops[0], ops[1]);
    if (r == 0) ops = find_schedule("1f1b")->rank_ops({1, s.microbatches, 1, 0}, 0);
    return ops;
  };
  CHECK(problem(TableSchedule(drop_last), shape).find("missing input gradient of microbatch 2") == 0);
  CHECK(problem(TableSchedule(repeat_first), shape).find("duplicated forward of microbatch 0") == 0);
  CHECK(problem(TableSchedule(bad_chunk), shape).find("out of range") != std::string::npos);
  CHECK(problem(TableSchedule(crossed), shape) ==
        "deadlock: rank 0 at pass 1 (backward of microbatch 0 chunk 0) waits for the input gradient of microbatch 0 "
        "at rank 1 chunk 0 (stage 1); rank 1 at pass 0 (forward of microbatch 1 chunk 0) waits for the forward of "
        "microbatch 1 at rank 0 chunk 0 (stage 0)");
}

TEST_CASE("split backward frees activations at the input gradient and W waits for its B") {
  // GPipe with every backward split: all F, then every B (input gradient), then every W. The B
  // chain is GPipe's with B-W per pass, and rank 0 then runs its m Ws: (m+p-1)(F+B-W) + mW.
  auto split = [](const ScheduleShape& s, int) {
    std::vector<PassOp> ops;
    for (PassKind k : {PassKind::forward, PassKind::backward_input, PassKind::backward_weight})
      for (int j = 0; j < s.microbatches; ++j) ops.push_back({k, j, 0});
    return ops;
  };
  const double f = 1.0, b = 2.0, w = 0.8;
  for (int p : kStages)
    for (int m : {p, 3 * p + 1}) {
      INFO("p=" << p << " m=" << m);
      const ScheduleTiming t = replay(TableSchedule(split), {p, m, 1, 0}, f, b, w);
      check_exact(t.makespan_s, (m + p - 1) * (f + b - w) + m * w);
      CHECK(t.peak_chunk_activations[0] == m);
    }
  auto weight_first = [&](const ScheduleShape& s, int r) {
    auto ops = split(s, r);
    std::swap(ops[s.microbatches], ops[2 * s.microbatches]);  // W of microbatch 0 before its B
    return ops;
  };
  auto no_weight = [&](const ScheduleShape& s, int r) { auto ops = split(s, r); ops.pop_back(); return ops; };
  CHECK(problem(TableSchedule(weight_first), {2, 2, 1, 0}).find("deadlock") == 0);
  CHECK(problem(TableSchedule(no_weight), {2, 2, 1, 0}).find("missing weight gradient of microbatch 1") == 0);
}
