// A job on a heterogeneous cluster: which GPU model each of its GPUs is, and parallel.stage_gpus,
// which puts each pipeline rank on nodes of a named model.
#include "workloads/stage_gpus.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

namespace clustersim {

const GpuModel& ScenarioSpec::gpu_of_node(int node) const {
  const std::string& name = gpu_name_of_node(node);
  return name == cluster.gpu ? gpu : group_gpus.at(name);
}

int ScenarioSpec::node_of(int job_gpu) const {
  const int node = job_gpu / cluster.node.gpus;
  return nodes.empty() ? node : nodes.at(static_cast<std::size_t>(node));
}

bool ScenarioSpec::heterogeneous() const {
  if (node_groups.empty()) return false;
  for (int n = 0; n * cluster.node.gpus < gpus(); ++n)
    if (gpu_name_of_node(node_of(n * cluster.node.gpus)) != cluster.gpu) return true;
  return false;
}

std::string ScenarioSpec::gpus_text() const {
  std::vector<std::pair<std::string, int>> counts;
  const int gpn = cluster.node.gpus;
  for (int n = 0; n * gpn < gpus(); ++n) {
    const std::string& name = gpu_name_of_node(node_of(n * gpn));
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
    if (it == counts.end()) it = counts.insert(counts.end(), {name, 0});
    it->second += std::min(gpn, gpus() - n * gpn);
  }
  std::string out;
  for (const auto& [name, count] : counts) out += (out.empty() ? "" : " + ") + std::to_string(count) + " " + name;
  return out;
}

void read_stage_gpus(const YamlField& f, ScenarioSpec& s) {
  const int p = s.layout.pp, gpn = s.cluster.node.gpus;
  std::string models = s.cluster.gpu;
  for (const auto& [name, g] : s.group_gpus) models += ", " + name;
  // A list, or one comma-separated scalar (what `--set parallel.stage_gpus=A,B,...` can write).
  std::vector<std::pair<std::string, YamlField>> named;
  if (f.is_sequence()) {
    for (std::size_t i = 0; i < f.size(); ++i) named.emplace_back(f.element(i).as_string(), f.element(i));
  } else if (f.node().IsScalar()) {
    std::stringstream in(f.as_string());
    for (std::string m; std::getline(in, m, ',');) {
      m.erase(0, m.find_first_not_of(' '));
      m.erase(m.find_last_not_of(' ') + 1);
      named.emplace_back(m, f);
    }
  }
  if (static_cast<int>(named.size()) != p)
    f.fail("expected a list of " + std::to_string(p) + " GPU models, one per pipeline rank (pp), each one the cluster holds (" +
           models + ")");
  if (s.layout.order[3] != Dim::pp)
    f.fail("expected the layout order to put pp last (as tp-cp-dp-pp does), so that each pipeline rank holds whole nodes");
  const int rank_gpus = s.gpus() / p;
  if (rank_gpus % gpn != 0)
    f.fail("expected each pipeline rank's " + std::to_string(rank_gpus) + " GPUs (tp x cp x dp) to fill whole nodes of " +
           std::to_string(gpn) + " GPUs, so that a rank sits on one GPU model");
  std::map<std::string, std::vector<int>> free;  // model -> its nodes, lowest first
  for (int n = 0; n < s.cluster.fabric.nodes; ++n) free[s.gpu_name_of_node(n)].push_back(n);
  std::map<std::string, std::size_t> taken;
  s.stage_gpus.clear();
  s.nodes.clear();
  for (int r = 0; r < p; ++r) {
    const auto& [model, e] = named[static_cast<std::size_t>(r)];
    if (!free.count(model)) e.fail("expected a GPU model the cluster holds (" + models + "), got '" + model + "'");
    std::size_t& next = taken[model];
    const std::vector<int>& nodes = free[model];
    if (next + static_cast<std::size_t>(rank_gpus / gpn) > nodes.size())
      e.fail("expected at most " + std::to_string(nodes.size() / static_cast<std::size_t>(rank_gpus / gpn)) + " pipeline ranks on " +
             model + ": the cluster has " + std::to_string(nodes.size()) + " such nodes and each rank takes " +
             std::to_string(rank_gpus / gpn));
    for (int k = 0; k < rank_gpus / gpn; ++k) s.nodes.push_back(nodes[next++]);
    s.stage_gpus.push_back(model);
  }
}

}  // namespace clustersim
