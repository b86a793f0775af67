#include "topologies/background_traffic.hpp"

#include <cstdio>

#include "topologies/user_error.hpp"

namespace clustersim {

void apply_background(Cluster& cluster, const std::vector<BackgroundTraffic>& streams) {
  for (const BackgroundTraffic& b : streams)
    for (LinkId l : links_named(cluster, b.link)) {
      const BytesPerSecond capacity = cluster.effective_bandwidth_Bps(l);
      if (b.rate_Bps >= capacity) {
        char line[256];
        std::snprintf(line, sizeof line, "expected a rate below the %.3f GB/s that %s carries, got %.3f GB/s",
                      capacity / 1e9, b.link.name.c_str(), b.rate_Bps / 1e9);
        throw UserError(b.link.file, b.rate_line, b.rate_field, line);
      }
      // Capacity is line rate x the link type's efficiency: scaling the line rate by (C - R) / C
      // leaves exactly C - R.
      cluster.links[static_cast<std::size_t>(l)].bandwidth_Bps *= (capacity - b.rate_Bps) / capacity;
    }
}

}  // namespace clustersim
