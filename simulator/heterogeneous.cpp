#include "simulator/heterogeneous.hpp"

#include <algorithm>
#include <map>

#include "workloads/plan_iteration.hpp"

namespace clustersim {

Seconds segments_compute_s(const std::vector<Segment>& segments) {
  Seconds t = 0;
  for (const Segment& seg : segments)
    if (seg.kind == SegmentKind::compute || seg.kind == SegmentKind::recompute) t += seg.duration_s * seg.repeat;
  return t;
}

Seconds rank_compute_s(const IterationPlan& plan, int rank) {
  Seconds t = 0;
  for (int c = 0; c < plan.shape.chunks; ++c) {
    const StagePlan& sp = plan.stages[static_cast<std::size_t>(plan.schedule->chunk_stage(plan.shape, rank, c))];
    t += segments_compute_s(sp.forward) + segments_compute_s(sp.backward_input) + segments_compute_s(sp.backward_weight);
  }
  return t;
}

void apply_gpu_models(const ScenarioSpec& s, const IterationPlan& plan, const KernelTable* kernels, int cluster_gpus,
                      std::vector<double>& speed) {
  if (!s.heterogeneous()) return;
  if (speed.empty()) speed.assign(static_cast<std::size_t>(cluster_gpus), 1.0);
  const int p = plan.shape.stages, gpn = s.cluster.node.gpus;
  std::map<std::string, std::vector<double>> factor;  // model -> speed per rank
  for (const auto& [name, model] : s.group_gpus) {
    ScenarioSpec on = s;
    on.gpu = model;
    const IterationPlan other = plan_iteration(on, kernels);
    std::vector<double>& f = factor[name];
    for (int r = 0; r < p; ++r) {
      const Seconds there = rank_compute_s(other, r), here = rank_compute_s(plan, r);
      f.push_back(there > 0 && here > 0 ? here / there : 1.0);
    }
  }
  for (std::size_t u = 0; u < plan.unit_gpus.size(); ++u) {
    const int r = static_cast<int>(u) % p;
    for (int g : plan.unit_gpus[u]) {
      const std::string& model = s.gpu_name_of_node(g / gpn);
      if (model != s.cluster.gpu) speed.at(static_cast<std::size_t>(g)) *= factor.at(model)[static_cast<std::size_t>(r)];
    }
  }
}

std::vector<std::vector<std::string>> rank_gpu_models(const ScenarioSpec& s, const IterationPlan& plan) {
  const int p = plan.shape.stages, gpn = s.cluster.node.gpus;
  std::vector<std::vector<std::string>> out(static_cast<std::size_t>(p));
  for (std::size_t u = 0; u < plan.unit_gpus.size(); ++u)
    for (int g : plan.unit_gpus[u]) {
      auto& models = out[u % static_cast<std::size_t>(p)];
      const std::string& m = s.gpu_name_of_node(g / gpn);
      if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    }
  return out;
}

}  // namespace clustersim
