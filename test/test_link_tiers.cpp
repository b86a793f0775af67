// Link tiers (`--report`'s utilization table): the bytes the engine records on each link direction,
// summed per tier, over what the tier's links carry in the run's time. One flow across a two-tier
// fat tree crosses each tier twice (up and down), so every figure is a closed form in its size.
#include <catch2/catch.hpp>

#include "simulator/engine.hpp"
#include "simulator/link_tiers.hpp"
#include "support.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

// Four nodes of one GPU and one NIC; leaves of 2 nodes with one link to each of 2 spines.
const char* kFatTree = clustersim::test::kSmallFatTreeYaml;

const LinkTierLoad& tier(const std::vector<LinkTierLoad>& rows, const std::string& name) {
  for (const LinkTierLoad& r : rows)
    if (r.tier == name) return r;
  FAIL("no tier " << name);
  return rows.front();
}

}  // namespace

TEST_CASE("one flow across the fat tree loads each tier it crosses by its size, twice, over the run's time") {
  const Cluster c = test::cluster_from_yaml(kFatTree);
  const Router router(c);
  const Route route = router.route(0, 2, flow_hash(0, 2, 0));  // nodes 0 and 2 are on different leaves
  const Bytes size = 1 << 30;
  FlowGraph g;
  Flow f;
  f.src_gpu = 0;
  f.dst_gpu = 2;
  f.links = route.links;
  f.size_bytes = size;
  f.latency_s = route.latency_s;
  f.copies = 2;  // two identical flows: twice the bytes on the same links
  g.add(f);
  FabricEngine engine(c);
  CHECK(engine.last_link_bytes().empty());  // off by default
  engine.record_link_bytes(true);
  const Seconds t = makespan(engine.run(g));
  const std::vector<LinkTierLoad> rows = link_tier_loads(c, engine.last_link_bytes(), t);

  const double carried = 2.0 * size;               // both copies
  const double net_Bps = 400e9 / 8 * 0.5;          // line rate x efficiency
  const double pcie_Bps = 30e9;
  // Up and down: each tier's bytes are twice what one link direction carried.
  const LinkTierLoad& pcie = tier(rows, "GPU - NIC");
  CHECK(pcie.link_type == "pcie");
  CHECK(pcie.links == 4);
  CHECK(pcie.bytes == Approx(2 * carried));
  CHECK(pcie.busiest_utilization == Approx(carried / (pcie_Bps * t)));
  CHECK(pcie.mean_utilization == Approx(2 * carried / (2 * 4 * pcie_Bps * t)));
  const LinkTierLoad& nic = tier(rows, "NIC - leaf");
  CHECK(nic.links == 4);
  CHECK(nic.bytes == Approx(2 * carried));
  CHECK(nic.busiest_utilization == Approx(carried / (net_Bps * t)));
  const LinkTierLoad& spine = tier(rows, "leaf - spine");
  CHECK(spine.links == 4);  // 2 leaves x 2 spines
  CHECK(spine.bytes == Approx(2 * carried));
  CHECK(spine.mean_utilization == Approx(2 * carried / (2 * 4 * net_Bps * t)));
  // The NIC links are the bottleneck at the net rate: busy all but the latency.
  CHECK(nic.busiest_utilization == Approx((t - route.latency_s) / t));
  CHECK(tier(rows, "GPU - NVSwitch").bytes == 0);

  // Without recorded bytes every tier reads 0, the links still counted.
  for (const LinkTierLoad& r : link_tier_loads(c, {}, t)) {
    CHECK(r.bytes == 0);
    CHECK(r.links > 0);
  }
}
