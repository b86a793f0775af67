#include "workloads/moe_routing.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace clustersim {

namespace {

using Matrix = std::vector<std::vector<double>>;

struct Geometry {
  int ranks_per_node, nodes, experts_per_rank, experts_per_node, chosen_nodes;  // chosen_nodes = M or N
};

Geometry geometry(const MoeRoutingSpec& s) {
  Geometry g;
  g.ranks_per_node = std::min(s.ranks_per_node, s.ep);
  g.nodes = s.ep / g.ranks_per_node;
  g.experts_per_rank = s.routed_experts / s.ep;
  g.experts_per_node = s.routed_experts / g.nodes;
  g.chosen_nodes = s.node_limit > 0 ? s.node_limit : g.nodes;
  return g;
}

/// Chance a token is hot: expert 0 forced in, so that f + (1-f) k/E = h k/E.
double hot_chance(const MoeRoutingSpec& s) {
  if (s.hot_factor == 1) return 0;
  return s.top_k * (s.hot_factor - 1) / (s.routed_experts - s.top_k);
}

/// Chance that `draws` distinct uniform picks from `pool` items all miss `avoid` given ones:
/// C(pool - avoid, draws) / C(pool, draws).
double all_miss(int pool, int avoid, int draws) {
  double p = 1;
  for (int i = 0; i < draws; ++i) p *= std::max(0.0, double(pool - avoid - i) / (pool - i));
  return p;
}

/// The expected model is a mixture of a plain token (weight 1-f) and a hot one (weight f).
struct Component {
  bool hot;
  double weight;
};

/// Chance that `node` is among the token's M nodes.
double node_chance(const Geometry& g, const Component& c, int node) {
  if (!c.hot) return double(g.chosen_nodes) / g.nodes;
  if (node == 0) return 1;
  return double(g.chosen_nodes - 1) / (g.nodes - 1);  // nodes > 1 here
}

/// Chance that the token takes one of experts first..first+count-1 (a rank's or a node's, on `node`).
double hit_chance(const MoeRoutingSpec& s, const Geometry& g, const Component& c, int node, int first, int count) {
  if (c.hot && first == 0) return 1;
  const int pool = g.chosen_nodes * g.experts_per_node - c.hot;
  return node_chance(g, c, node) * (1 - all_miss(pool, count, s.top_k - c.hot));
}

/// Chance that the token takes `expert`: its expected (token, expert) pairs.
double expected_pairs(const MoeRoutingSpec& s, const Geometry& g, const Component& c, int expert) {
  if (c.hot && expert == 0) return 1;
  const int pool = g.chosen_nodes * g.experts_per_node - c.hot;
  return node_chance(g, c, expert / g.experts_per_node) * (s.top_k - c.hot) / pool;
}

MoeLayerTraffic empty_traffic(const MoeRoutingSpec& s, const Geometry& g) {
  MoeLayerTraffic t;
  t.ep = s.ep;
  t.nodes = g.nodes;
  t.ranks_per_node = g.ranks_per_node;
  t.token_copies = Matrix(s.ep, std::vector<double>(s.ep, 0.0));
  t.expert_load.assign(s.routed_experts, 0.0);
  t.rank_load.assign(s.ep, 0.0);
  t.network_tokens = Matrix(s.ep, std::vector<double>(g.nodes, 0.0));
  t.nvlink_tokens = Matrix(s.ep, std::vector<double>(s.ep, 0.0));
  return t;
}

MoeLayerTraffic expected_traffic(const MoeRoutingSpec& s, const Geometry& g) {
  const double f = hot_chance(s), tokens = double(s.tokens_per_rank);
  std::vector<Component> mix{{false, 1 - f}};
  if (f > 0) mix.push_back({true, f});
  auto mixed = [&](auto&& per_component) {
    double sum = 0;
    for (const Component& c : mix) sum += c.weight * per_component(c);
    return sum;
  };

  MoeLayerTraffic t = empty_traffic(s, g);
  std::vector<double> rank_pairs(s.ep, 0.0), rank_hit(s.ep), node_hit(g.nodes);
  for (int e = 0; e < s.routed_experts; ++e) {
    const double pairs = mixed([&](const Component& c) { return expected_pairs(s, g, c, e); });
    t.expert_load[e] = tokens * s.ep * pairs;
    rank_pairs[e / g.experts_per_rank] += pairs;
  }
  for (int r = 0; r < s.ep; ++r)
    rank_hit[r] = mixed([&](const Component& c) {
      return hit_chance(s, g, c, t.node_of(r), r * g.experts_per_rank, g.experts_per_rank);
    });
  for (int n = 0; n < g.nodes; ++n)
    node_hit[n] = mixed([&](const Component& c) {
      return hit_chance(s, g, c, n, n * g.experts_per_node, g.experts_per_node);
    });

  for (int src = 0; src < s.ep; ++src) {
    for (int dst = 0; dst < s.ep; ++dst) {
      t.token_copies[src][dst] = tokens * rank_pairs[dst];
      if (dst != t.relay(src, dst)) t.nvlink_tokens[src][dst] = tokens * rank_hit[dst];
    }
    for (int n = 0; n < g.nodes; ++n)
      if (n != t.node_of(src)) t.network_tokens[src][n] = tokens * node_hit[n];
  }
  for (int r = 0; r < s.ep; ++r) t.rank_load[r] = tokens * s.ep * rank_pairs[r];
  return t;
}

MoeLayerTraffic drawn_traffic(const MoeRoutingSpec& s, const Geometry& g) {
  MoeLayerTraffic t = empty_traffic(s, g);
  RandomRouter router(s);
  std::vector<int> ranks, nodes;
  for (int src = 0; src < s.ep; ++src) {
    for (std::int64_t i = 0; i < s.tokens_per_rank; ++i) {
      ranks.clear();
      nodes.clear();
      for (int e : router.next_token()) {  // ascending, so ranks and nodes come sorted
        const int rank = e / g.experts_per_rank, node = t.node_of(rank);
        t.expert_load[e] += 1;
        t.token_copies[src][rank] += 1;
        if (ranks.empty() || ranks.back() != rank) ranks.push_back(rank);
        if (nodes.empty() || nodes.back() != node) nodes.push_back(node);
      }
      for (int rank : ranks)
        if (rank != t.relay(src, rank)) t.nvlink_tokens[src][rank] += 1;
      for (int node : nodes)
        if (node != t.node_of(src)) t.network_tokens[src][node] += 1;
    }
  }
  for (int e = 0; e < s.routed_experts; ++e) t.rank_load[e / g.experts_per_rank] += t.expert_load[e];
  return t;
}

/// Keeps `best` as the `count` highest-valued items offered so far, highest first. Items come in
/// ascending order, so a tie keeps the earlier one: a total order, hence portable picks.
template <class Value>
void offer(std::vector<int>& best, std::size_t count, int item, const Value& value) {
  if (best.size() == count && !(value(item) > value(best.back()))) return;
  if (best.size() == count) best.pop_back();
  best.insert(std::find_if(best.begin(), best.end(), [&](int b) { return value(item) > value(b); }), item);
}

std::string str(double x) {
  std::string text = std::to_string(x);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

const char* to_string(RoutingModel model) {
  switch (model) {
    case RoutingModel::uniform: return "uniform";
    case RoutingModel::skewed: return "skewed";
    case RoutingModel::random: return "random";
  }
  return "?";
}

std::optional<RoutingModel> parse_routing_model(const std::string& name) {
  for (RoutingModel m : {RoutingModel::uniform, RoutingModel::skewed, RoutingModel::random})
    if (name == to_string(m)) return m;
  return std::nullopt;
}

std::optional<MoeRoutingError> check_moe_routing(const MoeRoutingSpec& s) {
  using std::to_string;
  if (s.tokens_per_rank < 1) return MoeRoutingError{"tokens_per_rank", "at least 1"};
  if (s.routed_experts < 1) return MoeRoutingError{"routed_experts", "at least 1"};
  if (s.ep < 1) return MoeRoutingError{"ep", "at least 1"};
  if (s.ranks_per_node < 1) return MoeRoutingError{"ranks_per_node", "at least 1"};
  if (s.routed_experts % s.ep != 0)
    return MoeRoutingError{"ep", "a divisor of routed_experts (" + to_string(s.routed_experts) + "), got " +
                                     to_string(s.ep)};
  if (s.top_k < 1 || s.top_k > s.routed_experts)
    return MoeRoutingError{"top_k", "between 1 and routed_experts (" + to_string(s.routed_experts) + "), got " +
                                        to_string(s.top_k)};
  if (s.ep > s.ranks_per_node && s.ep % s.ranks_per_node != 0)
    return MoeRoutingError{"ranks_per_node", "a divisor of ep (" + to_string(s.ep) + ") or at least ep, got " +
                                                 to_string(s.ranks_per_node)};
  const Geometry g = geometry(s);
  if (s.node_limit < 0 || s.node_limit > g.nodes)
    return MoeRoutingError{"node_limit", "between 0 (no limit) and the " + to_string(g.nodes) +
                                             " nodes the EP group spans, got " + to_string(s.node_limit)};
  if (s.node_limit > 0 && s.node_limit * g.experts_per_node < s.top_k)
    return MoeRoutingError{"node_limit", "enough nodes to hold top_k (" + to_string(s.top_k) + ") experts at " +
                                             to_string(g.experts_per_node) + " a node, got " +
                                             to_string(s.node_limit)};
  const double most = double(s.routed_experts) / s.top_k;
  if (s.model == RoutingModel::uniform && s.hot_factor != 1)
    return MoeRoutingError{"hot_factor", "1 with uniform routing (skewed or random take a hot expert), got " +
                                             str(s.hot_factor)};
  if (!(s.hot_factor >= 1 && s.hot_factor <= most))
    return MoeRoutingError{"hot_factor", "between 1 and routed_experts / top_k (" + str(most) +
                                             ": a token takes the hot expert at most once), got " +
                                             str(s.hot_factor)};
  return std::nullopt;
}

MoeLayerTraffic route_moe_layer(const MoeRoutingSpec& spec) {
  if (auto error = check_moe_routing(spec)) throw std::invalid_argument(error->field + ": " + error->expected);
  const Geometry g = geometry(spec);
  return spec.model == RoutingModel::random ? drawn_traffic(spec, g) : expected_traffic(spec, g);
}

double MoeLayerTraffic::load_imbalance() const {
  const double total = std::accumulate(rank_load.begin(), rank_load.end(), 0.0);
  return *std::max_element(rank_load.begin(), rank_load.end()) / (total / rank_load.size());
}

RandomRouter::RandomRouter(const MoeRoutingSpec& spec) : spec_(spec), rng_(spec.seed) {
  if (auto error = check_moe_routing(spec)) throw std::invalid_argument(error->field + ": " + error->expected);
  const Geometry g = geometry(spec);
  nodes_ = g.nodes;
  experts_per_node_ = g.experts_per_node;
  hot_chance_ = hot_chance(spec);
  affinity_.resize(spec.routed_experts);
  node_score_.resize(nodes_);
}

double RandomRouter::uniform01() { return double(rng_() >> 11) * 0x1.0p-53; }

std::vector<int> RandomRouter::next_token() {
  const bool hot = hot_chance_ > 0 && uniform01() < hot_chance_;
  for (double& a : affinity_) a = uniform01();
  if (hot) affinity_[0] = std::numeric_limits<double>::infinity();
  const auto affinity = [&](int e) { return affinity_[e]; };
  const int k = spec_.top_k, m = spec_.node_limit, g = experts_per_node_;

  picked_.clear();
  if (m > 0 && m < nodes_) {  // DeepSeek-V3: the M nodes with the highest sums of their top ceil(k/M)
    const auto node_score = [&](int n) { return node_score_[n]; };
    chosen_nodes_.clear();
    for (int n = 0; n < nodes_; ++n) {
      picked_.clear();
      for (int e = n * g; e < (n + 1) * g; ++e) offer(picked_, (k + m - 1) / m, e, affinity);
      node_score_[n] = 0;
      for (int e : picked_) node_score_[n] += affinity_[e];
      offer(chosen_nodes_, m, n, node_score);
    }
    std::sort(chosen_nodes_.begin(), chosen_nodes_.end());
    picked_.clear();
    for (int n : chosen_nodes_)
      for (int e = n * g; e < (n + 1) * g; ++e) offer(picked_, k, e, affinity);
  } else {
    for (int e = 0; e < spec_.routed_experts; ++e) offer(picked_, k, e, affinity);
  }
  std::vector<int> experts = picked_;
  std::sort(experts.begin(), experts.end());
  return experts;
}

double token_bytes(int hidden, WireFormat format) {
  assert(hidden > 0 && "a token has a hidden vector");
  if (format == WireFormat::bf16) return 2.0 * hidden;
  const int scales = (hidden + kFp8ScaleBlockElements - 1) / kFp8ScaleBlockElements;
  return double(hidden) + double(scales) * kFp8ScaleBytes;
}

RankTrafficBytes rank_traffic_bytes(const MoeLayerTraffic& t, int src, double bytes_per_token) {
  RankTrafficBytes out;
  for (int dst = 0; dst < t.ep; ++dst) {
    if (dst != src) out.to_other_ranks_bytes += t.token_copies[src][dst] * bytes_per_token;
    if (t.node_of(dst) != t.node_of(src)) out.to_other_nodes_bytes += t.token_copies[src][dst] * bytes_per_token;
    out.nvlink_bytes += t.nvlink_tokens[src][dst] * bytes_per_token;
  }
  for (double tokens : t.network_tokens[src]) out.network_bytes += tokens * bytes_per_token;
  return out;
}

}  // namespace clustersim
