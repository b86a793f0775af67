// The algorithm each gradient-side collective runs in the iteration's graph (gradient buckets,
// parameter gathers, the syncs between stage copies), and the sizes they run at, so that the fold
// and the isolation proof see the links of what actually runs.
#include <algorithm>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "collectives/pipeline.hpp"
#include "simulator/iteration_builder.hpp"

namespace clustersim {

Bytes IterationBuilder::reduce_bucket_bytes(int chunk, std::size_t group_size, Bytes bytes) const {
  if (!plan_.overlap_grad_reduce || chunk > 0) return bytes;
  const double bucket_params = std::max(40e6, 1e6 * static_cast<double>(group_size));
  return static_cast<Bytes>(bucket_params * plan_.gradient_bytes_per_param);
}

Bytes IterationBuilder::gather_bucket_bytes(std::size_t group_size) const {
  return static_cast<Bytes>(std::max(40e6, 1e6 * static_cast<double>(group_size)) * plan_.parameter_gather_bytes);
}

std::vector<std::pair<Op, Bytes>> IterationBuilder::gradient_sizes(int rank, std::size_t kind, std::size_t group_size) const {
  std::set<std::pair<Op, Bytes>> sizes;
  const Op reduce = plan_.distributed_optimizer ? Op::reduce_scatter : Op::all_reduce;
  const bool gathers = plan_.distributed_optimizer && plan_.zero_stage < 3;
  for (int c = 0; c < plan_.shape.chunks; ++c) {
    const StagePlan& sp = plan_.stages[plan_.schedule->chunk_stage(plan_.shape, rank, c)];
    const auto groups = gradient_groups(rank, sp);
    if (kind >= groups.size()) continue;
    const Bytes bytes = groups[kind].second;
    if (plan_.zero_stage < 2) {
      const Bytes bucket = std::min(bytes, reduce_bucket_bytes(c, group_size, bytes));
      if (bucket > 0) sizes.insert({reduce, bucket});
      if (bucket > 0 && bytes % bucket != 0) sizes.insert({reduce, bytes % bucket});
    }
    if (!gathers) continue;
    const Bytes whole = bytes * plan_.parameter_gather_bytes / plan_.gradient_bytes_per_param;
    const Bytes first = std::min(whole, gather_bucket_bytes(group_size));
    for (Bytes b : plan_.overlap_param_gather ? std::vector<Bytes>{first, whole - first} : std::vector<Bytes>{whole})
      if (b > 0) sizes.insert({Op::all_gather, b});
  }
  return {sizes.begin(), sizes.end()};
}

IterationBuilder::GradientChoice IterationBuilder::gradient_choice(Op op, const std::vector<int>& group, Bytes bytes) const {
  const Cluster& cluster = router_.cluster();
  // The tuner's pick is a closed form, kept per group. The fastest alone (of all, or of the pinned
  // algorithm's protocols) is simulated, so it is kept per group shape (ranks, nodes, GPUs on the
  // first node): groups of one shape are images of each other on a cluster of like nodes, and
  // what runs is still simulated on the real group. The nodes are counted only for a shape's key
  // or a new choice: a kept tuner's pick is found without them, once per bucket.
  const CollectiveRequest req{op, group, bytes, plan_.channels, Protocol{}, 0};
  const bool simulated = !plan_.nccl_tuner || pinned_runs(plan_, cluster, req);
  std::optional<std::vector<std::vector<int>>> by_node;
  if (simulated) by_node = ranks_by_node(cluster, group);
  auto key = std::make_tuple(op, bytes,
                             simulated ? std::vector<int>{static_cast<int>(group.size()), static_cast<int>(by_node->size()),
                                                          static_cast<int>(by_node->front().size())}
                                       : group);
  if (auto it = gradient_choices_.find(key); it != gradient_choices_.end()) return it->second;
  if (!by_node) by_node = ranks_by_node(cluster, group);
  const IterationPick pick = iteration_pick(engine_, router_, plan_, req);
  const GradientChoice choice{pick.algorithm, pick.protocol, pick.channels, static_cast<int>(group.size()),
                              static_cast<int>(by_node->size())};
  gradient_choices_.emplace(std::move(key), choice);
  return choice;
}

FlowGraph IterationBuilder::gradient_flows(Op op, const std::vector<int>& group, Bytes bytes) const {
  const GradientChoice choice = gradient_choice(op, group, bytes);
  const CollectiveRequest req{op, group, bytes, choice.channels, choice.protocol, 0};
  return choice.algorithm->lower(router_, req);
}

std::vector<FlowGraph> IterationBuilder::gradient_patterns(const std::vector<int>& group,
                                                           const std::vector<std::pair<Op, Bytes>>& sizes) const {
  if (group.size() < 2) return {};
  std::set<std::tuple<const Algorithm*, Op, int>> seen;  // a pattern's links depend on channels, not size or protocol
  std::vector<FlowGraph> out;
  for (const auto& [op, bytes] : sizes) {
    const GradientChoice choice = gradient_choice(op, group, bytes);
    if (!seen.insert({choice.algorithm, op, choice.channels}).second) continue;
    const CollectiveRequest req{op, group, Bytes{1} << 20, choice.channels, choice.protocol, 0};
    out.push_back(choice.algorithm->lower(router_, req));
  }
  return out;
}

std::vector<CollectiveRun> IterationBuilder::collectives_run() const {
  std::set<CollectiveRun> runs;
  for (const CollectiveChoice& c : times_.choices()) {
    if (!c.algorithm) continue;
    const char* what = c.group == CommGroup::tp   ? "tp"
                       : c.group == CommGroup::cp ? "cp"
                       : c.group == CommGroup::dp ? "zero"
                                                  : "zero_experts";
    runs.insert({what, c.op, c.bytes, c.ranks, c.nodes, c.algorithm->name(), c.protocol.name, c.channels});
  }
  for (const auto& [key, g] : gradient_choices_)
    runs.insert({"gradients", std::get<0>(key), std::get<1>(key), g.ranks, g.nodes, g.algorithm->name(), g.protocol.name,
                 g.channels});
  return {runs.begin(), runs.end()};
}

}  // namespace clustersim
