#include "small_clusters.hpp"

#include <catch2/catch.hpp>

#include <map>

#include "collectives/point_to_point.hpp"
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

FourToOneLeaves::FourToOneLeaves()
    : cluster(cluster_from_yaml(two_leaf_fat_tree(4), "fat-tree-4to1.yaml")), router(cluster), engine(cluster) {}

Seconds FourToOneLeaves::exchange_s(const std::vector<std::vector<double>>& bytes,
                                    const std::vector<std::pair<int, int>>& pairs) const {
  std::vector<Flow> flows;
  for (auto [a, b] : pairs)
    for (Flow& f : lower_all_to_all_v(router, {a, b}, bytes, *find_protocol("Simple"), false).flows)
      flows.push_back(std::move(f));
  return bottleneck_s(cluster, flows);
}

void check_placement_option_errors(const std::string& scenario, const std::string& option, const std::string& what) {
  const CliResult bad = run_cli("run " + scenario + " --fold exact " + option + " sometimes");
  CHECK(bad.exit_code == 2);
  CHECK(bad.stdout_text.empty());
  CHECK(bad.stderr_text.find(option + ": expected auto, alone or in-place, got 'sometimes'") != std::string::npos);
  for (const std::string& command : {"run " + scenario, "compare " + scenario + " --schedules 1f1b"}) {
    const CliResult assumed = run_cli(command + " --fold assume " + option + " alone");
    CHECK(assumed.exit_code == 2);
    CHECK(assumed.stdout_text.empty());
    CHECK(assumed.stderr_text.find(option + ": expected --fold exact, none or all as well: under assume " + what +
                                   " are always timed alone") != std::string::npos);
  }
}

}  // namespace clustersim::test
