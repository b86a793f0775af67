// One MoE layer's routing against closed forms. In the expected models a token's k experts are a
// uniform k-subset of the experts on M uniformly chosen nodes (all N nodes without a limit); a node
// of G = E/N experts is then hit with chance (M/N)(1 - C(MG - G, k) / C(MG, k)), and a rank of E/ep
// experts with (M/N)(1 - C(MG - E/ep, k) / C(MG, k)). Random draws are checked against the same
// forms within 5 standard deviations of their binomial counts: each figure has a false-alarm chance
// under 10^-6, and the seeds are fixed, so a pass is not luck that can change between runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "workloads/moe_routing.hpp"

using namespace clustersim;

namespace {

void check_close(double got, double want) {
  INFO("got " << got << ", closed form " << want);
  CHECK(std::abs(got - want) <= 1e-9 * std::max(1.0, std::abs(want)));
}

/// C(n, k) as a product of k ratios.
double choose(int n, int k) {
  if (k < 0 || k > n) return 0;
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

MoeRoutingSpec spec(std::int64_t tokens, int experts, int k, int ep, int ranks_per_node = 8, int node_limit = 0) {
  MoeRoutingSpec s;
  s.tokens_per_rank = tokens;
  s.routed_experts = experts;
  s.top_k = k;
  s.ep = ep;
  s.ranks_per_node = ranks_per_node;
  s.node_limit = node_limit;
  return s;
}

MoeRoutingSpec with_model(MoeRoutingSpec s, RoutingModel model, double hot_factor = 1, std::uint64_t seed = 0) {
  s.model = model;
  s.hot_factor = hot_factor;
  s.seed = seed;
  return s;
}

/// |count - n p| within 5 sigma of Binomial(n, p).
void check_binomial(double count, double n, double p) {
  const double sigma = std::sqrt(n * p * (1 - p));
  INFO("count " << count << ", mean " << n * p << ", sigma " << sigma);
  CHECK(std::abs(count - n * p) <= 5 * sigma);
}

/// Expected distinct nodes other than the source's that a token hits: (N-1) (M/N) (1 - C(MG-G,k)/C(MG,k)).
double remote_nodes_hit(int experts, int k, int nodes, int node_limit) {
  const int m = node_limit > 0 ? node_limit : nodes, g = experts / nodes;
  return (nodes - 1) * (double(m) / nodes) * (1 - choose(m * g - g, k) / choose(m * g, k));
}

}  // namespace

TEST_CASE("Uniform dispatch sends T k H bytes (ep-1)/ep from each rank to the others") {
  struct Case {
    std::int64_t tokens;
    int k, experts, ep, hidden;
  };
  for (Case c : {Case{4096, 8, 256, 64, 7168}, Case{1000, 2, 8, 8, 4096}, Case{17, 1, 4, 2, 64},
                 Case{512, 6, 64, 16, 2048}, Case{3, 4, 4, 1, 128}}) {
    const MoeLayerTraffic t = route_moe_layer(spec(c.tokens, c.experts, c.k, c.ep));
    const double want = double(c.tokens) * c.k * c.hidden * 2 /*BF16*/ * (c.ep - 1) / c.ep;
    for (int src = 0; src < c.ep; ++src)
      check_close(rank_traffic_bytes(t, src, token_bytes(c.hidden, WireFormat::bf16)).to_other_ranks_bytes, want);
    for (const auto& row : t.token_copies)
      for (double copies : row) check_close(copies, double(c.tokens) * c.k / c.ep);
  }
}

TEST_CASE("FP8 tokens carry one fp32 scale per 128 elements and BF16 tokens two bytes an element") {
  check_close(token_bytes(7168, WireFormat::fp8), 7168 + 56 * 4);
  check_close(token_bytes(100, WireFormat::fp8), 100 + 4);  // a partial block still has its scale
  check_close(token_bytes(7168, WireFormat::bf16), 2 * 7168);
}

TEST_CASE("Node-limited DeepEP dispatch sends each token over the network once per remote node hit") {
  // DeepSeek-V3's setting (DeepEP README): 4096 tokens, hidden 7168, 256 experts, top 8, 4 nodes a
  // token; here EP 64 over 8 nodes. Then smaller shapes, with and without a limit.
  struct Case {
    int experts, k, ep, ranks_per_node, node_limit;
  };
  const std::int64_t tokens = 4096;
  const double bytes = token_bytes(7168, WireFormat::fp8);
  for (Case c : {Case{256, 8, 64, 8, 4}, Case{256, 8, 64, 8, 0}, Case{64, 6, 16, 4, 2}, Case{16, 4, 8, 2, 1},
                 Case{16, 4, 8, 2, 4}, Case{8, 2, 8, 8, 0}}) {
    const MoeLayerTraffic t = route_moe_layer(spec(tokens, c.experts, c.k, c.ep, c.ranks_per_node, c.node_limit));
    const int nodes = c.ep / c.ranks_per_node, m = c.node_limit > 0 ? c.node_limit : nodes;
    const int g = c.experts / nodes, per_rank = c.experts / c.ep;
    const double remote = remote_nodes_hit(c.experts, c.k, nodes, c.node_limit);
    const double plain_remote_copies = double(c.k) * (nodes - 1) / nodes;  // the plain all-to-all's share off-node
    const double rank_hit = (double(m) / nodes) * (1 - choose(m * g - per_rank, c.k) / choose(m * g, c.k));
    INFO("E " << c.experts << " k " << c.k << " ep " << c.ep << " nodes " << nodes << " M " << c.node_limit
              << ": remote nodes a token " << remote << ", plain copies off-node " << plain_remote_copies);
    for (int src = 0; src < c.ep; ++src) {
      const RankTrafficBytes b = rank_traffic_bytes(t, src, bytes);
      check_close(b.network_bytes, tokens * remote * bytes);
      check_close(b.to_other_nodes_bytes, tokens * plain_remote_copies * bytes);
      CHECK(b.network_bytes <= b.to_other_nodes_bytes);  // the dedup never sends more
      for (int dst = 0; dst < c.ep; ++dst)  // NVLink: one copy per rank hit, none where the relay holds it
        check_close(t.nvlink_tokens[src][dst], dst == t.relay(src, dst) ? 0 : tokens * rank_hit);
    }
  }
  // DeepSeek-V3's numbers: 3.18 remote nodes a token against 7 off-node copies, 2.2x less network.
  const double remote = remote_nodes_hit(256, 8, 8, 4);
  CHECK(remote == Approx(3.18).epsilon(0.01));
  CHECK(7.0 / remote > 2.1);
}

TEST_CASE("Random node-limited routing by affinity hits nearly all M nodes") {
  // DeepSeek-V3's shape. Own node among the M chosen with chance M/N, so at most M - M/N = 3.5 remote
  // nodes a token; the uniform expected model gives 3.18 (the header's figures).
  const MoeRoutingSpec s = with_model(spec(256, 256, 8, 64, 8, 4), RoutingModel::random, 1, 5);
  const MoeLayerTraffic t = route_moe_layer(s);
  double network = 0;
  for (int src = 0; src < 64; ++src) network += rank_traffic_bytes(t, src, 1).network_bytes;
  const double remote = network / (256.0 * 64);
  CHECK(remote == Approx(3.46).margin(0.02));
  CHECK(remote <= 3.5);
  CHECK(remote > remote_nodes_hit(256, 8, 8, 4) + 0.2);
}

TEST_CASE("Expert loads add up to T k ep and are equal under uniform routing") {
  for (MoeRoutingSpec s : {spec(512, 256, 8, 64, 8, 4), spec(1000, 8, 2, 8), spec(7, 6, 3, 3, 3)}) {
    const double total = double(s.tokens_per_rank) * s.top_k * s.ep;
    for (MoeRoutingSpec m : {s, with_model(s, RoutingModel::skewed, 1.5), with_model(s, RoutingModel::random)}) {
      INFO(to_string(m.model) << " E " << m.routed_experts << " ep " << m.ep);
      const MoeLayerTraffic t = route_moe_layer(m);
      check_close(sum(t.expert_load), total);
      check_close(sum(t.rank_load), total);
      for (const auto& row : t.token_copies) check_close(sum(row), double(s.tokens_per_rank) * s.top_k);
    }
    const MoeLayerTraffic t = route_moe_layer(s);
    for (double load : t.expert_load) check_close(load, total / s.routed_experts);
    check_close(t.load_imbalance(), 1);
  }
}

TEST_CASE("A skewed hot expert gets hot_factor times the mean load and the others share the rest") {
  for (double h : {1.0, 1.5, 4.0, 32.0}) {  // 32 = E/k: every token takes expert 0
    const MoeRoutingSpec s = with_model(spec(4096, 256, 8, 64), RoutingModel::skewed, h);
    const MoeLayerTraffic t = route_moe_layer(s);
    const double total = 4096.0 * 8 * 64, mean = total / 256, per_rank = 256 / 64;
    check_close(t.expert_load[0], h * mean);
    for (int e = 1; e < 256; ++e) check_close(t.expert_load[e], (total - h * mean) / 255);
    // Rank 0 holds the hot expert and per_rank-1 others: imbalance (h + (per_rank-1)(E-h)/(E-1)) / per_rank.
    check_close(t.load_imbalance(), (h + (per_rank - 1) * (256 - h) / 255) / per_rank);
    for (int src = 1; src < 64; ++src) CHECK(t.token_copies[src] == t.token_copies[0]);  // symmetric sources
  }
  // With a node limit expert 0 still gets h x the mean; skewed at h = 1 is uniform.
  const MoeLayerTraffic limited = route_moe_layer(with_model(spec(4096, 256, 8, 64, 8, 4), RoutingModel::skewed, 3));
  check_close(limited.expert_load[0], 3 * 4096.0 * 8 * 64 / 256);
  const MoeLayerTraffic flat = route_moe_layer(with_model(spec(100, 64, 6, 16, 4, 2), RoutingModel::skewed, 1));
  const MoeLayerTraffic uniform = route_moe_layer(spec(100, 64, 6, 16, 4, 2));
  CHECK(flat.network_tokens == uniform.network_tokens);
  CHECK(flat.nvlink_tokens == uniform.nvlink_tokens);
  CHECK(flat.expert_load == uniform.expert_load);
}

TEST_CASE("Random routing repeats for a seed and changes with it") {
  const MoeRoutingSpec s = with_model(spec(500, 64, 6, 16, 4, 2), RoutingModel::random, 2, 42);
  const MoeLayerTraffic a = route_moe_layer(s), b = route_moe_layer(s);
  CHECK(a.token_copies == b.token_copies);
  CHECK(a.expert_load == b.expert_load);
  CHECK(a.network_tokens == b.network_tokens);
  CHECK(a.nvlink_tokens == b.nvlink_tokens);
  MoeRoutingSpec other = s;
  other.seed = 43;
  CHECK(route_moe_layer(other).token_copies != a.token_copies);

  // The traffic is the router's tokens counted: rank 0's draw first.
  RandomRouter router(s);
  std::vector<double> rank0_copies(16, 0.0);
  for (int i = 0; i < 500; ++i)
    for (int e : router.next_token()) rank0_copies[e / 4] += 1;
  CHECK(rank0_copies == a.token_copies[0]);
}

TEST_CASE("Random tokens take distinct experts within the node limit") {
  for (int limit : {0, 1, 2, 3}) {
    const MoeRoutingSpec s = with_model(spec(1, 64, 6, 16, 4, limit), RoutingModel::random, 3, 7);
    RandomRouter router(s);
    for (int i = 0; i < 20000; ++i) {
      const std::vector<int> experts = router.next_token();
      REQUIRE(experts.size() == 6);
      REQUIRE(std::adjacent_find(experts.begin(), experts.end(), std::greater_equal<>()) == experts.end());
      REQUIRE((experts.front() >= 0 && experts.back() < 64));
      std::set<int> nodes;
      for (int e : experts) nodes.insert(e / 16);  // 16 experts a node
      if (limit > 0) REQUIRE(int(nodes.size()) <= limit);
    }
  }
}

TEST_CASE("Random loads approach the expected ones within 5 sigma") {
  // Each token takes an expert at most once, so an expert's load is Binomial(tokens, chance), and so
  // is the count of src's tokens that hit a node.
  const std::int64_t tokens = 10000;
  for (int limit : {0, 2}) {
    const MoeRoutingSpec s = with_model(spec(tokens, 64, 6, 8, 2, limit), RoutingModel::random, 1, 2024);
    const MoeLayerTraffic t = route_moe_layer(s);
    for (double load : t.expert_load) check_binomial(load, tokens * 8.0, 6.0 / 64);
    if (limit == 0)  // the draw is then the expected model's, node for node
      for (int src = 0; src < 8; ++src)
        for (int n = 0; n < 4; ++n)
          if (n != t.node_of(src)) check_binomial(t.network_tokens[src][n], tokens, remote_nodes_hit(64, 6, 4, 0) / 3);
  }
  // A hot expert: expert 0 at hot_factor x the mean, with or without a node limit.
  for (int limit : {0, 2}) {
    const MoeRoutingSpec s = with_model(spec(tokens, 64, 6, 8, 2, limit), RoutingModel::random, 4, 99);
    check_binomial(route_moe_layer(s).expert_load[0], tokens * 8.0, 4 * 6.0 / 64);
  }
}

TEST_CASE("Impossible routing specs name the field at fault") {
  auto field_of = [](const MoeRoutingSpec& s) {
    const auto error = check_moe_routing(s);
    REQUIRE(error);
    CHECK_THROWS_AS(route_moe_layer(s), std::invalid_argument);
    CHECK_THROWS_AS(RandomRouter(s), std::invalid_argument);
    return error->field;
  };
  CHECK(field_of(spec(100, 256, 8, 48)) == "ep");                      // 48 does not divide 256
  CHECK(field_of(spec(100, 8, 9, 8)) == "top_k");                      // more than E
  CHECK(field_of(spec(100, 8, 0, 8)) == "top_k");
  CHECK(field_of(spec(100, 64, 4, 16, 8, 3)) == "node_limit");         // 2 nodes
  CHECK(field_of(spec(100, 64, 4, 16, 8, -1)) == "node_limit");
  CHECK(field_of(spec(100, 64, 9, 16, 2, 1)) == "node_limit");         // 8 experts a node < top_k 9
  CHECK(field_of(spec(100, 48, 2, 12, 8)) == "ranks_per_node");        // 12 ranks over nodes of 8
  CHECK(field_of(spec(0, 8, 2, 8)) == "tokens_per_rank");
  CHECK(field_of(with_model(spec(100, 64, 8, 8), RoutingModel::skewed, 0.5)) == "hot_factor");
  CHECK(field_of(with_model(spec(100, 64, 8, 8), RoutingModel::skewed, 8.5)) == "hot_factor");  // > E/k = 8
  CHECK(field_of(with_model(spec(100, 64, 8, 8), RoutingModel::random, std::nan(""))) == "hot_factor");
  CHECK(field_of(with_model(spec(100, 64, 8, 8), RoutingModel::uniform, 2)) == "hot_factor");
  CHECK_FALSE(check_moe_routing(spec(100, 64, 8, 16, 2, 1)));           // exactly top_k experts on one node
  CHECK_FALSE(check_moe_routing(spec(100, 8, 2, 4, 8)));                // EP inside one node
  CHECK_FALSE(check_moe_routing(with_model(spec(100, 64, 8, 8), RoutingModel::skewed, 8)));
  CHECK(parse_routing_model("skewed") == RoutingModel::skewed);
  CHECK_FALSE(parse_routing_model("zipf"));
}
