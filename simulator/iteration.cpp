#include "simulator/iteration.hpp"

#include <stdexcept>

#include "simulator/iteration_builder.hpp"

namespace clustersim {

IterationResult IterationBuilder::run() {
  const std::vector<Seconds> finish = engine_.run(build());
  return account(finish);
}

const FlowGraph& IterationBuilder::build() {
  const ScheduleShape& shape = plan_.shape;
  if (auto why = plan_.schedule->not_applicable(shape)) throw std::invalid_argument(*why);
  normalise_layout();
  holders_.assign(plan_.stages.size(), {});
  for (int r = 0; r < shape.stages; ++r)
    for (int c = 0; c < shape.chunks; ++c) holders_[plan_.schedule->chunk_stage(shape, r, c)].push_back({r, c});
  plan_passes();
  FoldInput traffic = job_traffic();
  place_unit_collectives(traffic);
  for (int r = 0; r < shape.stages; ++r) add_rank_passes(0, r);
  fold(traffic);
  reserve_flows();
  for (int d : simulated_)
    for (int r = 0; r < shape.stages && d > 0; ++r) add_rank_passes(d, r);
  add_cross_unit_waits();
  add_parameter_gathers();
  add_transfers();
  for (int d : simulated_) {
    add_embedding_sync(d);
    add_replica_sync(d);
  }
  for (int r = 0; r < shape.stages; ++r) add_tail(r);
  return graph_;
}

std::vector<double> IterationBuilder::replica_speeds(int replica) const {
  std::vector<double> out;
  if (plan_.gpu_speed.empty()) return out;
  for (int r = 0; r < ranks(); ++r) out.push_back(unit_speed(replica, r));
  return out;
}

void IterationBuilder::normalise_layout() {
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

void IterationBuilder::plan_passes() {
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

void IterationBuilder::reserve_flows() {
  std::size_t passes = 0;
  for (int r = 0; r < ranks(); ++r) passes += plan_.schedule->rank_ops(plan_.shape, r).size();
  const std::size_t per_replica = passes * static_cast<std::size_t>(own_members() + 4);
  graph_.flows.reserve(graph_.flows.size() + 2 * per_replica * simulated_.size());
}

IterationResult simulate_iteration(FabricEngine& engine, const Router& router, const IterationPlan& plan,
                                   TraceSink* trace) {
  return IterationBuilder(engine, router, plan, trace).run();
}

}  // namespace clustersim
