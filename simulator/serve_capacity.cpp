#include "simulator/serve_capacity.hpp"

#include <algorithm>
#include <cmath>

namespace clustersim {

namespace {

CapacityProbe probe(const ServingSpec& s, double rate_per_s, double attainment) {
  ServingSpec at = s;
  at.requests.rate_per_s = rate_per_s;
  CapacityProbe p;
  p.rate_per_s = rate_per_s;
  p.summary = summarize_serving(at, simulate_serving(at));
  p.held = p.summary.requests > 0 && p.summary.slo_met_fraction >= attainment;
  return p;
}

}  // namespace

CapacityResult find_capacity(const ServingSpec& s, const CapacitySearch& search) {
  CapacityResult out;
  const auto run = [&](double rate) -> const CapacityProbe& {
    out.probes.push_back(probe(s, rate, search.attainment));
    return out.probes.back();
  };
  double lo = 0, hi = 0;  // highest held, lowest failed
  const double start = s.requests.rate_per_s;
  if (run(start).held) {
    lo = start;
    for (int i = 0; i < search.max_steps && hi == 0; ++i) {
      const double r = lo * 2;
      const CapacityProbe& p = run(r);
      if (!p.held) {
        hi = r;
      } else if (p.summary.requests_per_s < 0.5 * r) {
        // Served at under half the offered rate and still held: the fleet is saturated and its
        // queue grows, but the SLO does not see it (no TTFT target). No knee to find.
        out.saturated = true;
        out.held_per_s = r;
        return out;
      } else {
        lo = r;
      }
    }
  } else {
    hi = start;
    for (int i = 0; i < search.max_steps && lo == 0; ++i) {
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

std::vector<CapacityProbe> probes_by_rate(const CapacityResult& r) {
  std::vector<CapacityProbe> sorted = r.probes;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const CapacityProbe& a, const CapacityProbe& b) { return a.rate_per_s < b.rate_per_s; });
  return sorted;
}

}  // namespace clustersim
