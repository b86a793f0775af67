#include "workloads/serving/replica_placement.hpp"

#include <algorithm>
#include <set>

#include "topologies/node_groups.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim {

namespace {

/// "H100-SXM or H200-SXM": the models a pool may name.
std::string cluster_models(const ServingSpec& s) {
  std::set<std::string> names = {s.cluster.gpu};
  for (const NodeGroup& g : s.node_groups) names.insert(g.gpu);
  std::string out;
  std::size_t i = 0;
  for (const std::string& n : names) out += (i++ == 0 ? "" : i == names.size() ? " or " : ", ") + n;
  return out;
}

}  // namespace

std::vector<ReplicaPlacement> place_replicas(const ServingSpec& s, const std::vector<PoolModel>& pools) {
  const int per_node = s.cluster.node.gpus;
  const int total = s.cluster.gpu_count();
  const int need = s.parallel.gpus();
  const auto model_of = [&](int gpu) -> const std::string& { return gpu_of_node(s.node_groups, s.cluster.gpu, gpu / per_node); };
  std::vector<char> taken(std::size_t(total), 0);
  std::vector<ReplicaPlacement> out;
  for (const PoolModel& pool : pools) {
    if (!pool.gpu.empty()) {
      bool known = pool.gpu == s.cluster.gpu;
      for (const NodeGroup& g : s.node_groups) known = known || g.gpu == pool.gpu;
      if (!known) pool.gpu_field->fail("expected a GPU model of the cluster " + s.cluster.name + ": " + cluster_models(s));
    }
    const auto fits = [&](int g) { return !taken[std::size_t(g)] && (pool.gpu.empty() || model_of(g) == pool.gpu); };
    int free = 0;  // at the pool's start, for the error
    for (int g = 0; g < total; ++g) free += fits(g) ? 1 : 0;
    int cursor = 0;
    for (int r = 0; r < pool.replicas; ++r) {
      ReplicaPlacement p;
      for (; cursor < total && int(p.gpus.size()) < need; ++cursor)
        if (fits(cursor)) p.gpus.push_back(cursor);
      if (int(p.gpus.size()) < need) {
        const std::string of = pool.gpu.empty() ? "" : " " + pool.gpu;
        const YamlField& at = pool.gpu_field ? *pool.gpu_field : pool.count_field;
        at.fail("expected replicas that fit the cluster's free" + of + " GPUs: " + std::to_string(pool.replicas) + " replicas x " +
                std::to_string(need) + " GPUs need " + std::to_string(pool.replicas * need) + ", " + std::to_string(free) +
                " are free");
      }
      p.gpu = model_of(p.gpus.front());
      for (int g : p.gpus) {
        if (model_of(g) == p.gpu) continue;
        pool.count_field.fail("expected every replica on one GPU model: replica " + std::to_string(out.size()) + "'s GPUs " +
                              std::to_string(p.gpus.front()) + "-" + std::to_string(p.gpus.back()) + " hold " + p.gpu + " and " +
                              model_of(g) + " (name the model with serving.gpu or disaggregated.prefill_gpu / decode_gpu)");
      }
      for (int g : p.gpus) taken[std::size_t(g)] = 1;
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<std::pair<std::string, int>> ServingSpec::gpus_by_model() const {
  std::vector<std::pair<std::string, int>> counts;
  for (const ReplicaPlacement& p : placement) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == p.gpu; });
    if (it == counts.end()) it = counts.insert(counts.end(), {p.gpu, 0});
    it->second += int(p.gpus.size());
  }
  return counts;
}

std::string ServingSpec::gpus_text() const {
  std::string out;
  for (const auto& [name, count] : gpus_by_model()) out += (out.empty() ? "" : " + ") + std::to_string(count) + " " + name;
  return out;
}

ServingSpec ServingSpec::on_replica_gpu(int r) const {
  ServingSpec out = *this;
  out.gpu = gpu_model(placement[std::size_t(r)].gpu);
  return out;
}

}  // namespace clustersim
