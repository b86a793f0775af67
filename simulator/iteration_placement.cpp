// Which replicas the engine simulates (the rest fold onto them, fold.hpp) and whether TP collectives
// and context-parallel exchanges keep their alone times or run in place (traffic_isolation.hpp).
#include <algorithm>
#include <iterator>
#include <utility>

#include "collectives/point_to_point.hpp"
#include "collectives/spray.hpp"
#include "simulator/iteration_builder.hpp"
#include "simulator/traffic_isolation.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

Route IterationBuilder::transfer_route(int src, int dst) const {
  const Cluster& c = router_.cluster();
  const std::uint64_t hash = flow_hash(src, dst, 0);
  if (!pxn_transfers_ || c.node_of_gpu(src) == c.node_of_gpu(dst)) return router_.route(src, dst, hash);
  const int nic = pxn_egress_nic(c, src, dst), via = c.gpu_of_nic(nic);
  if (nic == c.nic_of_gpu(src)) return router_.route(src, dst, hash);
  Route r;
  if (c.nic_of_gpu(via) != nic) {  // a GPU with several NICs: this one is not its own
    router_.append_route_via_nic(src, nic, dst, hash, r);
    return r;
  }
  router_.append_scale_up(src, via, r);
  router_.append_route(via, dst, hash, r);  // kept by the router: one GPU pair, every microbatch
  return r;
}

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

std::vector<IterationBuilder::SyncPair> IterationBuilder::sync_pairs() const {
  std::vector<SyncPair> pairs;
  if (auto slots = embedding_slots()) pairs.push_back({(*slots)[0].first, (*slots)[1].first, plan_.embedding_sync_bytes});
  for (std::size_t k = 0; k < holders_.size(); ++k) {
    const auto& holders = holders_[k];
    if (holders.size() > 1 && holders[0].first != holders[1].first)
      pairs.push_back({holders[0].first, holders[1].first, plan_.stages[k].gradient_bytes});
  }
  return pairs;
}

std::vector<LinkDir> IterationBuilder::as_run(std::vector<LinkDir> links) const {
  return split_links(router_, std::move(links));
}

