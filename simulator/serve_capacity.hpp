#pragma once
// A serving fleet's capacity: the highest arrival rate at which it still meets its SLO, the knee of
// its latency-throughput curve. `clustersim serve FILE --capacity` finds it the way the serving
// papers measure it on real systems (Sarathi-Serve's and Vidur's capacity search, DistServe's
// "goodput at 90% SLO attainment"): run the same stream at one rate after another, call a rate
// held when at least `attainment` of its requests meet every SLO target, and bisect between the
// highest rate that held and the lowest that did not.
//
// The stream keeps its seed at every rate, so Poisson and gamma arrivals are the same draws with
// every gap scaled by 1 / rate (the common random numbers that keep the curve smooth), and the
// same prompt and output lengths in the same order; the duration stays the file's, so a faster
// rate carries more requests. A rate well over capacity queues without bound, but only for the
// file's duration: attainment counts the requests of that window. A trace keeps its requests and
// has its arrival times scaled (time_scale), as Vidur and Sarathi-Serve replay traces at a rate.
#include <vector>

#include "simulator/serve_report.hpp"

namespace clustersim {

struct CapacityProbe {
  double rate_per_s = 0;
  ServeSummary summary;
  bool held = false;  // summary.slo_met_fraction >= attainment
};

struct CapacitySearch {
  double attainment = 0.9;   // fraction of requests that must meet the SLO
  double tolerance = 0.01;   // stop once the first failing rate is within this fraction of the last holding one
};

/// The rates the search may try: those a serving file may state (workloads/serving/serving_spec.cpp's
/// bounds on rate_per_s, on rate_per_s x duration_s, and on a trace's time_scale).
constexpr double kMinRatePerS = 1e-6, kMaxRatePerS = 1e6, kMaxRequests = 1e8;
constexpr double kMinTimeScale = 1e-6, kMaxTimeScale = 1e6;

/// The stream's own rate: rate_per_s, or a trace's requests after the first over the span of
/// their arrivals (1 / the gap, when evenly spaced). A trace whose requests all arrive at once has
/// none to scale: a UserError at the trace.
double stream_rate_per_s(const ServingSpec& s);

struct CapacityResult {
  std::vector<CapacityProbe> probes;  // in the order they ran
  double held_per_s = 0;              // highest rate that held; 0 where none did
  double failed_per_s = 0;            // lowest rate above it that failed; 0 where none did (or none was tried)
  double own_rate_per_s = 0;          // the stream's own rate (stream_rate_per_s), where the search began
  /// The last rate held although the fleet served hardly more than at half of it: the SLO sets
  /// no knee.
  bool saturated = false;
};

/// Needs a declared SLO and a rate-driven stream (poisson or gamma); the caller checks both.
CapacityResult find_capacity(const ServingSpec& s, const CapacitySearch& search);

/// The probe the capacity was read at (the highest held rate); null where none held.
const CapacityProbe* capacity_probe(const CapacityResult& r);

/// The probes sorted by rate: the latency-throughput curve the search walked.
std::vector<CapacityProbe> probes_by_rate(const CapacityResult& r);

}  // namespace clustersim
