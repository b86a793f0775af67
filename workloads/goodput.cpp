#include "workloads/goodput.hpp"

#include <algorithm>
#include <cmath>

namespace clustersim {

namespace {

/// (e^x - 1)/x - 1 without cancellation for small x (the lost-work share of a segment).
double lost_share(double x) {
  if (x < 1e-4) return x / 2 + x * x / 6;
  return std::expm1(x) / x - 1;
}

/// splitmix64 as a stream: the state advances by the golden gamma, each output is mixed.
struct Stream {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1]: never 0, so its log is finite.
  double unit() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }
  /// Wall time until the next failure; infinite without failures.
  double exponential(double rate) { return rate > 0 ? -std::log(unit()) / rate : INFINITY; }
};

}  // namespace

double GoodputBreakdown::goodput_fraction() const {
  const double h = training_s + checkpointing_s + lost_s + restarting_s;
  return h > 0 ? training_s / h : 0;
}

GoodputBreakdown expected_goodput(const GoodputInputs& in) {
  const double lambda = in.failure_rate_per_s, H = in.horizon_s;
  const double L = in.interval_s + in.checkpoint_write_s, R = in.restart_s;
  GoodputBreakdown out;
  out.interruptions = lambda * H;
  if (lambda == 0) {
    out.training_s = H * in.interval_s / L;
    out.checkpointing_s = H * in.checkpoint_write_s / L;
    return out;
  }
  // Each part's share of E = e^(lambda R) / q, with q = lambda / (e^(lambda L) - 1), written so that
  // no share overflows when segments almost never complete (q -> 0: the job only loses and restarts).
  const double x = lambda * L, q = lambda / std::expm1(x), survive_restart = std::exp(-lambda * R);
  out.training_s = H * in.interval_s * q * survive_restart;
  out.checkpointing_s = H * in.checkpoint_write_s * q * survive_restart;
  // 1 - L q = ((e^x - 1)/x - 1) x / (e^x - 1): the lost share, without cancellation for small x.
  const double lost = x < 700 ? lost_share(x) * x / std::expm1(x) : 1 - L * q;
  out.lost_s = H * lost * survive_restart;
  out.restarting_s = -H * std::expm1(-lambda * R);  // 1 - e^(-lambda R)
  return out;
}

Seconds young_interval_s(double failure_rate_per_s, Seconds checkpoint_write_s) {
  return std::sqrt(2 * checkpoint_write_s / failure_rate_per_s);
}

Seconds daly_interval_s(double failure_rate_per_s, Seconds checkpoint_write_s) {
  const double M = 1 / failure_rate_per_s, d = checkpoint_write_s;
  if (d >= 2 * M) return M;
  const double r = d / (2 * M);
  return std::sqrt(2 * d * M) * (1 + std::sqrt(r) / 3 + r / 9) - d;
}

GoodputBreakdown monte_carlo_goodput(const MonteCarloInputs& in, const std::function<void(long done, long total)>& progress) {
  GoodputBreakdown sum;
  Stream rng{in.seed};
  const double lambda = in.failure_rate_per_s, H = in.horizon_s, R = in.restart_s;
  const std::size_t draws = in.step_times_s.size();
  for (long trial = 0; trial < in.trials; ++trial) {
    double t = 0;
    double next_failure = rng.exponential(lambda);
    bool running = true;  // false: restarting
    double step_s = in.step_times_s[draws > 1 ? rng.next() % draws : 0];
    const auto segment_s = [&] { return double(in.steps_per_checkpoint) * step_s; };
    while (t < H) {
      if (running) {
        const double train = segment_s(), end = t + train + in.checkpoint_write_s;
        if (next_failure >= end && end <= H) {
          sum.training_s += train;
          sum.checkpointing_s += in.checkpoint_write_s;
          t = end;
          continue;
        }
        if (next_failure >= H) {
          // The horizon cuts the segment short, not a failure: its time is work in progress
          // (counted as lost, it would bias lost work by a segment a trial when failures are few).
          sum.training_s += std::min(train, H - t);
          sum.checkpointing_s += std::max(0.0, H - t - train);
          break;
        }
        sum.lost_s += next_failure - t;
      } else {
        if (next_failure >= t + R && t + R <= H) {
          sum.restarting_s += R;
          t += R;
          running = true;
          step_s = in.step_times_s[draws > 1 ? rng.next() % draws : 0];
          continue;
        }
        if (next_failure >= H) {
          sum.restarting_s += H - t;
          break;
        }
        sum.restarting_s += next_failure - t;
      }
      // A failure before the horizon: whatever was under way starts over with a restart.
      sum.interruptions += 1;
      t = next_failure;
      next_failure = t + rng.exponential(lambda);
      running = false;
    }
    if (progress && ((trial + 1) % 16 == 0 || trial + 1 == in.trials)) progress(trial + 1, in.trials);
  }
  const double n = static_cast<double>(in.trials);
  sum.interruptions /= n;
  sum.training_s /= n;
  sum.checkpointing_s /= n;
  sum.lost_s /= n;
  sum.restarting_s /= n;
  return sum;
}

}  // namespace clustersim
