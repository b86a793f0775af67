#include "simulator/traffic_isolation.hpp"

#include <unordered_map>
#include <unordered_set>

namespace clustersim {

namespace {

/// Whether group b's flows are an image of group a's: the same flows in the same order, crossing
/// links of the same capacities.
bool congruent(const Cluster& cluster, const std::vector<OwnFlow>& a, const std::vector<OwnFlow>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size_bytes != b[i].size_bytes || a[i].latency_s != b[i].latency_s || a[i].links.size() != b[i].links.size())
      return false;
    for (std::size_t k = 0; k < a[i].links.size(); ++k)
      if (cluster.effective_bandwidth_Bps(link_of(a[i].links[k])) !=
          cluster.effective_bandwidth_Bps(link_of(b[i].links[k])))
        return false;
  }
  return true;
}

}  // namespace

Isolation check_isolation(const Cluster& cluster, const std::vector<std::vector<OwnFlow>>& groups,
                          const std::vector<std::size_t>& timed_as, const std::vector<const std::vector<LinkDir>*>& others) {
  Isolation out;
  std::unordered_set<LinkDir> other;
  for (const auto* links : others) other.insert(links->begin(), links->end());
  std::unordered_map<LinkDir, std::size_t> owner;  // link -> the first group crossing it
  std::unordered_set<LinkDir> counted;
  auto note = [&](LinkDir l, const std::string& what) {
    if (!counted.insert(l).second) return;
    ++out.shared_links;
    if (out.why.empty()) out.why = "the link " + cluster.direction_name(l) + " also carries " + what;
  };
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const OwnFlow& f : groups[g])
      for (LinkDir l : f.links) {
        auto [it, fresh] = owner.emplace(l, g);
        if (!fresh && it->second != g) note(l, "another group's collectives");
        if (other.count(l)) note(l, "other traffic of the job (pipeline, data-parallel, TP, CP or EP)");
      }
    if (out.why.empty() && !congruent(cluster, groups[timed_as[g]], groups[g]))
      out.why = "group " + std::to_string(g) + "'s flows are not an image of those of group " +
                std::to_string(timed_as[g]) + ", whose alone time it would reuse";
  }
  out.isolated = out.why.empty();
  return out;
}

}  // namespace clustersim
