// Pipeline transfers as NCCL sends them on a fabric with rails: PXN (NCCL's P2P_PXN_LEVEL 2, its
// default) leaves by the sender node's NIC on the receiver's rail, reached over NVLink, so a
// transfer between GPUs of different rails never crosses a spine. Four DGX A100 nodes of one
// scalable unit: rail r of every node on leaf r, the leaves joined by spines.
#include <catch2/catch.hpp>

#include <fstream>

#include "simulator/training_run.hpp"
#include "small_clusters.hpp"
#include "support.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;

namespace {

double tier_bytes(const RunReport& r, const std::string& tier) {
  for (const LinkTierLoad& t : r.link_tiers)
    if (t.tier == tier) return t.bytes;
  FAIL("no tier " << tier);
  return 0;
}

RunReport run_with_tiers(const std::string& cluster_yaml, const std::string& parallel) {
  // Untied embeddings: the first and last stage's embedding all-reduce is a collective, not a send.
  const std::string shipped = test::source_path("scenarios/models/megatron-1.7b.yaml");
  const std::string model = test::temp_file(
      test::replaced_all(test::read_file(shipped), "tied_embeddings: true", "tied_embeddings: false", "model"));
  const std::string path = test::small_megatron_scenario("pxn", cluster_yaml, parallel);
  const std::string text = test::replaced_all(test::read_file(path), shipped, model, "scenario");
  std::ofstream(path) << text;
  const ScenarioSpec s = load_scenario(path);
  return run_training(s, false, nullptr, FoldMode::none, Solver::fluid, Placements{}, true);
}

}  // namespace

TEST_CASE("pipeline transfers between rails go by PXN: over NVLink, then the receiver's rail, never a spine") {
  // tp 4, pp 8 with pipeline ranks next to each other: ranks 1 -> 2 go from GPUs 4-7 of node 0 to
  // GPUs 0-3 of node 1, member m from rail 4 + m to rail m. One replica, so nothing else is on the
  // network: every byte at the NICs is a pipeline transfer's.
  const RunReport r = run_with_tiers(test::rail_optimized_four_nodes(), "{tp: 4, pp: 8, dp: 1, order: tp-cp-pp-dp}");
  const double nic = tier_bytes(r, "NIC - leaf");
  REQUIRE(nic > 0);
  CHECK(tier_bytes(r, "leaf - spine") == 0);
  // Each transfer crosses a NIC link up and one down, and a PCIe link at each end.
  CHECK(tier_bytes(r, "GPU - NIC") == Approx(nic).epsilon(1e-12));

  // Without rails (a fat tree of the same nodes), the same transfers leave by the sender's own NIC:
  // the NIC tier carries the same bytes, and no more reach the NVSwitches than the TP collectives'.
  const RunReport fat = run_with_tiers(test::fat_tree_four_nodes(), "{tp: 4, pp: 8, dp: 1, order: tp-cp-pp-dp}");
  CHECK(tier_bytes(fat, "NIC - leaf") == Approx(nic).epsilon(1e-12));
  // PXN's NVLink leg: every byte that goes up a NIC link (half the NIC tier's) first goes into and
  // out of the NVSwitch (the sender's GPU to the GPU on the receiver's rail); the receiver uses its
  // own NIC. Every inter-node pair here changes rails, so the NVSwitch tier gains the NIC tier's bytes.
  CHECK(tier_bytes(r, "GPU - NVSwitch") - tier_bytes(fat, "GPU - NVSwitch") == Approx(nic).epsilon(1e-9));
}
