#pragma once
// Flapping links (variability.flapping_links): a link down for down_s of every period_s. An
// iteration of T seconds, started at a phase of the period no one controls, meets a down window
// with chance min(1, (down_s + T) / period_s); each draw (seed) decides whether its iteration does.
// One that does runs as it would with the link failed for the whole iteration: its flows rehash
// over the remaining equal-cost paths (as failed_links), or, where the link has no other path (a
// node's own link, or one whose loss parts the fabric), the job's flows on it wait the window out:
// its down_s is added to the iteration. Both are the worst case of the window's phase; an
// iteration much longer than the period meets several windows and is not modelled closer.
#include <cstdint>
#include <string>
#include <vector>

#include "topologies/cluster.hpp"
#include "workloads/variability.hpp"

namespace clustersim {

struct FlapState {
  std::string link;      // as the scenario names it
  double chance = 0;     // that an iteration meets one of its down windows
  bool down = false;     // in this draw's iteration
  bool rerouted = false; // down, its flows hashed over other paths
  Seconds stall_s = 0;   // down with no other path, carrying the job's traffic: the wait
};

struct FlapDraw {
  std::vector<FlapState> links;
  Seconds up_iteration_s = 0;  // the iteration with every flapping link up, which sets the chances
  Seconds stall_s = 0;         // the waits added to the iteration
  bool rerouted() const {
    for (const FlapState& f : links)
      if (f.rerouted) return true;
    return false;
  }
};

/// This draw's flapping links: `cluster` becomes the down state's (rerouted links failed);
/// `up_iteration_s` is the iteration simulated with every flapping link up, and `link_bytes` what
/// each link direction carried in it (a stalled link costs only if the job's traffic crosses it).
FlapDraw draw_flaps(Cluster& cluster, const std::vector<FlappingLink>& flaps, std::uint64_t seed, Seconds up_iteration_s,
                    const std::vector<double>& link_bytes);

}  // namespace clustersim
