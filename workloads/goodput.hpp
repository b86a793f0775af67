#pragma once
// What interruptions cost a training job over a stretch of days: the expected count, the work
// lost since the last checkpoint, the time spent writing checkpoints and restarting, and the
// fraction of the wall time left for training (goodput), in closed form and by Monte-Carlo.
//
// The model (Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
// FGCS 22(3), 2006): failures arrive as a Poisson process of rate lambda in wall time, whatever
// the job is doing. The job trains tau seconds, then writes a checkpoint for delta seconds; a
// failure during either loses everything since the last completed checkpoint, then costs a
// restart of R seconds (detection, relaunch, checkpoint load), which a failure during it starts
// over. With L = tau + delta, one checkpointed segment takes in expectation
//     E = e^(lambda R) (e^(lambda L) - 1) / lambda
// of wall time, of which tau trains, delta writes the checkpoint, (e^(lambda L) - 1)/lambda - L is
// lost work and (e^(lambda L) - 1)(e^(lambda R) - 1)/lambda restarting. Over a horizon H >> E
// (renewal-reward) each is that share of H, goodput is tau / E, and the interruptions are lambda H.
#include <cstdint>
#include <functional>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

struct GoodputInputs {
  double failure_rate_per_s = 0;  // lambda
  Seconds interval_s = 0;         // tau: training between checkpoints (> 0)
  Seconds checkpoint_write_s = 0; // delta
  Seconds restart_s = 0;          // R: detection + relaunch + checkpoint load
  Seconds horizon_s = 0;          // H: the wall time considered
};

/// Where the horizon's wall time goes; the four times add up to horizon_s.
struct GoodputBreakdown {
  double interruptions = 0;
  Seconds training_s = 0;       // kept: trained and checkpointed
  Seconds checkpointing_s = 0;  // writing checkpoints that completed
  Seconds lost_s = 0;           // training and checkpoint writes a failure discarded
  Seconds restarting_s = 0;     // detection, relaunch and load, failed restarts included
  double goodput_fraction() const;  // training_s over the horizon
};

/// The closed form above.
GoodputBreakdown expected_goodput(const GoodputInputs& in);

/// Young's optimum interval (1974), sqrt(2 delta / lambda).
Seconds young_interval_s(double failure_rate_per_s, Seconds checkpoint_write_s);
/// Daly's higher-order optimum (2006): with M = 1/lambda, for delta < 2M
///     sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] - delta, else M.
Seconds daly_interval_s(double failure_rate_per_s, Seconds checkpoint_write_s);

/// The same process drawn `trials` times (seeded; the same seed gives the same figures). Each run
/// of the job, from its start and after each restart, takes one step time from `step_times_s`
/// uniformly (a relaunched job lands on other machines, so other GPU speeds: the `run --repeat`
/// draws), and checkpoints every `steps_per_checkpoint` steps. Nothing is simulated again: the step
/// times are the ones simulated once. Returns the mean over trials of each figure. A segment the
/// horizon cuts short counts as training (and checkpointing): work in progress, which no failure
/// discarded.
struct MonteCarloInputs {
  double failure_rate_per_s = 0;
  long steps_per_checkpoint = 1;
  std::vector<Seconds> step_times_s;  // at least one
  Seconds checkpoint_write_s = 0;
  Seconds restart_s = 0;
  Seconds horizon_s = 0;
  long trials = 1;
  std::uint64_t seed = 0;
};
/// `progress`, when given, is told of the trials done (of in.trials) as they finish (a progress bar).
GoodputBreakdown monte_carlo_goodput(const MonteCarloInputs& in, const std::function<void(long done, long total)>& progress = {});

}  // namespace clustersim
