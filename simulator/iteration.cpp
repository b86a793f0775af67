#include "simulator/iteration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "simulator/breakdown_check.hpp"
#include "simulator/fold.hpp"
#include "simulator/link_utilization.hpp"
#include "simulator/pass_in_place.hpp"
#include "simulator/pass_times.hpp"
#include "simulator/trace_fanout.hpp"
#include "simulator/traffic_isolation.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

bool is_input_gradient(PassKind k) { return k == PassKind::backward || k == PassKind::backward_input; }

/// Where a pass is in the flow graph, and what it waited for.
struct PassTasks {
  int replica = 0;
  int rank = -1;
  FlowId step = -1;         // the pass's last step
  FlowId entry = -1;        // its first: waits for its input
  FlowId transfer_in = -1;  // the pipeline transfer this pass waits for, if any
  FlowId arrival = -1;      // when its input is whole: the transfer, or the all-gather that follows it
  FlowId producer = -1;     // the pass that sent it
  int from_rank = -1;       // the pipeline rank that sent it
  int sent = 0;             // transfers, one per sending GPU, at ids transfer_in, transfer_in + 1, ...
  Bytes bytes = 0;          // each of them
};

class IterationBuilder {
 public:
  IterationBuilder(FabricEngine& engine, const Router& router, const IterationPlan& plan, TraceSink* trace)
      : engine_(engine), router_(router), plan_(plan), times_(engine, router, plan), trace_(trace) {}

  IterationResult run() {
    const ScheduleShape& shape = plan_.shape;
    if (auto why = plan_.schedule->not_applicable(shape)) throw std::invalid_argument(*why);
    normalise_layout();
    holders_.assign(plan_.stages.size(), {});
    for (int r = 0; r < shape.stages; ++r)
      for (int c = 0; c < shape.chunks; ++c) holders_[plan_.schedule->chunk_stage(shape, r, c)].push_back({r, c});
    plan_passes();
    FoldInput traffic = job_traffic();
    place_tp_collectives(traffic);
    for (int r = 0; r < shape.stages; ++r) add_rank_passes(0, r);
    fold(traffic);
    reserve_flows();
    for (int d : simulated_)
      for (int r = 0; r < shape.stages && d > 0; ++r) add_rank_passes(d, r);
    add_transfers();
    for (int d : simulated_) {
      add_embedding_sync(d);
      add_replica_sync(d);
    }
    for (int r = 0; r < shape.stages; ++r) add_tail(r);
    const std::vector<Seconds> finish = engine_.run(graph_);
    return account(finish);
  }

 private:
  int ranks() const { return plan_.shape.stages; }
  int members() const { return static_cast<int>(units_.front().size()); }
  int gpu(int replica, int rank, int member) const {
    return units_[static_cast<std::size_t>(replica * ranks() + rank)][static_cast<std::size_t>(member)];
  }
  /// The GPUs of a rank whose own transfers and syncs go on the fabric: all of them, except when
  /// replicas are folded without proof, where GPU 0 stands for its rank as it did before
  /// whole-cluster replay.
  int own_members() const { return plan_.fold == FoldMode::assume ? 1 : members(); }
  std::size_t unit(int replica, int rank) const { return static_cast<std::size_t>(replica * ranks() + rank); }
  /// The speed a unit computes at: its GPUs run in lockstep (TP and CP collectives every layer),
  /// so its slowest GPU's.
  double unit_speed(int replica, int rank) const {
    if (plan_.gpu_speed.empty()) return 1;
    double slowest = 1;
    for (int g : units_[unit(replica, rank)]) slowest = std::min(slowest, plan_.gpu_speed.at(static_cast<std::size_t>(g)));
    return slowest;
  }
  /// Each unit's speed of a replica, by rank; empty when every GPU computes as calibrated.
  std::vector<double> replica_speeds(int replica) const {
    std::vector<double> out;
    if (plan_.gpu_speed.empty()) return out;
    for (int r = 0; r < ranks(); ++r) out.push_back(unit_speed(replica, r));
    return out;
  }

  /// A hand-built plan (tests) names one GPU per rank and one data-parallel group: one replica.
  void normalise_layout() {
    units_ = plan_.unit_gpus;
    replicas_ = plan_.replicas;
    if (units_.empty()) {
      for (int gpu : plan_.rank_gpu) units_.push_back({gpu});
      replicas_ = 1;
    }
    dp_groups_ = plan_.dp_groups;
    expert_groups_ = plan_.expert_dp_groups;
    if (plan_.fold == FoldMode::assume)  // as before whole-cluster replay: TP rank 0's groups alone
      for (auto* groups : {&dp_groups_, &expert_groups_})
        for (auto& of_rank : *groups)
          if (of_rank.size() > 1) of_rank.resize(1);
    if (dp_groups_.empty())
      for (std::size_t r = 0; r < plan_.dp_group.size(); ++r) {
        dp_groups_.push_back({plan_.dp_group[r]});
        expert_groups_.push_back({});
        if (r < plan_.expert_dp_group.size()) expert_groups_.back().push_back(plan_.expert_dp_group[r]);
      }
    const std::size_t n = static_cast<std::size_t>(replicas_ * ranks());
    rank_last_.assign(n, -1);
    optimizer_.assign(n, -1);
    rank_end_.assign(n, -1);
    extra_waits_.assign(n, {});
    dp_flows_.assign(static_cast<std::size_t>(ranks()), {});
  }

