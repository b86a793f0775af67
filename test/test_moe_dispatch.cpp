// MoE dispatch and combine as flows on the fabric: DeepEP's intra-node figures on 8 H800s
// (shared/reference/published.yaml, all_to_all: DeepEP normal kernels, 4096 tokens, hidden 7168,
// top-8 of 256 experts, FP8 dispatch and BF16 combine; bottleneck NVLink bandwidth 153 and 158
// GB/s), and the node-limited two-leg dispatch against the plain all-to-all.
#include <catch2/catch.hpp>


#include "collectives/point_to_point.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"
#include "workloads/moe_routing.hpp"

using namespace clustersim;

namespace {

const Cluster& h800() { return test::shipped_cluster("scenarios/clusters/h800-deepseek.yaml"); }

}  // namespace

TEST_CASE("deepep intra-node dispatch and combine on 8 h800s are within 10% of the published bandwidth") {
  const Router router(h800());
  FabricEngine engine(h800());
  MoeRoutingSpec spec;
  spec.tokens_per_rank = 4096;
  spec.routed_experts = 256;
  spec.top_k = 8;
  spec.ep = 8;
  const MoeLayerTraffic t = route_moe_layer(spec);
  const std::vector<int> gpus{0, 1, 2, 3, 4, 5, 6, 7};
  for (auto [format, published_GBps] : {std::pair{WireFormat::fp8, 153.0}, {WireFormat::bf16, 158.0}}) {
    // DeepEP sends a token once to each GPU holding one of its experts.
    std::vector<std::vector<double>> bytes(8, std::vector<double>(8, 0));
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) bytes[i][j] = t.nvlink_tokens[i][j] * token_bytes(7168, format);
    const Seconds time = makespan(engine.run(lower_all_to_all_v(router, gpus, bytes, ideal_protocol(), false)));
    double sent = 0;
    for (int j = 1; j < 8; ++j) sent += bytes[0][j];
    const double bottleneck_GBps = sent / time / 1e9;
    INFO("simulated " << bottleneck_GBps << " GB/s, DeepEP " << published_GBps << " GB/s");
    CHECK(std::abs(bottleneck_GBps - published_GBps) / published_GBps < 0.10);
  }
}

TEST_CASE("node-limited dispatch sends fewer network bytes and finishes sooner than the plain all-to-all") {
  // DeepSeek-V3's shape: 256 experts, top-8, EP 64 over 8 nodes, at most 4 nodes per token.
  const Router router(h800());
  FabricEngine engine(h800());
  MoeRoutingSpec spec;
  spec.tokens_per_rank = 4096;
  spec.routed_experts = 256;
  spec.top_k = 8;
  spec.ep = 64;
  spec.node_limit = 4;
  const MoeLayerTraffic t = route_moe_layer(spec);
  std::vector<int> gpus(64);
  for (int i = 0; i < 64; ++i) gpus[i] = i;
  const double per_token = token_bytes(7168, WireFormat::fp8);
  std::vector<std::vector<double>> plain(64, std::vector<double>(64)), network(64, std::vector<double>(8)),
      nvlink(64, std::vector<double>(64, 0));
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) plain[i][j] = t.token_copies[i][j] * per_token;
    for (int n = 0; n < 8; ++n) network[i][n] = t.network_tokens[i][n] * per_token;
    // Relayed tokens leave over NVLink from the relay, not from their source.
    for (int j = 0; j < 64; ++j)
      if (j != i) nvlink[t.relay(i, j)][j] += t.nvlink_tokens[i][j] * per_token;
  }
  const Seconds plain_s = makespan(engine.run(lower_all_to_all_v(router, gpus, plain, ideal_protocol(), false)));
  const Seconds limited_s =
      makespan(engine.run(lower_node_limited_all_to_all(router, gpus, 8, network, nvlink, ideal_protocol())));
  INFO("plain " << plain_s * 1e3 << " ms, node-limited " << limited_s * 1e3 << " ms");
  CHECK(limited_s < plain_s);
  // Both are bound by the NICs: the network bytes per GPU over one NDR NIC at its calibrated rate
  // (400 Gb/s x 0.94) bound each from below.
  const double nic_Bps = 400e9 / 8 * 0.94;
  const RankTrafficBytes r0 = rank_traffic_bytes(t, 0, per_token);
  CHECK(plain_s >= r0.to_other_nodes_bytes / nic_Bps * 0.999);
  CHECK(limited_s >= r0.network_bytes / nic_Bps * 0.999);
  CHECK(limited_s == Approx(r0.network_bytes / nic_Bps).epsilon(0.15));
}
