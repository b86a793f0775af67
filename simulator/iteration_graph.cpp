// The iteration's flow graph: each rank's passes, the pipeline transfers between them, the gradient
// collectives under the last backward, the syncs inside a replica and the optimizer steps.
#include <algorithm>
#include <set>
#include <tuple>

#include "simulator/iteration_builder.hpp"
#include "simulator/pass_in_place.hpp"

namespace clustersim {

void IterationBuilder::add_rank_passes(int replica, int rank) {
  const ScheduleShape& shape = plan_.shape;
  const std::vector<PassOp> ops = plan_.schedule->rank_ops(shape, rank);
  FlowId previous = -1;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const PassOp& op = ops[i];
    const int stage = plan_.schedule->chunk_stage(shape, rank, op.chunk);
    const double speed = unit_speed(replica, rank);
    const PassShape* own = &times_.slowed(times_.pass(rank, stage, op.kind), speed);
    const PassShape* ps = own;
    const PassShape* partner_shape = nullptr;
    std::optional<PassOp> partner;
    int partner_stage = -1;
    if (op.overlap_next && i + 1 < ops.size()) {
      partner = ops[++i];
      partner_stage = plan_.schedule->chunk_stage(shape, rank, partner->chunk);
      partner_shape = &times_.slowed(times_.pass(rank, partner_stage, partner->kind), speed);
      ps = &times_.overlapped(*own, *partner_shape);
    }
    std::vector<FlowId> after;
    if (previous >= 0) after.push_back(previous);
    std::optional<PassChain> chain;
    FlowId entry = -1;
    const UnitGroups groups = unit_groups(replica, rank);
    // An F&B unit runs its all-to-alls in place; its other waits keep their alone times.
    UnitGroups all_to_alls;
    all_to_alls.ep_in_place = groups.ep_in_place;
    if (partner && (has_part_in_place(*own, all_to_alls) || has_part_in_place(*partner_shape, all_to_alls))) {
      chain = add_fb_unit_in_place(graph_, *own, *partner_shape, groups, gpu(replica, rank, 0), std::move(after));
      entry = chain->entry;
      chain_entry_[chain->exit] = {entry, ps->duration_s};
    } else if (!partner && has_part_in_place(*ps, groups)) {
      chain = add_pass_in_place(graph_, in_place_flows_, *ps, groups, gpu(replica, rank, 0), std::move(after));
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

void IterationBuilder::add_cross_unit_waits() {
  if (!ep_in_place_ && !zero_in_place_) return;
  const int ep = ep_replicas();
  std::map<std::size_t, std::vector<const Step*>> of_unit;  // each unit's passes, in order
  for (const Step& step : steps_) of_unit[unit(step.replica, step.rank)].push_back(&step);
  for (int d : simulated_)
    for (int r = 0; r < ranks(); ++r) {
      const std::vector<const Step*>& first = of_unit.at(unit(d, r));
      const std::vector<std::vector<int>> ep_of_block = ep_in_place_ && d % ep == 0 ? ep_groups(d / ep, r)
                                                                                    : std::vector<std::vector<int>>{};
      for (std::size_t k = 0; k < first.size(); ++k) {
        if (!first[k]->chain) continue;  // every replica's pass k is alike: in place in all or none
        const PassChain& chain = *first[k]->chain;
        for (std::size_t c = 0; c < chain.collectives.size(); ++c) {
          const PassChain::Collective& wait = chain.collectives[c];
          auto of_replica = [&](int e) -> const PassChain::Collective& {
            return of_unit.at(unit(e, r))[k]->chain->collectives[c];
          };
          const Part* zero = wait.ep_traffic < 0 && !chain.fb_unit ? &first[k]->shape->parts[wait.part] : nullptr;
          if (zero && zero->kind != SegmentKind::dp_comm) continue;
          // An expert-parallel group is simulated whole and joined from its first replica; a ZeRO
          // collective joins every simulated replica (the folded ones are their images).
          std::vector<int> replicas;
          if (!zero && d % ep == 0)
            for (int e = d; e < d + ep; ++e) replicas.push_back(e);
          if (zero && d == simulated_.front()) replicas = simulated_;
          if (replicas.empty()) continue;
          std::vector<FlowId> reached;
          for (int e : replicas) reached.push_back(of_replica(e).head);
          const FlowId all_there = join(gpu(d, r, 0), reached);
          std::vector<FlowId> flows;
          const auto& groups = !zero ? ep_of_block
                               : zero->group == CommGroup::expert_dp ? expert_groups_[static_cast<std::size_t>(r)]
                                                                     : dp_groups_[static_cast<std::size_t>(r)];
          for (const auto& group : groups) {
            const FlowGraph& lowered =
                zero ? in_place_flows_.collective(zero->collective, group) : in_place_flows_.traffic(wait.ep_traffic, group);
            const auto ids = append_after(graph_, lowered, all_there);
            flows.insert(flows.end(), ids.begin(), ids.end());
          }
          const FlowId done = flows.empty() ? all_there : join(gpu(d, r, 0), std::move(flows));
          for (int e : replicas) graph_.flows[of_replica(e).join].after.push_back(done);
        }
      }
    }
}

void IterationBuilder::add_transfers() {
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
          const auto ids = append_after(graph_, in_place_flows_.collective(choice, group), id);
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

std::vector<FlowId> IterationBuilder::add_collective(Op op, const std::vector<int>& group, Bytes bytes, FlowId after) {
  if (plan_.free_communication || group.size() < 2 || bytes == 0) return {};
  return append_after(graph_, gradient_flows(op, group, bytes), after);
}

std::optional<std::vector<std::pair<int, int>>> IterationBuilder::embedding_slots() const {
  const int last_stage = static_cast<int>(plan_.stages.size()) - 1;
  const int first_stage = plan_.embedding_stage;
  if (plan_.embedding_sync_bytes == 0 || last_stage == first_stage) return std::nullopt;
  for (const auto& [rank, chunk] : holders_[first_stage])
    for (const auto& [other, other_chunk] : holders_[last_stage])
      if (rank == other) return std::nullopt;
  return std::vector<std::pair<int, int>>{holders_[first_stage].front(), holders_[last_stage].front()};
}

void IterationBuilder::add_embedding_sync(int replica) {
  if (auto slots = embedding_slots()) sync_after(replica, *slots, plan_.embedding_sync_bytes);
}

void IterationBuilder::add_replica_sync(int replica) {
  for (std::size_t k = 0; k < holders_.size(); ++k)
    if (holders_[k].size() > 1) sync_after(replica, holders_[k], plan_.stages[k].gradient_bytes);
}

void IterationBuilder::sync_after(int replica, const std::vector<std::pair<int, int>>& slots, Bytes bytes) {
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

std::vector<std::pair<const std::vector<std::vector<int>>*, Bytes>> IterationBuilder::gradient_groups(int rank, const StagePlan& sp) const {
  const std::size_t r = static_cast<std::size_t>(rank);
  std::vector<std::pair<const std::vector<std::vector<int>>*, Bytes>> out{{&dp_groups_[r], sp.gradient_bytes}};
  if (!expert_groups_[r].empty()) out.emplace_back(&expert_groups_[r], sp.expert_gradient_bytes);
  return out;
}

FlowId IterationBuilder::join(int gpu_id, std::vector<FlowId> flows) {
  if (flows.size() == 1) return flows.front();
  Flow j = timer_flow(gpu_id, 0);
  j.after = std::move(flows);
  return graph_.add(std::move(j));
}

std::vector<int> IterationBuilder::chunks_by_last_pass(int rank) const {
  std::vector<std::size_t> last(static_cast<std::size_t>(plan_.shape.chunks), 0);
  const std::vector<PassOp> ops = plan_.schedule->rank_ops(plan_.shape, rank);
  for (std::size_t i = 0; i < ops.size(); ++i) last[static_cast<std::size_t>(ops[i].chunk)] = i;
  std::vector<int> order(static_cast<std::size_t>(plan_.shape.chunks));
  for (int c = 0; c < plan_.shape.chunks; ++c) order[static_cast<std::size_t>(c)] = c;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return last[static_cast<std::size_t>(a)] < last[static_cast<std::size_t>(b)]; });
  return order;
}

std::vector<FlowId> IterationBuilder::add_bucketed_reduce(int rank, int chunk, Op op, const std::vector<std::vector<int>>& groups,
                                        Bytes bytes, std::vector<std::vector<FlowId>>& ends) {
  const Bytes bucket = reduce_bucket_bytes(chunk, groups.front().size(), bytes);
  const int here = gpu(0, rank, 0);
  std::map<int, std::optional<FlowId>> pass_start;  // replica -> when its pass starts
  ends.resize(groups.size());
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

void IterationBuilder::add_tail(int rank) {
  const std::size_t r = static_cast<std::size_t>(rank);
  const int here = gpu(0, rank, 0);
  std::vector<FlowId> last_passes;
  for (int d : simulated_) last_passes.push_back(rank_last_[unit(d, rank)]);
  const FlowId all_done = join(here, last_passes);
  std::vector<FlowId> reduced;
  const Op reduce = plan_.distributed_optimizer ? Op::reduce_scatter : Op::all_reduce;
  // One communicator per group (data-parallel, expert data-parallel): NCCL runs its collectives one
  // at a time, in the order the rank issues them, which is the order its chunks' last passes end.
  // Run side by side instead, a rank's twelve chunk reductions put twelve rings' channels on each
  // NIC, and a pipeline transfer there got a thirteenth of its share.
  std::map<const std::vector<std::vector<int>>*, std::vector<std::vector<FlowId>>> queues;
  // ZeRO-2/3 reduce-scatter gradients layer by layer during backward (dp_comm steps), not here.
  for (int c : chunks_by_last_pass(rank)) {
    if (plan_.zero_stage >= 2) break;
    const StagePlan& sp = plan_.stages[plan_.schedule->chunk_stage(plan_.shape, rank, c)];
    for (const auto& [groups, bytes] : gradient_groups(rank, sp)) {
      if (groups->empty()) continue;
      std::vector<std::vector<FlowId>>& queue = queues[groups];
      std::vector<FlowId> ends;
      if (plan_.overlap_grad_reduce) {
        ends = add_bucketed_reduce(rank, c, reduce, *groups, bytes, queue);
      } else {
        queue.resize(groups->size());
        for (std::size_t g = 0; g < groups->size(); ++g) {
          std::vector<FlowId> waits = queue[g];
          waits.push_back(all_done);
          const FlowId queued = join(here, std::move(waits));
          const auto e = add_collective(reduce, (*groups)[g], bytes, queued);
          record_comm(rank, -1, reduce, bytes, (*groups)[g], queued, e, "gradients");
          if (!e.empty()) queue[g] = e;
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
  // (overlap_param_gather: the next iteration's forward gathers them, add_parameter_gathers).
  if (!plan_.distributed_optimizer || plan_.zero_stage >= 3 || plan_.overlap_param_gather) return;
  const FlowId updated = join(here, optimizers);
  std::vector<FlowId> gather;
  FlowId previous = updated;  // one communicator: each chunk's gather after the last one's
  for (int c = 0; c < plan_.shape.chunks; ++c) {
    const auto ends = add_parameter_gather(rank, c, previous);
    if (!ends.empty()) previous = join(here, ends);
    gather.insert(gather.end(), ends.begin(), ends.end());
  }
  for (int d : simulated_) {
    Flow done = timer_flow(gpu(d, rank, 0), 0);
    done.after = gather;
    done.after.push_back(optimizer_[unit(d, rank)]);
    rank_end_[unit(d, rank)] = graph_.add(std::move(done));
  }
}

std::vector<FlowId> IterationBuilder::add_parameter_gather(int rank, int chunk, FlowId after, int part) {
  const StagePlan& sp = plan_.stages[plan_.schedule->chunk_stage(plan_.shape, rank, chunk)];
  std::vector<FlowId> ends;
  // Parameters are gathered at parameter_gather_bytes; gradients were reduced at gradient_bytes_per_param.
  for (const auto& [groups, bytes] : gradient_groups(rank, sp))
    for (const auto& group : *groups) {
      const Bytes whole = bytes * plan_.parameter_gather_bytes / plan_.gradient_bytes_per_param;
      const Bytes bucket = gather_bucket_bytes(group.size());
      const Bytes gathered = part == 0 ? whole : part == 1 ? std::min(whole, bucket) : whole - std::min(whole, bucket);
      const auto e = add_collective(Op::all_gather, group, gathered, after);
      record_comm(rank, -1, Op::all_gather, gathered, group, after, e, "updated parameters");
      ends.insert(ends.end(), e.begin(), e.end());
    }
  return ends;
}

// Steady state of Megatron-Core's overlapped, aligned parameter gather: the previous iteration's
// optimizer step has ended when this one starts, the first chunk's gathers start with it, and
// chunk c's (c >= 1) once chunk c - 1's are done: Megatron launches chunk 1's when chunk 0's first
// forward starts (chunk c's when chunk c - 1's does, which waits for chunk c - 2's), and NCCL runs
// them on the data-parallel communicator's one stream in that order, after chunk c - 1's rest. A
// chunk's first forward waits for its first bucket (its first layers'); the rest, gathered while
// that forward runs, is waited for by the rank's next pass (a forward's own stalls on later
// buckets show there).
void IterationBuilder::add_parameter_gathers() {
  if (!plan_.overlap_param_gather || !plan_.distributed_optimizer || plan_.zero_stage >= 3) return;
  std::map<std::pair<int, int>, std::pair<FlowId, FlowId>> gathered;  // (rank, chunk) -> (first bucket, all)
  for (int r = 0; r < ranks(); ++r) {
    const int here = gpu(0, r, 0);
    const FlowId start = graph_.add(timer_flow(here, 0));
    FlowId previous = start;
    auto joined = [&](std::vector<FlowId> ends, FlowId none) {
      auto& traced = dp_flows_[static_cast<std::size_t>(r)];
      traced.insert(traced.end(), ends.begin(), ends.end());
      return ends.empty() ? none : join(here, std::move(ends));
    };
    for (int c = 0; c < plan_.shape.chunks; ++c) {
      const FlowId from = c == 0 ? start : previous;
      const FlowId first = joined(add_parameter_gather(r, c, from, 1), from);
      previous = joined(add_parameter_gather(r, c, first, 2), first);
      gathered[{r, c}] = {first, previous};
    }
  }
  std::set<std::tuple<int, int, int>> seen;  // (replica, rank, chunk) whose first forward is gated
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    for (const std::optional<PassOp>& o : {std::optional<PassOp>(s.op), s.partner}) {
      if (!o || o->kind != PassKind::forward || !seen.insert({s.replica, s.rank, o->chunk}).second) continue;
      const auto [first, all] = gathered.at({s.rank, o->chunk});
      graph_.flows[s.entry].after.push_back(first);
      gather_wait_[s.id].push_back(first);
      const bool next_here = i + 1 < steps_.size() && steps_[i + 1].replica == s.replica && steps_[i + 1].rank == s.rank;
      const FlowId waits_rest = next_here ? steps_[i + 1].entry : rank_last_[unit(s.replica, s.rank)];
      graph_.flows[waits_rest].after.push_back(all);
      if (next_here) gather_wait_[steps_[i + 1].id].push_back(all);
    }
  }
}

void IterationBuilder::record_comm(int rank, int replica, Op op, Bytes bytes, const std::vector<int>& group, FlowId after,
                 const std::vector<FlowId>& ends, const char* label) {
  if (trace_ && !ends.empty()) comm_records_.push_back({rank, replica, op, bytes, group, after, ends, label});
}

}  // namespace clustersim
