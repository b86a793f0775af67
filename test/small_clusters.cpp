#include "small_clusters.hpp"

#include <catch2/catch.hpp>

#include <map>

#include "support.hpp"

namespace clustersim::test {

std::string two_leaf_fat_tree(int oversubscription) {
  const int radix = 8 + 8 / oversubscription;
  return replaced_all(
      replaced_all(read_file(source_path("scenarios/clusters/dgx-a100-fat-tree.yaml")), "  nodes: 384\n",
                   "  nodes: 2\n", "fat tree"),
      "  tiers:\n    - {radix: 40, oversubscription: 1}   # leaves: 20 down, 20 up\n"
      "    - {radix: 40, oversubscription: 1}   # spines: 20 down, 20 up, pods of 20 leaves\n"
      "    - {radix: 40}                        # core\n",
      "  tiers:\n    - {radix: " + std::to_string(radix) + ", oversubscription: " + std::to_string(oversubscription) +
          "}\n    - {radix: 16}\n",
      "fat tree");
}

std::string fat_tree_four_nodes() {
  return shipped_with("scenarios/clusters/dgx-a100-fat-tree.yaml", "  nodes: 384\n", "  nodes: 4\n");
}

std::string rail_optimized_four_nodes() {
  return shipped_with("scenarios/clusters/dgx-a100-superpod.yaml", "  nodes: 384\n", "  nodes: 4\n");
}

std::string single_switch_four_nodes() {
  const std::string fat = fat_tree_four_nodes();
  const std::size_t fabric = fat.find("fabric:");
  REQUIRE(fabric != std::string::npos);
  return fat.substr(0, fabric) +
         "fabric:\n  type: single_switch\n  nodes: 4\n  link_type: hdr\n  bandwidth_Gbps: 200\n  latency_us: 0.3\n";
}

Seconds bottleneck_s(const Cluster& cluster, const std::vector<Flow>& flows) {
  std::map<LinkDir, double> bytes;
  Seconds latency = 0;
  for (const Flow& f : flows) {
    for (LinkDir l : f.links) bytes[l] += static_cast<double>(f.size_bytes);
    latency = std::max(latency, f.latency_s);
  }
  Seconds worst = 0;
  for (const auto& [l, b] : bytes) worst = std::max(worst, b / cluster.effective_bandwidth_Bps(link_of(l)));
  return latency + worst;
}

}  // namespace clustersim::test
