// PAT's steps in lockstep (collectives/steps.hpp: a step is one flow per channel over every send's
// route) against one flow per send and channel, on the 16K H100 SuperPOD with one GPU per node,
// where the per-send flows still run in seconds: a step in lockstep ends when its most loaded link
// drains, and a step waits for the whole previous one, which costs the ranks' slack where ECMP
// makes some sends collide.
#include <catch2/catch.hpp>

#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

struct Times {
  Seconds per_send_s, per_link_s;
  std::size_t per_send_flows, per_link_flows;
};

Times both_ways(Op op, int nodes, Bytes size) {
  const Cluster& cluster = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod-16k.yaml");
  const Router router(cluster);
  FabricEngine engine(cluster);
  CollectiveRequest req;
  req.op = op;
  for (int n = 0; n < nodes; ++n) req.ranks.push_back(n * cluster.gpus_per_node());
  req.size_bytes = size;
  req.channels = 16;
  req.protocol = *find_protocol("Simple");
  const Algorithm& pat = *find_algorithm("pat");
  REQUIRE(req.flows == AllToAllFlows::per_link);  // the default
  const FlowGraph links = pat.lower(router, req);
  req.flows = AllToAllFlows::per_pair;
  const FlowGraph sends = pat.lower(router, req);
  return {makespan(engine.run(sends)), makespan(engine.run(links)), sends.flows.size(), links.flows.size()};
}

}  // namespace

TEST_CASE("PAT in lockstep: within 2% of a flow per send at 1 MiB and 1 GiB, never faster, a flow per channel a step") {
  for (Op op : {Op::all_gather, Op::reduce_scatter})
    for (int nodes : {64, 128}) {
      INFO(to_string(op) << " on " << nodes << " nodes");
      const Times big = both_ways(op, nodes, Bytes{1} << 30);
      CHECK(test::relative_error(big.per_link_s, big.per_send_s) < 0.02);
      // Waiting for the whole step never starts a send earlier than its rank could.
      CHECK(big.per_link_s >= big.per_send_s * (1 - 1e-9));
      // log2(nodes) steps of 16 channels a rank, against a flow per channel and a join a step.
      const int steps = nodes == 64 ? 6 : 7;
      CHECK(big.per_send_flows == static_cast<std::size_t>(16 * steps * nodes));
      CHECK(big.per_link_flows == static_cast<std::size_t>((16 + 1) * steps));
      const Times small = both_ways(op, nodes, Bytes{1} << 20);
      CHECK(test::relative_error(small.per_link_s, small.per_send_s) < 0.02);
      CHECK(small.per_link_s >= small.per_send_s * (1 - 1e-9));
    }
}
