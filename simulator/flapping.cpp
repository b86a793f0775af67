#include "simulator/flapping.hpp"

#include <algorithm>

#include "topologies/link_reroute.hpp"

namespace clustersim {

FlapDraw draw_flaps(Cluster& cluster, const std::vector<FlappingLink>& flaps, std::uint64_t seed, Seconds up_iteration_s,
                    const std::vector<double>& link_bytes) {
  FlapDraw draw;
  draw.up_iteration_s = up_iteration_s;
  for (std::size_t i = 0; i < flaps.size(); ++i) {
    const FlappingLink& f = flaps[i];
    FlapState s;
    s.link = f.link.name;
    s.chance = std::min(1.0, (f.down_s + up_iteration_s) / f.period_s);
    // flap_variate is in (0, 1]: a chance of 1 is always down, and no chance below it always is.
    s.down = flap_variate(seed, static_cast<int>(i)) <= s.chance;
    if (s.down) {
      const std::vector<LinkId> links = links_named(cluster, f.link);
      s.rerouted = fail_if_reroutable(cluster, f.link);
      bool carries = false;
      for (LinkId l : links)
        for (LinkDir d : {forward(l), backward(l)})
          carries = carries || (static_cast<std::size_t>(d) < link_bytes.size() && link_bytes[static_cast<std::size_t>(d)] > 0);
      if (!s.rerouted && carries) s.stall_s = f.down_s;
      draw.stall_s += s.stall_s;
    }
    draw.links.push_back(std::move(s));
  }
  return draw;
}

}  // namespace clustersim
