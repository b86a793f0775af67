#pragma once
// Where one MoE layer's tokens go: for each expert-parallel (EP) rank, how many token copies it sends
// each other rank in the dispatch all-to-all, how many token-expert pairs each expert and rank then
// computes, and - for DeepEP-style node-limited dispatch - how many tokens cross the network to each
// node and fan out over NVLink inside it. The combine retraces the dispatch in reverse with the same
// counts. Pure: no network, no YAML.
//
// Placement: experts lie contiguously, E/ep per rank; rank r sits on node r / ranks_per_node.
//
// Conventions:
//  - token_copies counts one copy per (token, expert) pair whose expert is on the destination rank,
//    so uniform routing sends T k (ep-1)/ep copies to other ranks. Megatron's and DeepSpeed's
//    all-to-all send one copy per (token, rank) instead; nvlink_tokens counts that way.
//  - DeepEP dispatch (DeepSeek-V3 report section 3.2.2, DeepEP README "normal kernels"): a token
//    crosses the network once per remote node it needs, to the rank with the source's local index
//    there (the relay), which forwards it over NVLink once to each other rank on that node holding
//    one of its experts. Tokens for the source's own node go over NVLink directly.
//  - Node-limited routing (DeepSeek-V3 report section 2.1.2): a token's experts span at most M
//    nodes, chosen by the sum of each node's highest ceil(k/M) expert affinities.
//
// Routing models:
//  - uniform (expected counts): a token picks M nodes uniformly (all nodes without a limit), then k
//    distinct experts uniformly among theirs.
//  - skewed (expected counts): expert 0 is hot - it sits on rank 0 and node 0, so rank 0 is the
//    hottest rank and node 0 the hottest node. With probability f = k (h-1) / (E-k) a token is hot:
//    it takes node 0 and expert 0, then M-1 more nodes and k-1 more experts uniformly; otherwise it
//    routes as uniform. Expert 0 then gets exactly h x the mean load; without a node limit the
//    others share the rest equally (with one, node 0's other experts get a little more). Sources are
//    symmetric. h lies in [1, E/k]: a token takes an expert at most once.
//  - random (seeded draws of the same hot rule): each token draws k distinct experts. Affinities are
//    i.i.d. uniform (a hot token's expert 0 is +infinity); the top k win, after the node limit. A
//    std::mt19937_64 seeded with `seed` feeds doubles built from its top 53 bits (std distributions
//    are implementation-defined); ranks draw in order, so results repeat across runs and platforms.
//    E draws a token: about a second for DeepSeek-V3's 256 experts and 64 x 4096 tokens.
//  The affinity rule nearly always hits all M nodes, the uniform model's k picks sometimes fewer: for
//  DeepSeek-V3's shape (E 256, k 8, M 4 of 8 nodes) 3.46 remote nodes a token against 3.18.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace clustersim {

enum class RoutingModel { uniform, skewed, random };
const char* to_string(RoutingModel model);
std::optional<RoutingModel> parse_routing_model(const std::string& name);

struct MoeRoutingSpec {
  std::int64_t tokens_per_rank = 1;  // T: tokens each EP rank holds for this layer
  int routed_experts = 1;            // E
  int top_k = 1;                     // k
  int ep = 1;                        // EP ranks; divides E
  int ranks_per_node = 8;            // EP ranks sharing one NVLink domain; ep is a multiple or smaller
  int node_limit = 0;                // M: most nodes a token's experts span; 0 = no limit
  RoutingModel model = RoutingModel::uniform;
  double hot_factor = 1;             // h: expert 0's load / mean load (skewed, random); 1 for uniform
  std::uint64_t seed = 0;            // random
};

/// A bad spec: the field at fault and what it should be. The caller turns it into a UserError.
struct MoeRoutingError {
  std::string field;
  std::string expected;
};
std::optional<MoeRoutingError> check_moe_routing(const MoeRoutingSpec& spec);

struct MoeLayerTraffic {
  int ep = 0, nodes = 0, ranks_per_node = 0;  // ranks_per_node = min(spec's, ep)
  std::vector<std::vector<double>> token_copies;    // [src rank][dst rank], (token, expert) pairs
  std::vector<double> expert_load;                  // [expert]: token-expert pairs computed
  std::vector<double> rank_load;                    // [rank]: its experts' loads summed
  std::vector<std::vector<double>> network_tokens;  // [src rank][dst node]: distinct tokens; 0 on own node
  std::vector<std::vector<double>> nvlink_tokens;   // [src rank][dst rank]: distinct tokens over NVLink

  int node_of(int rank) const { return rank / ranks_per_node; }
  /// Where src's tokens for dst's node arrive from the network: the rank with src's local index.
  int relay(int src, int dst) const { return node_of(dst) * ranks_per_node + src % ranks_per_node; }
  double load_imbalance() const;  // max rank load / mean rank load
};

/// Throws std::invalid_argument ("field: expected") for a spec check_moe_routing rejects.
MoeLayerTraffic route_moe_layer(const MoeRoutingSpec& spec);

/// The random model's draw, one token at a time, in the order route_moe_layer uses (rank 0's T tokens,
/// then rank 1's, ...). Tokens do not depend on their source rank.
class RandomRouter {
 public:
  explicit RandomRouter(const MoeRoutingSpec& spec);  // throws as route_moe_layer
  std::vector<int> next_token();                     // k distinct experts, ascending

 private:
  double uniform01();
  MoeRoutingSpec spec_;
  int nodes_, experts_per_node_;
  double hot_chance_;
  std::mt19937_64 rng_;
  std::vector<double> affinity_, node_score_;  // scratch, kept to save allocations
  std::vector<int> picked_, chosen_nodes_;
};

/// Bytes of one token's hidden vector on the wire. DeepSeek-V3 and DeepEP dispatch in FP8 with one
/// fp32 scale per 128 elements (the report's 1x128 activation tiles, section 3.3.2) and combine in BF16.
enum class WireFormat { fp8, bf16 };
inline constexpr int kFp8ScaleBlockElements = 128;
inline constexpr int kFp8ScaleBytes = 4;
double token_bytes(int hidden, WireFormat format);

/// One source rank's traffic in one direction (dispatch: src sends; combine: src receives as much).
struct RankTrafficBytes {
  double to_other_ranks_bytes = 0;  // plain all-to-all, every (token, expert) copy off this rank
  double to_other_nodes_bytes = 0;  // ... of which to ranks on other nodes
  double network_bytes = 0;         // DeepEP: one copy per (token, remote node)
  double nvlink_bytes = 0;          // DeepEP: src's tokens over NVLink (direct in its node, relayed elsewhere)
};
RankTrafficBytes rank_traffic_bytes(const MoeLayerTraffic& traffic, int src, double bytes_per_token);

}  // namespace clustersim