FoldInput IterationBuilder::job_traffic() const {
  FoldInput in;
  in.replicas = replicas_;
  if (plan_.free_communication || plan_.fold == FoldMode::assume) return in;
  if (!plan_.gpu_speed.empty())
    for (int d = 0; d < replicas_; ++d) in.speeds.push_back(replica_speeds(d));
  const auto pairs = transfer_pairs();
  const auto syncs = sync_pairs();
  for (int d = 0; d < replicas_; ++d) {
    std::vector<OwnFlow>& own = in.copies.emplace_back();
    for (int m = 0; m < members(); ++m) {
      for (const auto& [a, b] : pairs) {
        Route r = transfer_route(gpu(d, a, m), gpu(d, b, m));
        own.push_back({as_run(std::move(r.links)), r.latency_s, 0});
      }
      for (const SyncPair& s : syncs)
        for (FlowGraph& g : gradient_patterns({gpu(d, s.a, m), gpu(d, s.b, m)}, {{Op::all_reduce, s.bytes}}))
          for (Flow& f : g.flows) own.push_back({as_run(std::move(f.links)), f.latency_s, f.size_bytes});
    }
  }
  for (int r = 0; r < ranks(); ++r) {
    const std::size_t at = static_cast<std::size_t>(r);
    for (std::size_t kind = 0; kind < 2; ++kind)
      for (const auto& group : kind == 0 ? dp_groups_[at] : expert_groups_[at])
        for (FlowGraph& g : gradient_patterns(group, gradient_sizes(r, kind, group.size())))
          for (Flow& f : g.flows) in.shared.push_back(as_run(std::move(f.links)));
  }
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

std::vector<std::vector<int>> IterationBuilder::cp_groups(int replica, int rank) const {
  const std::vector<int>& members_of = units_[unit(replica, rank)];
  const std::size_t cp = plan_.cp_group.empty() ? 1 : plan_.cp_group[static_cast<std::size_t>(rank)].size();
  if (cp < 2) return {};
  if (members_of.size() % cp != 0) return {plan_.cp_group[static_cast<std::size_t>(rank)]};
  const std::size_t tp = members_of.size() / cp;  // members are tp x cp, tp fastest
  std::vector<std::vector<int>> out(tp);
  for (std::size_t t = 0; t < tp; ++t)
    for (std::size_t c = 0; c < cp; ++c) out[t].push_back(members_of[c * tp + t]);
  return out;
}

UnitGroups IterationBuilder::unit_groups(int replica, int rank) const {
  UnitGroups out;
  out.tp_in_place = tp_in_place_;
  out.cp_in_place = cp_in_place_;
  if (tp_in_place_) out.tp = tp_groups(replica, rank);
  if (cp_in_place_) out.cp = cp_groups(replica, rank);
  out.ep_in_place = ep_in_place_;
  out.zero_in_place = zero_in_place_;
  return out;
}

std::vector<std::vector<int>> IterationBuilder::ep_groups(int block, int rank) const {
  const int ep = ep_replicas();
  std::vector<std::vector<int>> out(static_cast<std::size_t>(members()));
  for (int m = 0; m < members(); ++m)
    for (int d = block * ep; d < (block + 1) * ep; ++d) out[static_cast<std::size_t>(m)].push_back(gpu(d, rank, m));
  return out;
}

std::vector<int> IterationBuilder::traffics_of(SegmentKind kind) const {
  std::vector<int> out;
  for (const StagePlan& sp : plan_.stages)
    for (const auto* segments : {&sp.forward, &sp.backward_input, &sp.backward_weight})
      for (const Segment& s : *segments)
        if (s.kind == kind && s.traffic >= 0) out.push_back(s.traffic);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<OwnFlow> IterationBuilder::group_flows(int rank, CommGroup kind, const std::vector<int>& group) {
  std::vector<OwnFlow> out;
  for (int c : times_.choices_of(rank, kind)) {
    const CollectiveChoice& choice = times_.choice(c);
    const CollectiveRequest req{choice.op, group, choice.bytes, choice.channels, choice.protocol, 0};
    for (Flow& f : choice.algorithm->lower(router_, req).flows)
      out.push_back({as_run(std::move(f.links)), f.latency_s, f.size_bytes});
  }
  if (kind == CommGroup::cp)
    for (int traffic : traffics_of(SegmentKind::cp_comm))
      for (const Flow& f : in_place_flows_.traffic(traffic, group).flows) out.push_back({as_run(f.links), f.latency_s, f.size_bytes});
  return out;
}

namespace {

/// Every group's flows of one kind (TP, CP or EP) over the whole job, as the isolation proof sees them.
struct KindFlows {
  std::vector<std::vector<OwnFlow>> groups;
  std::vector<std::size_t> timed_as;  // the group whose alone time each reuses
  std::vector<int> replica_of;
  bool leaves_node = false;  // a group across nodes, whose fabric links other jobs may load
};

}  // namespace

void IterationBuilder::place_unit_collectives(FoldInput& traffic) {
  if (plan_.free_communication || plan_.fold == FoldMode::assume) return;
  const Cluster& cluster = router_.cluster();
  auto spans_nodes = [&](const std::vector<int>& group) {
    for (int gpu : group)
      if (cluster.node_of_gpu(gpu) != cluster.node_of_gpu(group.front())) return true;
    return false;
  };
  const bool ring_steps = !traffics_of(SegmentKind::cp_comm).empty();
  auto gather = [&](CommGroup kind) {
    KindFlows k;
    std::vector<std::size_t> first_of_rank(static_cast<std::size_t>(ranks()));
    for (int d = 0; d < replicas_; ++d)
      for (int r = 0; r < ranks(); ++r) {
        const auto groups = kind == CommGroup::cp ? cp_groups(d, r) : tp_groups(d, r);
        for (std::size_t g = 0; g < groups.size(); ++g) {
          std::vector<OwnFlow> flows = group_flows(r, kind, groups[g]);
          if (flows.empty()) continue;
          k.leaves_node |= spans_nodes(groups[g]);
          if (d == 0 && g == 0) first_of_rank[static_cast<std::size_t>(r)] = k.groups.size();
          // A collective was timed alone on its rank's first group; a ring step on rank 0's.
          k.timed_as.push_back(first_of_rank[static_cast<std::size_t>(kind == CommGroup::cp && ring_steps ? 0 : r)]);
          k.replica_of.push_back(d);
          k.groups.push_back(std::move(flows));
        }
      }
    return k;
  };
  KindFlows tp = gather(CommGroup::tp), cp = gather(CommGroup::cp), ep;
  // Every expert-parallel group's all-to-alls, each timed alone on the plan's group: rank 0's,
  // first member, first replicas.
  const std::vector<int> all_to_alls = ep_replicas() > 1 ? traffics_of(SegmentKind::ep_comm) : std::vector<int>{};
  for (int b = 0; b < replicas_ / ep_replicas() && !all_to_alls.empty(); ++b)
    for (int r = 0; r < ranks(); ++r)
      for (const auto& group : ep_groups(b, r)) {
        std::vector<OwnFlow>& flows = ep.groups.emplace_back();
        for (int t : all_to_alls)
          for (const Flow& f : in_place_flows_.traffic(t, group).flows) flows.push_back({as_run(f.links), f.latency_s, f.size_bytes});
        ep.leaves_node |= spans_nodes(group);
        ep.timed_as.push_back(0);
        ep.replica_of.push_back(b * ep_replicas());
      }
  // ZeRO-2/3's per-layer collectives over every data-parallel group of each rank (dense weights',
  // routed experts'), each timed alone on its rank's first group (TP position 0's).
  KindFlows zero;
  for (int r = 0; r < ranks() && plan_.zero_stage >= 2; ++r)
    for (auto [groups, kind] : {std::pair(&dp_groups_[static_cast<std::size_t>(r)], CommGroup::dp),
                                std::pair(&expert_groups_[static_cast<std::size_t>(r)], CommGroup::expert_dp)}) {
      const std::size_t first = zero.groups.size();
      for (const auto& group : *groups) {
        std::vector<OwnFlow> flows = group_flows(r, kind, group);
        if (flows.empty()) continue;
        zero.leaves_node |= spans_nodes(group);
        zero.timed_as.push_back(first);
        zero.groups.push_back(std::move(flows));
      }
    }
  // Each kind keeps its alone time only where nothing else, the other kinds included, meets it.
  // The gradient collectives (traffic.shared) cross the same data-parallel groups as ZeRO's collectives:
  // under ZeRO-3 they stand for nothing (it reduces and gathers only layer by layer); under ZeRO-2
  // they are the updated parameters' all-gather, which one rank runs while another may still
  // reduce-scatter, so they count.
  const bool zero_meets_shared = plan_.zero_stage < 3;
  auto decide = [&](const KindFlows& kind, std::vector<const KindFlows*> other_kinds, TpPlacement asked,
                    const std::string& what, bool& in_place, std::string& placement, bool with_shared = true) {
    if (kind.groups.empty()) return;
    std::vector<const std::vector<LinkDir>*> others;
    for (const auto& own : traffic.copies)
      for (const OwnFlow& f : own) others.push_back(&f.links);
    if (with_shared)
      for (const auto& links : traffic.shared) others.push_back(&links);
    for (const KindFlows* other : other_kinds)
      for (const auto& group : other->groups)
        for (const OwnFlow& f : group) others.push_back(&f.links);
    Isolation iso = check_isolation(cluster, kind.groups, kind.timed_as, others);
    if (shares_fabric_ && kind.leaves_node && iso.isolated) {
      iso.isolated = false;
      iso.shared_links = 1;
      iso.why = "a " + what + " group spans nodes, and other jobs share the fabric its links cross";
    }
    const std::string more = iso.shared_links > 1 ? " (and " + std::to_string(iso.shared_links - 1) + " more)" : "";
    in_place = asked == TpPlacement::in_place || (asked == TpPlacement::automatic && !iso.isolated);
    placement = in_place ? "in place" : "timed alone";
    if (asked != TpPlacement::automatic) placement += " (as asked)";
    placement += iso.isolated ? ": no link of a " + what + " group carries other traffic (proven)" : ": " + iso.why + more;
  };
  decide(tp, {&cp, &ep, &zero}, plan_.placement.tp, "TP", tp_in_place_, tp_placement_);
  decide(cp, {&tp, &ep, &zero}, plan_.placement.cp, "CP", cp_in_place_, cp_placement_);
  decide(ep, {&tp, &cp, &zero}, plan_.placement.ep, "EP", ep_in_place_, ep_placement_);
  decide(zero, {&tp, &cp, &ep}, plan_.placement.zero, "ZeRO", zero_in_place_, zero_placement_, zero_meets_shared);
  if (zero_in_place_)  // every replica's: the fold maps links so that they cross images as often
    for (const auto& group : zero.groups)
      for (const OwnFlow& f : group) traffic.shared.push_back(f.links);
  // In place, a unit's collectives are its replica's own traffic, which the fold must see.
  if (plan_.fold == FoldMode::none) return;
  for (auto [kind, in_place] : {std::pair(&tp, tp_in_place_), std::pair(&cp, cp_in_place_)})
    if (in_place)
      for (std::size_t g = 0; g < kind->groups.size(); ++g) {
        auto& own = traffic.copies[static_cast<std::size_t>(kind->replica_of[g])];
        own.insert(own.end(), std::make_move_iterator(kind->groups[g].begin()), std::make_move_iterator(kind->groups[g].end()));
      }
  if (!ep_in_place_) return;
  // An all-to-all in place joins an expert-parallel group's replicas every MoE layer: the fold maps
  // such a group as one (its replicas' own flows and its all-to-alls, in order) onto another.
  fold_block_ = ep_replicas();
  FoldInput blocks;
  blocks.replicas = replicas_ / fold_block_;
  blocks.what = "expert-parallel group";
  blocks.shared = std::move(traffic.shared);
  for (int d = 0; d < replicas_; ++d) {
    if (d % fold_block_ == 0) blocks.copies.emplace_back();
    auto& own = traffic.copies[static_cast<std::size_t>(d)];
    blocks.copies.back().insert(blocks.copies.back().end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
    if (traffic.speeds.empty()) continue;
    if (d % fold_block_ == 0) blocks.speeds.emplace_back();
    const auto& speeds = traffic.speeds[static_cast<std::size_t>(d)];
    blocks.speeds.back().insert(blocks.speeds.back().end(), speeds.begin(), speeds.end());
  }
  for (std::size_t g = 0; g < ep.groups.size(); ++g) {
    auto& own = blocks.copies[static_cast<std::size_t>(ep.replica_of[g] / fold_block_)];
    own.insert(own.end(), std::make_move_iterator(ep.groups[g].begin()), std::make_move_iterator(ep.groups[g].end()));
  }
  traffic = std::move(blocks);
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
                    std::string(fold_block_ > 1 ? "all replicas fold into one expert-parallel group's (whose MoE "
                                                  "all-to-alls run in place)"
                                                : "all replicas fold into one") +
                        " only where that is exact, and here " + folding.why_not + " (use --fold exact)");
  simulated_.clear();
  simulated_as_.clear();
  for (int d = 0; d < replicas_; ++d) {  // a replica of a folded group onto its like in the other
    const int onto = folding.simulated_as[static_cast<std::size_t>(d / fold_block_)] * fold_block_ + d % fold_block_;
    simulated_as_.push_back(onto);
    if (onto == d) simulated_.push_back(d);
  }
}

}  // namespace clustersim
