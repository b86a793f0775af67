#include "simulator/serve_capacity.hpp"

#include <algorithm>
#include <cmath>

#include "topologies/user_error.hpp"
#include "workloads/serving/request_stream.hpp"

namespace clustersim {

namespace {

bool is_trace(const ServingSpec& s) { return s.requests.arrival == ArrivalKind::trace; }

/// The stream at `rate_per_s`: a Poisson or gamma stream's own rate, or a trace's arrival times
/// scaled so that its rate (its_rate_per_s, at the file's time_scale) becomes this one.
ServingSpec at_rate(const ServingSpec& s, double rate_per_s, double its_rate_per_s) {
  ServingSpec at = s;
  if (is_trace(s))
    at.requests.time_scale = s.requests.time_scale * its_rate_per_s / rate_per_s;
  else
    at.requests.rate_per_s = rate_per_s;
  return at;
}

CapacityProbe probe(const ServingSpec& s, double rate_per_s, double its_rate_per_s, double attainment) {
  const ServingSpec at = at_rate(s, rate_per_s, its_rate_per_s);
  CapacityProbe p;
  p.rate_per_s = rate_per_s;
  p.summary = summarize_serving(at, simulate_serving(at));
  p.held = p.summary.requests > 0 && p.summary.slo_met_fraction >= attainment;
  return p;
}

}  // namespace

double stream_rate_per_s(const ServingSpec& s) {
  if (!is_trace(s)) return s.requests.rate_per_s;
  const std::vector<Request> requests = request_stream(s.requests);
  double first = 0, last = 0;
  if (!requests.empty()) {
    first = requests.front().arrival_s;
    last = requests.back().arrival_s;
  }
  if (requests.size() < 2 || last <= first)
    throw UserError(s.requests.trace_file, 0, "arrival_s",
                    "expected arrivals spread over time for --capacity, which scales them to each rate: this trace's arrive at one instant");
  return double(requests.size() - 1) / (last - first);
}

CapacityResult find_capacity(const ServingSpec& s, const CapacitySearch& search) {
  CapacityResult out;
  // The search stays inside what a serving file may state (the reader's bounds), which also keeps
  // every doubling and halving loop finite.
  const double its_rate = out.own_rate_per_s = stream_rate_per_s(s);
  const auto in_bounds = [&](double rate) {
    if (is_trace(s)) {
      const double scale = s.requests.time_scale * its_rate / rate;
      return scale >= kMinTimeScale && scale <= kMaxTimeScale;
    }
    return rate >= kMinRatePerS && rate <= kMaxRatePerS && rate * s.requests.duration_s <= kMaxRequests;
  };
  const auto run = [&](double rate) -> const CapacityProbe& {
    out.probes.push_back(probe(s, rate, its_rate, search.attainment));
    return out.probes.back();
  };
  // A window too short to hold one request at the file's rate says nothing: raise the rate first.
  double rate = its_rate;
  while (run(rate).summary.requests == 0) {
    if (!in_bounds(rate * 2)) return out;
    rate *= 2;
  }
  double lo = 0, hi = 0;  // highest held, lowest failed
  if (out.probes.back().held) {
    lo = rate;
    ServeSummary at_lo = out.probes.back().summary;
    while (hi == 0 && in_bounds(lo * 2)) {
      const double r = lo * 2;
      const CapacityProbe& p = run(r);
      if (!p.held) {
        hi = r;
      } else if ((is_trace(s) || p.summary.requests >= 1.5 * double(at_lo.requests)) &&
                 p.summary.requests_per_s < 1.1 * at_lo.requests_per_s) {
        // Many more requests (a trace's same ones, sooner), hardly more served, and still held:
        // the fleet is saturated and its queue grows, but the SLO does not see it (no TTFT
        // target). No knee to find. (A window of a request or two is not evidence: its count need
        // not grow with the rate.)
        out.saturated = true;
        out.held_per_s = r;
        return out;
      } else {
        lo = r;
        at_lo = p.summary;
      }
    }
  } else {
    hi = rate;
    while (lo == 0 && in_bounds(hi / 2)) {
      const double r = hi / 2;
      const CapacityProbe& p = run(r);
      if (p.summary.requests == 0) break;  // not even the lone requests of a near-empty window meet it
      (p.held ? lo : hi) = r;
    }
  }
  // Bisect while both ends are known; the midpoint is geometric, as the bracket may span decades.
  while (lo > 0 && hi > 0 && hi > lo * (1 + search.tolerance)) {
    const double r = std::sqrt(lo * hi);
    (run(r).held ? lo : hi) = r;
  }
  out.held_per_s = lo;
  out.failed_per_s = hi;
  return out;
}

const CapacityProbe* capacity_probe(const CapacityResult& r) {
  for (const CapacityProbe& p : r.probes)
    if (p.held && p.rate_per_s == r.held_per_s) return &p;
  return nullptr;
}

std::vector<CapacityProbe> probes_by_rate(const CapacityResult& r) {
  std::vector<CapacityProbe> sorted = r.probes;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const CapacityProbe& a, const CapacityProbe& b) { return a.rate_per_s < b.rate_per_s; });
  return sorted;
}

}  // namespace clustersim