  /// The pipeline rank pairs that send to each other, in a fixed order: what every replica sends.
  std::vector<std::pair<int, int>> transfer_pairs() const {
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

  /// The (rank, rank) pairs whose gradients an all-reduce inside a replica sums: the tied embedding
  /// and a stage held twice.
  std::vector<std::pair<int, int>> sync_pairs() const {
    std::vector<std::pair<int, int>> pairs;
    if (auto slots = embedding_slots()) pairs.emplace_back((*slots)[0].first, (*slots)[1].first);
    for (const auto& holders : holders_)
      if (holders.size() > 1 && holders[0].first != holders[1].first) pairs.emplace_back(holders[0].first, holders[1].first);
    return pairs;
  }

  /// The route a pipeline transfer takes: one connection per GPU pair, as NCCL keeps one per peer,
  /// so every microbatch hashes onto the same path (a training run's router keeps it, routed once).
  Route transfer_route(int src, int dst) const { return router_.route(src, dst, flow_hash(src, dst, 0)); }

  /// The job's traffic other than TP collectives, as the fold and the isolation proof see it:
  /// each replica's own flows (every GPU's pipeline transfers, the syncs inside it) and the
  /// gradient rings shared between replicas. Empty when folded without proof or free.
  FoldInput job_traffic() const {
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

  /// Times every pass of every rank alone (and the scatter-gather's all-gather), and notes which
  /// rank runs each (model stage, forward?, microbatch), before any pass is placed.
  void plan_passes() {
    const ScheduleShape& shape = plan_.shape;
    for (int r = 0; r < ranks(); ++r) {
      for (const PassOp& op : plan_.schedule->rank_ops(shape, r)) {
        const int stage = plan_.schedule->chunk_stage(shape, r, op.chunk);
        times_.pass(r, stage, op.kind);
        if (op.kind == PassKind::forward || is_input_gradient(op.kind))
          pass_rank_[{stage, op.kind == PassKind::forward, op.microbatch}] = r;
      }
      if (plan_.p2p_gather_bytes > 0) times_.tp_choice(r, gather_segment());
    }
  }

  Segment gather_segment() const {
    Segment gather;
    gather.tp_op = Op::all_gather;
    gather.tp_bytes = plan_.p2p_gather_bytes;
    return gather;
  }

  /// The TP groups of one unit: its members in runs of tp (tp fastest). A hand-built plan's unit
  /// of one GPU stands for its rank's TP group.
  std::vector<std::vector<int>> tp_groups(int replica, int rank) const {
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

  /// Every TP collective `rank` runs, lowered over `group` as it ran alone.
  std::vector<OwnFlow> tp_flows(int rank, const std::vector<int>& group) const {
    std::vector<OwnFlow> out;
    for (int c : times_.choices_of(rank)) {
      const CollectiveChoice& choice = times_.choice(c);
      const CollectiveRequest req{choice.op, group, choice.bytes, plan_.channels, choice.protocol, 0};
      for (Flow& f : choice.algorithm->lower(router_, req).flows)
        out.push_back({std::move(f.links), f.latency_s, f.size_bytes});
    }
    return out;
  }

  /// TP collectives keep their alone times where no link of any TP group carries other traffic of
  /// the job (traffic_isolation.hpp); elsewhere they run in place. MoE all-to-alls, CP exchanges
  /// and ZeRO's per-layer collectives stay out of the proof: they are timed alone (README).
  void place_tp_collectives(FoldInput& traffic) {
    if (plan_.free_communication || plan_.fold == FoldMode::assume) return;
    std::vector<std::vector<OwnFlow>> groups;
    std::vector<std::size_t> timed_as;  // each rank's collectives were timed on replica 0's first group
    std::vector<std::size_t> first_of_rank(static_cast<std::size_t>(ranks()));
    std::vector<int> replica_of;
    for (int d = 0; d < replicas_; ++d)
      for (int r = 0; r < ranks(); ++r) {
        const auto unit_groups = tp_groups(d, r);
        for (std::size_t k = 0; k < unit_groups.size(); ++k) {
          std::vector<OwnFlow> flows = tp_flows(r, unit_groups[k]);
          if (flows.empty()) continue;
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
    const Isolation iso = check_isolation(router_.cluster(), groups, timed_as, others);
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

  /// Room for the whole graph before it grows: a whole-cluster graph is millions of flows, and
  /// growing by doubling would move every one several times. Reserved pages that stay unused are
  /// never touched, so the estimate errs high: per pass a step, each member's transfer, their
  /// join and a gather, and as much again for the gradient collectives and tails.
  void reserve_flows() {
    std::size_t passes = 0;
    for (int r = 0; r < ranks(); ++r) passes += plan_.schedule->rank_ops(plan_.shape, r).size();
    const std::size_t per_replica = passes * static_cast<std::size_t>(own_members() + 4);
    graph_.flows.reserve(graph_.flows.size() + 2 * per_replica * simulated_.size());
  }

  /// Decides which replicas are simulated: those whose traffic is not provably an image of
  /// another simulated replica's (fold.hpp).
  void fold(const FoldInput& in) {
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

  FlowGraph ring_flows(Op op, const std::vector<int>& group, Bytes bytes) const {
    const CollectiveRequest req{op, group, bytes, plan_.channels, *find_protocol("Simple"), 0};
    return find_algorithm("ring")->lower(router_, req);
  }

  using PassKey = std::tuple<int, int, bool, int>;  // (replica, model stage, forward?, microbatch)

  /// One replica's steps on one pipeline rank: its GPUs run them in lockstep.
  void add_rank_passes(int replica, int rank) {
    const ScheduleShape& shape = plan_.shape;
    const std::vector<PassOp> ops = plan_.schedule->rank_ops(shape, rank);
    FlowId previous = -1;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const PassOp& op = ops[i];
      const int stage = plan_.schedule->chunk_stage(shape, rank, op.chunk);
      const double speed = unit_speed(replica, rank);
      const PassShape* ps = &times_.slowed(times_.pass(rank, stage, op.kind), speed);
      std::optional<PassOp> partner;
      int partner_stage = -1;
      if (op.overlap_next && i + 1 < ops.size()) {
        partner = ops[++i];
        partner_stage = plan_.schedule->chunk_stage(shape, rank, partner->chunk);
        ps = &times_.overlapped(*ps, times_.slowed(times_.pass(rank, partner_stage, partner->kind), speed));
      }
      std::vector<FlowId> after;
      if (previous >= 0) after.push_back(previous);
      std::optional<PassChain> chain;
      FlowId entry = -1;
      if (tp_in_place_ && !partner && has_tp_collective(*ps)) {
        chain = add_pass_in_place(graph_, router_, times_, *ps, tp_groups(replica, rank), plan_.channels,
                                  gpu(replica, rank, 0), std::move(after));
        entry = chain->entry;
        chain_entry_[chain->exit] = {entry, ps->duration_s};
      } else {
        Flow f = timer_flow(gpu(replica, rank, 0), ps->duration_s);
        f.after = std::move(after);
        entry = graph_.add(std::move(f));
      }
      if (previous >= 0) next_step_[previous] = entry;
      previous = chain ? chain->exit : entry;
      steps_.push_back({previous, entry, std::move(chain), replica, rank, ps, op, stage, partner, partner_stage});
      for (auto [o, k] : {std::pair(std::optional<PassOp>(op), stage), std::pair(partner, partner_stage)}) {
        if (!o) continue;
        PassTasks tasks;
        tasks.replica = replica;
        tasks.rank = rank;
        tasks.step = previous;
        tasks.entry = entry;
        if (o->kind == PassKind::forward || is_input_gradient(o->kind))
          passes_[{replica, k, o->kind == PassKind::forward, o->microbatch}] = tasks;
        last_of_chunk_[{replica, rank, o->chunk}] = previous;
      }
      rank_last_[unit(replica, rank)] = previous;
    }
  }

  /// Forward activations go to the next model stage; input gradients go back to the previous one.
  /// Without sequence parallelism each TP rank sends 1/t of the tensor and the receivers all-gather
  /// it over NVLink (Megatron's scatter-gather, Narayanan et al. 2021 section 4.1). A blocking
  /// transfer (Megatron's synchronous send/recv) holds the sender until it ends; the receiver is
  /// taken to have posted its receive in time (waiting for it too could deadlock a table whose
  /// ranks post in another order than ours).
  void add_transfers() {
    const int model_stages = static_cast<int>(plan_.stages.size());
    for (auto& [key, consumer] : passes_) {
      const auto [replica, stage, forward, mb] = key;
      const int from = forward ? stage - 1 : stage + 1;
      if (from < 0 || from >= model_stages) continue;
      PassTasks& producer = passes_.at({replica, from, forward, mb});
      const Bytes bytes = plan_.stages[forward ? from : stage].activation_bytes;
      // Every GPU of the producing rank sends its part to its peer on the consuming rank.
      std::vector<FlowId> sent;
      for (int m = 0; m < own_members(); ++m) {
        const int src = gpu(replica, producer.rank, m), dst = gpu(replica, consumer.rank, m);
        Flow f;
        if (plan_.free_communication || src == dst || bytes == 0) {
          f = timer_flow(dst, 0);
        } else {
          Route r = transfer_route(src, dst);
          f.src_gpu = src;
          f.dst_gpu = dst;
          f.links = std::move(r.links);
          f.size_bytes = bytes;
          f.latency_s = r.latency_s;
          if (replica == 0 && m == 0) pp_bytes_ += bytes;
        }
        f.after.push_back(producer.step);
        sent.push_back(graph_.add(std::move(f)));
      }
      FlowId id = sent.front();
      if (sent.size() > 1) {
        Flow all = timer_flow(gpu(replica, consumer.rank, 0), 0);
        all.after = sent;
        id = graph_.add(std::move(all));
      }
      FlowId arrival = id;
      if (plan_.p2p_gather_bytes > 0) {
        const int choice = times_.tp_choice(consumer.rank, gather_segment());
        if (tp_in_place_ && choice >= 0) {
          std::vector<FlowId> gathered;
          for (const auto& group : tp_groups(replica, consumer.rank)) {
            const auto ids = add_lowered_collective(graph_, router_, times_.choice(choice), group, plan_.channels, id);
            gathered.insert(gathered.end(), ids.begin(), ids.end());
          }
          arrival = join(gpu(replica, consumer.rank, 0), gathered);
        } else {
          Flow g = timer_flow(gpu(replica, consumer.rank, 0), times_.tp_time(consumer.rank, gather_segment(), false));
          g.after.push_back(id);
          arrival = graph_.add(std::move(g));
        }
      }
      graph_.flows[consumer.entry].after.push_back(arrival);
      if (plan_.blocking_p2p)
        if (auto next = next_step_.find(producer.step); next != next_step_.end()) graph_.flows[next->second].after.push_back(id);
      consumer.transfer_in = sent.front();
      consumer.arrival = arrival;
      consumer.producer = producer.step;
      consumer.from_rank = producer.rank;
      consumer.sent = static_cast<int>(sent.size());
      consumer.bytes = bytes;
    }
  }

  /// Adds a collective's flows after `after`; returns the flows that end it.
  std::vector<FlowId> add_collective(Op op, const std::vector<int>& group, Bytes bytes, FlowId after) {
    if (plan_.free_communication || group.size() < 2 || bytes == 0) return {};
    return append_after(graph_, ring_flows(op, group, bytes), after);
  }

  /// The (rank, chunk) slots of the first and the last model stage whose tied embedding gradients
  /// an all-reduce sums; none when one rank holds both. A schedule that holds stages twice
  /// (DualPipe) keeps a first and a last stage on one rank: the tied gradients meet there, and the
  /// replica sync sums the copies.
  std::optional<std::vector<std::pair<int, int>>> embedding_slots() const {
    const int last_stage = static_cast<int>(plan_.stages.size()) - 1;
    const int first_stage = plan_.embedding_stage;
    if (plan_.embedding_sync_bytes == 0 || last_stage == first_stage) return std::nullopt;
    for (const auto& [rank, chunk] : holders_[first_stage])
      for (const auto& [other, other_chunk] : holders_[last_stage])
        if (rank == other) return std::nullopt;
    return std::vector<std::pair<int, int>>{holders_[first_stage].front(), holders_[last_stage].front()};
  }

  /// The tied embedding's gradient all-reduce between the ranks of the first and the last model
  /// stage, once both have run their last backward of those stages.
  void add_embedding_sync(int replica) {
    if (auto slots = embedding_slots()) sync_after(replica, *slots, plan_.embedding_sync_bytes);
  }

  /// A stage held by several ranks (DualPipe's two directions) has one gradient per copy: they are
  /// summed by an all-reduce between the holders before the optimizer step.
  void add_replica_sync(int replica) {
    for (std::size_t k = 0; k < holders_.size(); ++k)
      if (holders_[k].size() > 1) sync_after(replica, holders_[k], plan_.stages[k].gradient_bytes);
  }

  /// An all-reduce between the GPUs of some (rank, chunk) slots of one replica, one per member,
  /// once each slot has run its last pass on that chunk; the ranks' optimizer steps wait for it.
  void sync_after(int replica, const std::vector<std::pair<int, int>>& slots, Bytes bytes) {
    std::vector<int> ranks;
    Flow all = timer_flow(gpu(replica, slots.front().first, 0), 0);
    for (const auto& [rank, chunk] : slots) {
      all.after.push_back(last_of_chunk_.at({replica, rank, chunk}));
      if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
    }
    if (ranks.size() < 2) return;
    const FlowId ready = graph_.add(std::move(all));
    for (int m = 0; m < own_members(); ++m) {
      std::vector<int> gpus;
      for (int rank : ranks) gpus.push_back(gpu(replica, rank, m));
      const auto ends = add_collective(Op::all_reduce, gpus, bytes, ready);
      record_comm(ranks.front(), replica, Op::all_reduce, bytes, gpus, ready, ends, "gradient sync between stage copies");
      for (int rank : ranks) {
        auto& waits = extra_waits_[unit(replica, rank)];
        waits.insert(waits.end(), ends.begin(), ends.end());
        auto& traced = dp_flows_[static_cast<std::size_t>(rank)];
        if (replica == 0) traced.insert(traced.end(), ends.begin(), ends.end());
      }
    }
  }

  /// A chunk's gradients and the groups that reduce them: dense weights over data parallelism (a
  /// group per TP rank), routed experts over their replicas (a group per TP and expert rank).
  std::vector<std::pair<const std::vector<std::vector<int>>*, Bytes>> gradient_groups(int rank, const StagePlan& sp) const {
    const std::size_t r = static_cast<std::size_t>(rank);
    std::vector<std::pair<const std::vector<std::vector<int>>*, Bytes>> out{{&dp_groups_[r], sp.gradient_bytes}};
    if (!expert_groups_[r].empty()) out.emplace_back(&expert_groups_[r], sp.expert_gradient_bytes);
    return out;
  }

  /// A zero-time step after all of `flows`.
  FlowId join(int gpu_id, std::vector<FlowId> flows) {
    if (flows.size() == 1) return flows.front();
    Flow j = timer_flow(gpu_id, 0);
    j.after = std::move(flows);
    return graph_.add(std::move(j));
  }

  /// A chunk's gradient reduction over its groups, overlapped with its last backward pass the way
  /// Megatron-Core's DDP does it: the rank's first chunk is cut into buckets of max(40M, 1M x group
  /// size) parameters, each reduced as soon as the backward has produced it on every replica
  /// (gradients come out at an even rate over the pass, layer after layer); its later chunks are one
  /// bucket each, reduced when the chunk's backward ends (distributed.py: disable_bucketing for
  /// model_chunk_idx > 0). Buckets on one group run one after another, as NCCL orders them on its
  /// stream; the groups of a rank's TP ranks run side by side.
  std::vector<FlowId> add_bucketed_reduce(int rank, int chunk, Op op, const std::vector<std::vector<int>>& groups,
                                          Bytes bytes) {
    const double bucket_params = std::max(40e6, 1e6 * static_cast<double>(groups.front().size()));
    const Bytes bucket = chunk == 0 ? static_cast<Bytes>(bucket_params * plan_.gradient_bytes_per_param) : bytes;
    const int here = gpu(0, rank, 0);
    std::map<int, std::optional<FlowId>> pass_start;  // replica -> when its pass starts
    std::vector<std::vector<FlowId>> ends(groups.size());
    std::vector<FlowId> all;
    for (Bytes done = 0; done < bytes;) {
      const Bytes size = std::min(bucket, bytes - done);
      done += size;
      std::vector<FlowId> produced;  // the bucket is ready on each simulated replica
      for (int d : simulated_) {
        const FlowId pass = last_of_chunk_.at({d, rank, chunk});
        if (done == bytes) {
          produced.push_back(pass);
          continue;
        }
        const auto chained = chain_entry_.find(pass);  // a pass in place: its planned time from its entry
        const FlowId entry = chained == chain_entry_.end() ? pass : chained->second.first;
        std::optional<FlowId>& start = pass_start[d];
        if (!start) {
          Flow begin = timer_flow(gpu(d, rank, 0), 0);  // when the pass starts: it waits for what the pass waits for
          begin.after = graph_.flows[entry].after;
          start = graph_.add(std::move(begin));
        }
        const Seconds pass_s = chained == chain_entry_.end() ? graph_.flows[pass].latency_s : chained->second.second;
        Flow at = timer_flow(gpu(d, rank, 0), pass_s * static_cast<double>(done) / static_cast<double>(bytes));
        at.after = {*start};
        produced.push_back(graph_.add(std::move(at)));
      }
      const FlowId ready = join(here, produced);
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const FlowId queued = ends[g].empty() ? ready : join(here, [&] {  // after the group's previous bucket
          std::vector<FlowId> w = ends[g];
          w.push_back(ready);
          return w;
        }());
        const std::vector<FlowId> bucket_ends = add_collective(op, groups[g], size, queued);
        record_comm(rank, -1, op, size, groups[g], queued, bucket_ends, "gradient bucket");
        if (!bucket_ends.empty()) ends[g] = bucket_ends;
        all.insert(all.end(), bucket_ends.begin(), bucket_ends.end());
      }
    }
    return all;
  }

  /// Gradient collectives per chunk, bucketed under its last backward (or, not overlapped, in one
  /// piece as the rank's last backward ends on every replica), then each replica's optimizer step,
  /// then (with the distributed optimizer) the parameter all-gather.
  void add_tail(int rank) {
    const std::size_t r = static_cast<std::size_t>(rank);
    const int here = gpu(0, rank, 0);
    std::vector<FlowId> last_passes;
    for (int d : simulated_) last_passes.push_back(rank_last_[unit(d, rank)]);
    const FlowId all_done = join(here, last_passes);
    std::vector<FlowId> reduced;
    const Op reduce = plan_.distributed_optimizer ? Op::reduce_scatter : Op::all_reduce;
    // ZeRO-2/3 reduce-scatter gradients layer by layer during backward (dp_comm steps), not here.
    for (int c = 0; c < plan_.shape.chunks && plan_.zero_stage < 2; ++c) {
      const StagePlan& sp = plan_.stages[plan_.schedule->chunk_stage(plan_.shape, rank, c)];
      for (const auto& [groups, bytes] : gradient_groups(rank, sp)) {
        if (groups->empty()) continue;
        std::vector<FlowId> ends;
        if (plan_.overlap_grad_reduce) {
          ends = add_bucketed_reduce(rank, c, reduce, *groups, bytes);
        } else {
          for (const auto& group : *groups) {
            const auto e = add_collective(reduce, group, bytes, all_done);
            record_comm(rank, -1, reduce, bytes, group, all_done, e, "gradients");
            ends.insert(ends.end(), e.begin(), e.end());
          }
        }
        reduced.insert(reduced.end(), ends.begin(), ends.end());
        dp_flows_[r].insert(dp_flows_[r].end(), ends.begin(), ends.end());
      }
    }
    std::vector<FlowId> optimizers;
    for (int d : simulated_) {
      Flow opt = timer_flow(gpu(d, rank, 0), plan_.optimizer_s / unit_speed(d, rank));
      opt.after = {rank_last_[unit(d, rank)]};
      opt.after.insert(opt.after.end(), extra_waits_[unit(d, rank)].begin(), extra_waits_[unit(d, rank)].end());
      opt.after.insert(opt.after.end(), reduced.begin(), reduced.end());
      optimizer_[unit(d, rank)] = graph_.add(std::move(opt));
      rank_end_[unit(d, rank)] = optimizer_[unit(d, rank)];
      optimizers.push_back(optimizer_[unit(d, rank)]);
    }
    // ZeRO-3 gathers parameters when a layer needs them; ZeRO-1 and 2 gather the updated shards
    // once every replica has updated its own.
    if (!plan_.distributed_optimizer || plan_.zero_stage >= 3) return;
    const FlowId updated = join(here, optimizers);
    std::vector<FlowId> gather;
    for (int c = 0; c < plan_.shape.chunks; ++c) {
      const StagePlan& sp = plan_.stages[plan_.schedule->chunk_stage(plan_.shape, rank, c)];
      // Parameters are 16-bit; gradients were reduced at gradient_bytes_per_param.
      for (const auto& [groups, bytes] : gradient_groups(rank, sp))
        for (const auto& group : *groups) {
          const auto ends = add_collective(Op::all_gather, group, bytes * 2 / plan_.gradient_bytes_per_param, updated);
          record_comm(rank, -1, Op::all_gather, bytes * 2 / plan_.gradient_bytes_per_param, group, updated, ends,
                      "updated parameters");
          gather.insert(gather.end(), ends.begin(), ends.end());
        }
    }
    for (int d : simulated_) {
      Flow done = timer_flow(gpu(d, rank, 0), 0);
      done.after = gather;
      done.after.push_back(optimizer_[unit(d, rank)]);
      rank_end_[unit(d, rank)] = graph_.add(std::move(done));
    }
  }

  static Seconds& bucket(RankBreakdown& b, SegmentKind kind) {
    switch (kind) {
      case SegmentKind::tp_comm: return b.tp_s;
      case SegmentKind::ep_comm: return b.ep_s;
      case SegmentKind::imbalance: return b.imbalance_s;
      case SegmentKind::cp_comm: return b.cp_s;
      case SegmentKind::dp_comm: return b.dp_exposed_s;
      case SegmentKind::recompute: return b.recompute_s;
      case SegmentKind::compute: break;
    }
    return b.compute_s;
  }

  Seconds start_of(const std::vector<Seconds>& finish, FlowId id) const {
    Seconds t = 0;
    for (FlowId a : graph_.flows[id].after) t = std::max(t, finish[a]);
    return t;
  }

  /// The simulated replica that ends last (the first of those on a tie): the breakdown is its.
  int slowest_replica(const std::vector<Seconds>& finish) const {
    int slowest = simulated_.front();
    Seconds latest = -1;
    for (int d : simulated_)
      for (int r = 0; r < ranks(); ++r)
        if (finish[rank_end_[unit(d, r)]] > latest) {
          latest = finish[rank_end_[unit(d, r)]];
          slowest = d;
        }
    return slowest;
  }

  IterationResult account(const std::vector<Seconds>& finish) {
    IterationResult result;
    result.iteration_s = makespan(finish);
    result.ranks.resize(plan_.shape.stages);
    result.replicas = replicas_;
    result.simulated_replicas = static_cast<int>(simulated_.size());
    result.gpus_per_rank = members();
    result.fold = plan_.fold;
    result.tp_collectives = tp_placement_;
    const int shown = slowest_replica(finish);
    result.reported_replica = shown;
    std::map<FlowId, const PassTasks*> waits;  // a pass's step -> what it waited for
    for (const auto& [key, tasks] : passes_)
      if (tasks.transfer_in >= 0 && tasks.replica == shown) waits[tasks.step] = &tasks;
    std::vector<Seconds> free_at(plan_.shape.stages, 0);
    for (const Step& s : steps_) {
      if (s.replica != shown) continue;
      RankBreakdown& b = result.ranks[s.rank];
      const Seconds end = finish[s.id], start = s.chain ? start_of(finish, s.entry) : end - s.shape->duration_s;
      const std::vector<Part> parts = s.chain ? realized_parts(*s.shape, *s.chain, finish) : s.shape->parts;
      Seconds gap = std::max(0.0, start - free_at[s.rank]);
      if (auto w = waits.find(s.id); w != waits.end() && gap > 0) {
        const Seconds produced = finish[w->second->producer], arrived = finish[w->second->arrival];
        const Seconds pp = std::max(0.0, std::min(start, arrived) - std::max(free_at[s.rank], produced));
        b.pp_exposed_s += pp;
        gap -= pp;
      }
      b.bubble_s += gap;
      for (const Part& part : parts) bucket(b, part.kind) += part.duration_s;
      free_at[s.rank] = end;
      result.passes.push_back({s.rank, s.op.kind, s.op.microbatch, s.stage, start, end});
      if (s.partner) result.passes.push_back({s.rank, s.partner->kind, s.partner->microbatch, s.partner_stage, start, end});
    }
    result.pp_bytes = pp_bytes_;
    for (int r = 0; r < plan_.shape.stages; ++r) {
      RankBreakdown& b = result.ranks[r];
      const Seconds opt_end = finish[optimizer_[unit(shown, r)]];
      const Seconds end = finish[rank_end_[unit(shown, r)]];
      b.optimizer_s = plan_.optimizer_s / unit_speed(shown, r);
      b.dp_exposed_s += (opt_end - b.optimizer_s - free_at[r]) + (end - opt_end);
      b.other_idle_s = result.iteration_s - end;
      const auto& dp = dp_flows_[static_cast<std::size_t>(r)];
      if (!dp.empty()) {
        Seconds first = result.iteration_s, last = 0;
        for (FlowId f : dp) {
          first = std::min(first, start_of(finish, f));
          last = std::max(last, finish[f]);
        }
        result.events.push_back({gpu(shown, r, 0), "dp", "gradient reduction", first, last});
      }
    }
    for (const auto& [key, tasks] : passes_)
      if (tasks.replica == shown && tasks.transfer_in >= 0 && !graph_.flows[tasks.transfer_in].links.empty())
        result.events.push_back({graph_.flows[tasks.transfer_in].src_gpu, "pp",
                                 std::get<2>(key) ? "send activations" : "send gradients",
                                 start_of(finish, tasks.transfer_in), finish[tasks.transfer_in]});
    // The fluid solver checks every link's load as it sets rates; a pass over a whole cluster's
    // flows afterwards would cost a sixth of the run.
    if (engine_.solver() != Solver::fluid) check_link_utilization(router_.cluster(), graph_, finish, "iteration");
    check_breakdown(result);
    if (trace_) write_trace(finish);
    return result;
  }

  struct Step {
    FlowId id;     // its last step
    FlowId entry;  // its first
    std::optional<PassChain> chain;  // TP collectives in place
    int replica;
    int rank;
    const PassShape* shape;
    PassOp op;
    int stage;
    std::optional<PassOp> partner;  // the second pass of an overlapped F&B unit
    int partner_stage;
  };

  FabricEngine& engine_;
  const Router& router_;
  const IterationPlan& plan_;
  PassTimes times_;
  FlowGraph graph_;
  std::vector<std::vector<int>> units_;  // [replica * ranks + rank] -> its GPUs
  int replicas_ = 1;
  std::vector<std::vector<std::vector<int>>> dp_groups_, expert_groups_;  // [rank] -> groups
  std::vector<int> simulated_;  // the replicas the engine runs; the rest fold onto them
  std::vector<Step> steps_;
  std::map<PassKey, PassTasks> passes_;
  std::vector<std::vector<std::pair<int, int>>> holders_;  // model stage -> (rank, chunk) slots holding it
  std::map<std::tuple<int, int, int>, FlowId> last_of_chunk_;  // (replica, rank, chunk) -> last step of its last pass
  std::vector<FlowId> rank_last_, optimizer_, rank_end_;  // by unit
  std::map<FlowId, FlowId> next_step_;  // a rank's step -> its next
  std::map<std::tuple<int, bool, int>, int> pass_rank_;  // (model stage, forward?, microbatch) -> its pipeline rank
  bool tp_in_place_ = false;
  std::string tp_placement_;
  std::map<FlowId, std::pair<FlowId, Seconds>> chain_entry_;  // a pass in place: last step -> (entry, planned time)
  std::vector<std::vector<FlowId>> dp_flows_;     // by rank: its gradient collectives (replica 0's syncs too)
  std::vector<std::vector<FlowId>> extra_waits_;  // by unit: syncs its optimizer step waits for
  Bytes pp_bytes_ = 0;
  TraceSink* trace_ = nullptr;
  std::vector<int> simulated_as_;  // by replica: the simulated replica it folds onto (itself if simulated)
  struct CommRecord {
    int rank;
    int replica;  // a collective inside one replica (its copies fold with it); -1: across replicas
    Op op;
    Bytes bytes;
    std::vector<int> group;
    FlowId after;
    std::vector<FlowId> ends;
    const char* label;
  };
  std::vector<CommRecord> comm_records_;  // the gradient collectives, kept for a trace only

  void record_comm(int rank, int replica, Op op, Bytes bytes, const std::vector<int>& group, FlowId after,
                   const std::vector<FlowId>& ends, const char* label) {
    if (trace_ && !ends.empty()) comm_records_.push_back({rank, replica, op, bytes, group, after, ends, label});
  }

  void write_trace(const std::vector<Seconds>& finish);
};

const char* op_name(Op op) {
  switch (op) {
    case Op::all_reduce: return "all-reduce";
    case Op::all_gather: return "all-gather";
    case Op::reduce_scatter: return "reduce-scatter";
    case Op::all_to_all: return "all-to-all";
    case Op::broadcast: return "broadcast";
    case Op::send_recv: return "send/recv";
  }
  return "?";
}

const char* pass_name(PassKind k) {
  switch (k) {
    case PassKind::forward: return "F";
    case PassKind::backward: return "B";
    case PassKind::backward_input: return "B input";
    case PassKind::backward_weight: return "W";
  }
  return "?";
}

/// A wait's stream and category: where its communication runs beside compute.
std::pair<TraceTrack, const char*> comm_track(SegmentKind k) {
  switch (k) {
    case SegmentKind::tp_comm: return {TraceTrack::tp, "tp"};
    case SegmentKind::cp_comm: return {TraceTrack::cp, "cp"};
    case SegmentKind::ep_comm: return {TraceTrack::ep, "ep"};
    case SegmentKind::dp_comm: return {TraceTrack::dp, "dp"};
    default: return {TraceTrack::compute, "compute"};
  }
}

const char* part_name(const Part& p) {
  if (is_wait(p.kind)) return "wait";
  if (p.label.rfind("interference", 0) == 0 || p.label.rfind("F&B interference", 0) == 0) return "interference";
  return p.kind == SegmentKind::recompute ? "recompute" : "compute";
}

/// Streams the trace: per simulated unit its passes with their parts (compute track), each wait's
/// communication with its own duration on its stream, then every GPU's pipeline transfers, the
/// gradient collectives and the optimizer step. Each GPU's slices of a track come in time order.
void IterationBuilder::write_trace(const std::vector<Seconds>& finish) {
  TraceLayout layout;
  layout.units = &units_;
  layout.ranks = ranks();
  layout.replicas = replicas_;
  layout.simulated_as = simulated_as_;
  layout.own_members = own_members();
  layout.tp = plan_.tp_group.empty() ? 1 : static_cast<int>(plan_.tp_group.front().size());
  for (const auto* groups : {&dp_groups_, &expert_groups_})
    for (const auto& of_rank : *groups)
      for (const auto& g : of_rank) layout.in_dp_groups.insert(layout.in_dp_groups.end(), g.begin(), g.end());
  TraceFanout fan(*trace_, std::move(layout));

  for (const Step& s : steps_) {
    const Seconds end = finish[s.id], start = s.chain ? start_of(finish, s.entry) : end - s.shape->duration_s;
    const std::vector<Part> parts = s.chain ? realized_parts(*s.shape, *s.chain, finish) : s.shape->parts;
    std::map<std::size_t, std::pair<Seconds, Seconds>> ran;  // an in-place collective's part -> its flows' span
    if (s.chain)
      for (const PassChain::Collective& c : s.chain->collectives) {
        const std::vector<FlowId>& joined = graph_.flows[c.join].after;
        Seconds last = finish[c.head];
        for (std::size_t k = 1; k < joined.size(); ++k) last = std::max(last, finish[joined[k]]);  // [0]: the compute beside
        ran[c.part] = {finish[c.head], last};
      }
    TraceRecord pass;
    pass.name = s.partner ? "F&B" : pass_name(s.op.kind);
    pass.cat = "pass";
    pass.start_s = start;
    pass.end_s = end;
    pass.microbatch = s.op.microbatch;
    pass.chunk = s.op.chunk;
    pass.stage = s.stage;
    pass.parent = true;
    const std::string label = s.partner ? fmt::format("{} mb {} chunk {} & {} mb {} chunk {}", pass_name(s.op.kind), s.op.microbatch,
                                                      s.op.chunk, pass_name(s.partner->kind), s.partner->microbatch, s.partner->chunk)
                                        : std::string();
    pass.label = label;
    fan.unit(s.replica, s.rank, pass);
    std::vector<TraceRecord> comm;
    auto communication = [&](const Part& p, Seconds from, Seconds to, Seconds exposed) {
      TraceRecord c;
      std::tie(c.track, c.cat) = comm_track(p.kind);
      c.name = op_name(p.op);
      c.start_s = from;
      c.end_s = to;
      c.label = p.label;
      c.bytes = p.bytes;
      c.layer = p.layer;
      c.microbatch = s.op.microbatch;
      c.exposed_s = exposed;
      comm.push_back(c);
    };
    Seconds at = start;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Part& p = parts[i];
      const Seconds part_end = std::min(end, at + p.duration_s);
      if (p.duration_s > 0) {
        TraceRecord r;
        r.name = part_name(p);
        r.cat = is_wait(p.kind) ? comm_track(p.kind).second : to_string(p.kind);
        if (p.kind == SegmentKind::imbalance) r.cat = "imbalance";
        r.start_s = at;
        r.end_s = part_end;
        r.label = p.label;
        r.layer = p.layer;
        fan.unit(s.replica, s.rank, r);
      }
      if (is_wait(p.kind) && p.comm_s > 0 && comm_track(p.kind).first != TraceTrack::compute) {
        if (auto it = ran.find(i); it != ran.end()) communication(p, it->second.first, it->second.second, p.duration_s);
        else if (p.hidden_before) communication(p, std::max(start, part_end - p.comm_s), part_end, p.duration_s);
        else communication(p, at, at + p.comm_s, p.duration_s);
      }
      at = part_end;
    }
    for (const auto& [offset, p] : s.shape->beside)
      if (p.comm_s > 0 && comm_track(p.kind).first != TraceTrack::compute)
        communication(p, start + offset, start + offset + p.comm_s, -1);
    for (const TraceRecord& c : comm) fan.unit(s.replica, s.rank, c);
  }

  // Pipeline transfers, each GPU's in time order.
  struct Sent {
    Seconds start_s, end_s;
    int replica, from, to, member, microbatch, stage;
    bool forward;
    Bytes bytes;
  };
  std::vector<Sent> sent;
  for (const auto& [key, tasks] : passes_) {
    const auto [replica, stage, forward, mb] = key;
    for (int m = 0; m < tasks.sent && tasks.transfer_in >= 0; ++m) {
      const FlowId f = tasks.transfer_in + m;
      if (graph_.flows[f].links.empty()) continue;  // nothing crossed the fabric
      sent.push_back({start_of(finish, f), finish[f], replica, tasks.from_rank, tasks.rank, m, mb, forward ? stage - 1 : stage + 1,
                      forward, tasks.bytes});
    }
  }
  std::stable_sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) { return a.start_s < b.start_s; });
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const Sent& t = sent[i];
    TraceRecord r;
    r.cat = "pp";
    r.start_s = t.start_s;
    r.end_s = t.end_s;
    r.label = t.forward ? "activations" : "input gradients";
    r.bytes = t.bytes;
    r.microbatch = t.microbatch;
    r.stage = t.stage;
    fan.transfer(t.replica, t.from, t.to, t.member, i, r);
  }

  // Gradient collectives, each GPU's in time order, and the optimizer steps.
  std::vector<std::pair<Seconds, std::size_t>> order;
  for (std::size_t k = 0; k < comm_records_.size(); ++k) order.emplace_back(finish[comm_records_[k].after], k);
  std::stable_sort(order.begin(), order.end());
  for (const auto& [from, k] : order) {
    const CommRecord& c = comm_records_[k];
    TraceRecord r;
    r.track = TraceTrack::dp;
    r.name = op_name(c.op);
    r.cat = "dp";
    r.start_s = from;
    r.end_s = from;
    for (FlowId e : c.ends) r.end_s = std::max(r.end_s, finish[e]);
    r.label = c.label;
    r.bytes = c.bytes;
    fan.collective(c.replica, c.group, r);
  }
  for (int d : simulated_)
    for (int r = 0; r < ranks(); ++r) {
      TraceRecord o;
      o.name = "optimizer";
      o.cat = "compute";
      o.end_s = finish[optimizer_[unit(d, r)]];
      o.start_s = o.end_s - plan_.optimizer_s / unit_speed(d, r);
      o.label = "optimizer step";
      fan.unit(d, r, o);
    }
}

}  // namespace

IterationResult simulate_iteration(FabricEngine& engine, const Router& router, const IterationPlan& plan,
                                   TraceSink* trace) {
  return IterationBuilder(engine, router, plan, trace).run();
}

}  // namespace clustersim
