// The Clos layers shared by the fat-tree and rail-optimized fabrics.
#include <cmath>

#include "topologies/cluster.hpp"
#include "topologies/fabric.hpp"

namespace clustersim {

PortSplit split_ports(const TierSpec& tier) {
  const int down = static_cast<int>(std::lround(tier.radix * tier.oversubscription / (tier.oversubscription + 1.0)));
  return PortSplit{down, tier.radix - down};
}

void check_ports(const FabricSpec& fabric, const YamlField& field) {
  for (std::size_t t = 0; t + 1 < fabric.tiers.size(); ++t) {
    const PortSplit ports = split_ports(fabric.tiers[t]);
    if (ports.down < 1 || ports.up < 1)
      field.child("tiers").element(t).fail("expected a radix and oversubscription that leave ports both down and up");
  }
}

namespace {

int ceil_div(long a, long b) { return static_cast<int>((a + b - 1) / b); }

/// Fewest switches that each take an equal share of `uplinks_per_lower` from every lower switch,
/// with `lowers` switches below and `ports` ports down per switch: the smallest divisor of the
/// uplink count that fits. It reproduces NVIDIA's SuperPOD spine counts (4, 8, 16, 16 for 1-4 SUs).
int switches_needed(int lowers, int uplinks_per_lower, int ports) {
  const int at_least = ceil_div(static_cast<long>(lowers) * uplinks_per_lower, ports);
  for (int n = at_least; n <= uplinks_per_lower; ++n)
    if (uplinks_per_lower % n == 0) return n;
  return -1;
}

/// `asked` switches (tiers[i].switches), or the fewest when 0; a count that cannot take an equal
/// share of every lower switch's uplinks in its ports leaves `problem` saying why. More switches than
/// the fewest keep the bandwidth (every uplink is still cabled) but spread each lower switch's
/// uplinks over more of them: fewer parallel links per pair, more equal-cost next hops.
int switches_of(int lowers, int uplinks_per_lower, int ports, int asked, const char* what, std::string& problem) {
  if (asked == 0) return switches_needed(lowers, uplinks_per_lower, ports);
  const int fewest = switches_needed(lowers, uplinks_per_lower, ports);
  if (uplinks_per_lower % asked != 0)
    problem = std::to_string(asked) + " " + what + " do not divide the " + std::to_string(uplinks_per_lower) +
              " uplinks of each switch below evenly";
  else if (static_cast<long>(lowers) * (uplinks_per_lower / asked) > ports)
    problem = std::to_string(asked) + " " + what + " of " + std::to_string(ports) + " ports down cannot take " +
              std::to_string(lowers) + " switches x " + std::to_string(uplinks_per_lower) + " uplinks" +
              (fewest > 0 ? " (at least " + std::to_string(fewest) + ")" : "");
  return problem.empty() ? asked : -2;
}

}  // namespace

ClosShape clos_shape(int pods, int leaves_per_pod, const std::vector<TierSpec>& tiers) {
  ClosShape shape;
  const PortSplit leaf = split_ports(tiers[0]);
  if (leaf.down < 1 || leaf.up < 1) {
    shape.problem = "leaf radix and oversubscription leave no down or no up ports";
    return shape;
  }
  const PortSplit spine = split_ports(tiers[1]);
  const int spine_down = tiers.size() == 2 ? tiers[1].radix : spine.down;
  if (tiers.size() == 2 && pods != 1) {
    shape.problem = "a 2-tier fabric has a single pod";
    return shape;
  }
  shape.spines_per_pod = switches_of(leaves_per_pod, leaf.up, spine_down, tiers[1].switches, "spines", shape.problem);
  if (!shape.problem.empty()) return shape;
  if (shape.spines_per_pod < 0) {
    shape.problem = "too many leaves (" + std::to_string(leaves_per_pod) + ") for spines of radix " +
                    std::to_string(tiers[1].radix) + (tiers.size() == 2 ? "; add a core tier" : "");
    return shape;
  }
  if (tiers.size() == 3) {
    if (spine.up < 1) {
      shape.problem = "spine oversubscription leaves no up ports for the core tier";
      return shape;
    }
    shape.cores_per_plane = switches_of(pods, spine.up, tiers[2].radix, tiers[2].switches, "cores", shape.problem);
    if (shape.problem.empty() && shape.cores_per_plane < 0)
      shape.problem = "too many pods (" + std::to_string(pods) + ") for core switches of radix " +
                      std::to_string(tiers[2].radix);
  }
  return shape;
}

void build_clos_above(Cluster& c, const std::vector<std::vector<int>>& pods, const std::vector<TierSpec>& tiers,
                      const std::string& prefix) {
  const ClosShape shape = clos_shape(static_cast<int>(pods.size()), static_cast<int>(pods.front().size()), tiers);
  const int leaf_up = split_ports(tiers[0]).up;
  std::vector<std::vector<int>> spines_of_pod;
  for (std::size_t p = 0; p < pods.size(); ++p) {
    std::vector<int> spines;
    for (int s = 0; s < shape.spines_per_pod; ++s)
      spines.push_back(c.add_switch(2, prefix + (pods.size() == 1 ? "spine" + std::to_string(s)
                                                                  : "pod" + std::to_string(p) + ".spine" + std::to_string(s))));
    for (int leaf : pods[p])
      for (int k = 0; k < leaf_up; ++k) c.connect_switches(leaf, spines[k % shape.spines_per_pod]);
    spines_of_pod.push_back(spines);
  }
  if (tiers.size() < 3) return;
  const int spine_up = split_ports(tiers[1]).up;
  for (int plane = 0; plane < shape.spines_per_pod; ++plane) {
    std::vector<int> cores;
    for (int k = 0; k < shape.cores_per_plane; ++k)
      cores.push_back(c.add_switch(3, prefix + "group" + std::to_string(plane) + ".core" + std::to_string(k)));
    for (const auto& spines : spines_of_pod)
      for (int k = 0; k < spine_up; ++k) c.connect_switches(spines[plane], cores[k % shape.cores_per_plane]);
  }
}

}  // namespace clustersim
