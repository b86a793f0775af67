// Which replicas the engine simulates (the rest fold onto them, fold.hpp) and whether TP collectives
// keep their alone times or run in place (traffic_isolation.hpp).
#include <algorithm>
#include <iterator>

#include "simulator/iteration_builder.hpp"
#include "simulator/traffic_isolation.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

std::vector<std::pair<int, int>> IterationBuilder::transfer_pairs() const {
  std::vector<std::pair<int, int>> pairs;
  for (const auto& [key, consumer] : pass_rank_) {
    const auto [stage, forward, mb] = key;
    const int from = forward ? stage - 1 : stage + 1;
    if (from < 0 || from >= static_cast<int>(plan_.stages.size())) continue;
    const int producer = pass_rank_.at({from, forward, mb});
    if (producer != consumer) pairs.emplace_back(producer, consumer);  // a V's turn stays on its GPUs
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

std::vector<std::pair<int, int>> IterationBuilder::sync_pairs() const {
  std::vector<std::pair<int, int>> pairs;
  if (auto slots = embedding_slots()) pairs.emplace_back((*slots)[0].first, (*slots)[1].first);
  for (const auto& holders : holders_)
    if (holders.size() > 1 && holders[0].first != holders[1].first) pairs.emplace_back(holders[0].first, holders[1].first);
  return pairs;
}

FoldInput IterationBuilder::job_traffic() const {
  FoldInput in;
  in.replicas = replicas_;
  if (plan_.free_communication || plan_.fold == FoldMode::assume) return in;
  if (!plan_.gpu_speed.empty())
    for (int d = 0; d < replicas_; ++d) in.speeds.push_back(replica_speeds(d));
  const auto pairs = transfer_pairs(), syncs = sync_pairs();
  for (int d = 0; d < replicas_; ++d) {
    std::vector<OwnFlow>& own = in.copies.emplace_back();
    for (int m = 0; m < members(); ++m) {
      for (const auto& [a, b] : pairs) {
        Route r = transfer_route(gpu(d, a, m), gpu(d, b, m));
        own.push_back({std::move(r.links), r.latency_s, 0});
      }
      for (const auto& [a, b] : syncs)
        for (Flow& f : ring_flows(Op::all_reduce, {gpu(d, a, m), gpu(d, b, m)}, 1 << 20).flows)
          own.push_back({std::move(f.links), f.latency_s, f.size_bytes});
    }
  }
  for (int r = 0; r < ranks(); ++r)
    for (const auto* groups : {&dp_groups_[static_cast<std::size_t>(r)], &expert_groups_[static_cast<std::size_t>(r)]})
      for (const auto& group : *groups)
        for (Flow& f : ring_flows(Op::all_reduce, group, 1 << 20).flows) in.shared.push_back(std::move(f.links));
  return in;
}

std::vector<std::vector<int>> IterationBuilder::tp_groups(int replica, int rank) const {
  const std::vector<int>& members_of = units_[unit(replica, rank)];
  const std::size_t tp = plan_.tp_group.empty() ? 1 : plan_.tp_group[static_cast<std::size_t>(rank)].size();
  if (tp < 2) return {};
  if (members_of.size() % tp != 0) return {plan_.tp_group[static_cast<std::size_t>(rank)]};
  std::vector<std::vector<int>> out;
  for (std::size_t at = 0; at < members_of.size(); at += tp)
    out.emplace_back(members_of.begin() + static_cast<std::ptrdiff_t>(at),
                     members_of.begin() + static_cast<std::ptrdiff_t>(at + tp));
  return out;
}

std::vector<OwnFlow> IterationBuilder::tp_flows(int rank, const std::vector<int>& group) const {
  std::vector<OwnFlow> out;
  for (int c : times_.choices_of(rank)) {
    const CollectiveChoice& choice = times_.choice(c);
    const CollectiveRequest req{choice.op, group, choice.bytes, plan_.channels, choice.protocol, 0};
    for (Flow& f : choice.algorithm->lower(router_, req).flows)
      out.push_back({std::move(f.links), f.latency_s, f.size_bytes});
  }
  return out;
}

void IterationBuilder::place_tp_collectives(FoldInput& traffic) {
  if (plan_.free_communication || plan_.fold == FoldMode::assume) return;
  std::vector<std::vector<OwnFlow>> groups;
  std::vector<std::size_t> timed_as;  // each rank's collectives were timed on replica 0's first group
  std::vector<std::size_t> first_of_rank(static_cast<std::size_t>(ranks()));
  std::vector<int> replica_of;
  bool leaves_node = false;  // a TP group across nodes, whose fabric links other jobs may load
  const Cluster& cluster = router_.cluster();
  for (int d = 0; d < replicas_; ++d)
    for (int r = 0; r < ranks(); ++r) {
      const auto unit_groups = tp_groups(d, r);
      for (std::size_t k = 0; k < unit_groups.size(); ++k) {
        std::vector<OwnFlow> flows = tp_flows(r, unit_groups[k]);
        if (flows.empty()) continue;
        for (int g : unit_groups[k]) leaves_node |= cluster.node_of_gpu(g) != cluster.node_of_gpu(unit_groups[k].front());
        if (d == 0 && k == 0) first_of_rank[static_cast<std::size_t>(r)] = groups.size();
        timed_as.push_back(first_of_rank[static_cast<std::size_t>(r)]);
        replica_of.push_back(d);
        groups.push_back(std::move(flows));
      }
    }
  if (groups.empty()) return;
  std::vector<const std::vector<LinkDir>*> others;
  for (const auto& own : traffic.copies)
    for (const OwnFlow& f : own) others.push_back(&f.links);
  for (const auto& links : traffic.shared) others.push_back(&links);
  Isolation iso = check_isolation(cluster, groups, timed_as, others);
  if (shares_fabric_ && leaves_node && iso.isolated) {
    iso.isolated = false;
    iso.shared_links = 1;
    iso.why = "a TP group spans nodes, and other jobs share the fabric its links cross";
  }
  const std::string more = iso.shared_links > 1 ? " (and " + std::to_string(iso.shared_links - 1) + " more)" : "";
  tp_in_place_ = plan_.tp_placement == TpPlacement::in_place ||
                 (plan_.tp_placement == TpPlacement::automatic && !iso.isolated);
  tp_placement_ = tp_in_place_ ? "in place" : "timed alone";
  if (plan_.tp_placement != TpPlacement::automatic) tp_placement_ += " (as asked)";
  tp_placement_ += iso.isolated ? ": no link of a TP group carries other traffic (proven)" : ": " + iso.why + more;
  // In place, TP flows are their replica's own traffic, which the fold must see.
  if (tp_in_place_ && plan_.fold != FoldMode::none)
    for (std::size_t g = 0; g < groups.size(); ++g) {
      auto& own = traffic.copies[static_cast<std::size_t>(replica_of[g])];
      own.insert(own.end(), std::make_move_iterator(groups[g].begin()), std::make_move_iterator(groups[g].end()));
    }
}

void IterationBuilder::fold(const FoldInput& in) {
  simulated_ = {0};
  simulated_as_.assign(static_cast<std::size_t>(replicas_), 0);
  if (plan_.fold == FoldMode::assume || replicas_ < 2) return;  // folded without proof
  if (plan_.free_communication) {  // nothing on the fabric: replicas differ only in their speeds
    std::vector<std::vector<double>> seen{replica_speeds(0)};
    for (int d = 1; d < replicas_; ++d) {
      const auto same = std::find(seen.begin(), seen.end(), replica_speeds(d));
      if (same != seen.end()) {
        simulated_as_[static_cast<std::size_t>(d)] = simulated_[static_cast<std::size_t>(same - seen.begin())];
        continue;
      }
      seen.push_back(replica_speeds(d));
      simulated_.push_back(d);
      simulated_as_[static_cast<std::size_t>(d)] = d;
    }
    return;
  }
  const Folding folding = fold_replicas(router_.cluster(), in, plan_.fold);
  if (plan_.fold == FoldMode::all && folding.simulated_replicas > 1)
    throw UserError("command line", 0, "--fold",
                    "all replicas fold into one only where that is exact, and here " + folding.why_not +
                        " (use --fold exact)");
  simulated_.clear();
  for (int d = 0; d < replicas_; ++d)
    if (folding.simulated_as[static_cast<std::size_t>(d)] == d) simulated_.push_back(d);
  simulated_as_ = folding.simulated_as;
}

FlowGraph IterationBuilder::ring_flows(Op op, const std::vector<int>& group, Bytes bytes) const {
  const CollectiveRequest req{op, group, bytes, plan_.channels, *find_protocol("Simple"), 0};
  return find_algorithm("ring")->lower(router_, req);
}

}  // namespace clustersim
