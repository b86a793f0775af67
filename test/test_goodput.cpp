// The goodput model (workloads/goodput.hpp) against its closed forms, written out here, and its
// Monte-Carlo against the closed form.
#include <catch2/catch.hpp>

#include <cmath>

#include "support.hpp"
#include "workloads/goodput.hpp"

using namespace clustersim;

namespace {

constexpr double kHour = 3600, kDay = 86400;

/// One failure an hour, 30-minute checkpoint intervals, 1-minute writes, 5-minute restarts, 30 days.
GoodputInputs hourly() { return {1 / kHour, 30 * 60, 60, 5 * 60, 30 * kDay}; }

MonteCarloInputs drawn(const GoodputInputs& in, Seconds step_s, long trials, std::uint64_t seed) {
  MonteCarloInputs m;
  m.failure_rate_per_s = in.failure_rate_per_s;
  m.steps_per_checkpoint = std::lround(in.interval_s / step_s);
  m.step_times_s = {step_s};
  m.checkpoint_write_s = in.checkpoint_write_s;
  m.restart_s = in.restart_s;
  m.horizon_s = in.horizon_s;
  m.trials = trials;
  m.seed = seed;
  return m;
}

}  // namespace

TEST_CASE("without failures every segment trains tau and writes delta: goodput tau / (tau + delta)") {
  GoodputInputs in = hourly();
  in.failure_rate_per_s = 0;
  const GoodputBreakdown b = expected_goodput(in);
  CHECK(b.interruptions == 0);
  CHECK(b.lost_s == 0);
  CHECK(b.restarting_s == 0);
  CHECK(b.goodput_fraction() == Approx(1800.0 / 1860.0).epsilon(1e-12));
  CHECK(b.training_s + b.checkpointing_s == Approx(in.horizon_s).epsilon(1e-12));
}

TEST_CASE("the closed form is Daly's renewal: per segment E = e^(lR)(e^(lL) - 1)/l, its parts add up to the horizon") {
  const GoodputInputs in = hourly();
  const GoodputBreakdown b = expected_goodput(in);
  const double l = in.failure_rate_per_s, L = in.interval_s + in.checkpoint_write_s, R = in.restart_s, H = in.horizon_s;
  const double E = std::exp(l * R) * (std::exp(l * L) - 1) / l;
  CHECK(b.interruptions == Approx(l * H).epsilon(1e-12));  // Poisson: lambda H in H
  CHECK(b.goodput_fraction() == Approx(in.interval_s / E).epsilon(1e-12));
  CHECK(b.training_s == Approx(H * in.interval_s / E).epsilon(1e-12));
  CHECK(b.checkpointing_s == Approx(H * in.checkpoint_write_s / E).epsilon(1e-12));
  CHECK(b.lost_s == Approx(H * ((std::exp(l * L) - 1) / l - L) / E).epsilon(1e-9));
  CHECK(b.restarting_s == Approx(H * (std::exp(l * L) - 1) * (std::exp(l * R) - 1) / l / E).epsilon(1e-9));
  CHECK(b.training_s + b.checkpointing_s + b.lost_s + b.restarting_s == Approx(H).epsilon(1e-12));
}

TEST_CASE("with rare failures each interruption loses half a segment and one restart (first order)") {
  GoodputInputs in = hourly();
  in.failure_rate_per_s = 1 / (1000 * kHour);  // lambda L = 0.00052
  const GoodputBreakdown b = expected_goodput(in);
  const double L = in.interval_s + in.checkpoint_write_s;
  // Failures strike uniformly within a segment: L/2 lost each; each costs R (restart failures ~ lambda R).
  CHECK(b.lost_s / b.interruptions == Approx(L / 2).epsilon(1e-3));
  CHECK(b.restarting_s / b.interruptions == Approx(in.restart_s).epsilon(1e-3));
}

TEST_CASE("Young's interval is sqrt(2 delta M), Daly's adds its higher-order terms, and Daly's is the best interval") {
  const double l = 1 / (3 * kHour), d = 60, M = 1 / l;
  CHECK(young_interval_s(l, d) == Approx(std::sqrt(2 * d * M)).epsilon(1e-12));
  const double r = d / (2 * M);
  CHECK(daly_interval_s(l, d) == Approx(std::sqrt(2 * d * M) * (1 + std::sqrt(r) / 3 + r / 9) - d).epsilon(1e-12));
  CHECK(daly_interval_s(l, 3 * M) == Approx(M));  // a write longer than 2M: checkpoint every M
  GoodputInputs in{l, daly_interval_s(l, d), d, 600, 54 * kDay};
  const double best = expected_goodput(in).goodput_fraction();
  for (double f : {0.5, 0.8, 1.25, 2.0}) {
    GoodputInputs other = in;
    other.interval_s = f * in.interval_s;
    CHECK(expected_goodput(other).goodput_fraction() < best);
  }
}

TEST_CASE("the Monte-Carlo's mean converges to the closed form (within 2% over 2000 trials) and a seed repeats it") {
  const GoodputInputs in = hourly();
  const GoodputBreakdown want = expected_goodput(in);
  const GoodputBreakdown got = monte_carlo_goodput(drawn(in, 10, 2000, 7));
  CHECK(test::relative_error(got.interruptions, want.interruptions) < 0.02);
  CHECK(test::relative_error(got.training_s, want.training_s) < 0.02);
  CHECK(test::relative_error(got.checkpointing_s, want.checkpointing_s) < 0.02);
  CHECK(test::relative_error(got.lost_s, want.lost_s) < 0.02);
  CHECK(test::relative_error(got.restarting_s, want.restarting_s) < 0.02);
  CHECK(test::relative_error(got.goodput_fraction(), want.goodput_fraction()) < 0.02);
  CHECK(got.training_s + got.checkpointing_s + got.lost_s + got.restarting_s == Approx(in.horizon_s).epsilon(1e-9));
  const GoodputBreakdown again = monte_carlo_goodput(drawn(in, 10, 2000, 7));
  CHECK(again.lost_s == got.lost_s);
  CHECK(again.interruptions == got.interruptions);
  CHECK(monte_carlo_goodput(drawn(in, 10, 2000, 8)).lost_s != got.lost_s);
}

TEST_CASE("the Monte-Carlo draws a step time per run from the given ones, and a narrow spread keeps the closed form at the mean") {
  GoodputInputs in = hourly();
  MonteCarloInputs m = drawn(in, 10, 2000, 11);
  m.step_times_s = {9.8, 10.0, 10.2};  // mean 10 s: 180 steps a checkpoint, 1764 to 1836 s
  const GoodputBreakdown got = monte_carlo_goodput(m);
  const GoodputBreakdown want = expected_goodput(in);
  CHECK(test::relative_error(got.goodput_fraction(), want.goodput_fraction()) < 0.02);
  CHECK(test::relative_error(got.lost_s, want.lost_s) < 0.02);
}

TEST_CASE("when failures come far faster than a segment completes, the job only loses work and restarts") {
  // One failure a second, hour-long segments: e^(lambda L) = e^3600 overflows a double; the limits
  // are lost e^(-lambda R) and restarting 1 - e^(-lambda R) of the horizon, nothing trained.
  const GoodputInputs in{1.0, 3600, 0, 0.5, 86400};
  const GoodputBreakdown b = expected_goodput(in);
  CHECK(b.training_s == 0);
  CHECK(b.lost_s == Approx(86400 * std::exp(-0.5)).epsilon(1e-12));
  CHECK(b.restarting_s == Approx(86400 * (1 - std::exp(-0.5))).epsilon(1e-12));
  CHECK(b.interruptions == Approx(86400));
}
