#include "workloads/job_placement.hpp"

#include <algorithm>
#include <set>

#include "topologies/user_error.hpp"

namespace clustersim {

const char* to_string(PlacementPolicy p) {
  switch (p) {
    case PlacementPolicy::contiguous: return "contiguous";
    case PlacementPolicy::scattered: return "scattered";
    case PlacementPolicy::rail_aligned: return "rail-aligned";
    case PlacementPolicy::nodes: return "nodes";
  }
  return "?";
}

namespace {

[[noreturn]] void fail(const JobPlacement& p, const std::string& expected) { throw UserError(p.file, p.line, p.field, expected); }

/// The switch a node's first NIC hangs off: its leaf on a fat tree, its rail-0 switch on rails.
int group_of(const Cluster& c, int node) {
  if (c.nics_per_node() == 0 || c.nic_switch.empty()) return node;
  return c.nic_switch[static_cast<std::size_t>(c.nic_port(node * c.nics_per_node(), 0))];
}

std::vector<int> by_policy(const Cluster& c, const JobPlacement& p, const std::vector<char>& used) {
  const int n = p.nodes_needed, total = c.nodes();
  std::vector<int> free;
  for (int v = 0; v < total; ++v)
    if (!used[static_cast<std::size_t>(v)]) free.push_back(v);
  const std::string after = " (after the jobs placed before it, " + std::to_string(free.size()) + " of " +
                            std::to_string(total) + " nodes free)";
  switch (p.policy) {
    case PlacementPolicy::contiguous:
      for (std::size_t i = 0; i + static_cast<std::size_t>(n) <= free.size(); ++i)
        if (free[i + static_cast<std::size_t>(n) - 1] - free[i] == n - 1)
          return {free.begin() + static_cast<std::ptrdiff_t>(i), free.begin() + static_cast<std::ptrdiff_t>(i) + n};
      fail(p, "expected " + std::to_string(n) + " consecutive free nodes for contiguous" + after +
                  "; use scattered or a node list");
    case PlacementPolicy::scattered: {
      if (static_cast<int>(free.size()) < n) fail(p, "expected " + std::to_string(n) + " free nodes" + after);
      std::vector<int> out;
      for (int i = 0; i < n; ++i) out.push_back(free[static_cast<std::size_t>(long(i) * long(free.size()) / n)]);
      return out;
    }
    case PlacementPolicy::rail_aligned: {
      std::vector<int> order;  // groups in order of their first node
      std::vector<std::vector<int>> members;
      std::vector<char> whole;
      for (int v = 0; v < total; ++v) {
        const int g = group_of(c, v);
        auto at = std::find(order.begin(), order.end(), g);
        if (at == order.end()) {
          order.push_back(g);
          members.emplace_back();
          whole.push_back(1);
          at = order.end() - 1;
        }
        const auto k = static_cast<std::size_t>(at - order.begin());
        members[k].push_back(v);
        if (used[static_cast<std::size_t>(v)]) whole[k] = 0;
      }
      std::vector<int> out;
      for (std::size_t k = 0; k < order.size() && static_cast<int>(out.size()) < n; ++k)
        if (whole[k]) out.insert(out.end(), members[k].begin(), members[k].end());
      if (static_cast<int>(out.size()) < n)
        fail(p, "expected leaf groups of " + std::to_string(members.front().size()) + " nodes left whole for " +
                    std::to_string(n) + " nodes, rail-aligned" + after + "; use contiguous or a node list");
      out.resize(static_cast<std::size_t>(n));
      return out;
    }
    case PlacementPolicy::nodes: break;
  }
  return {};
}

}  // namespace

std::vector<std::vector<int>> place_jobs(const Cluster& cluster, const std::vector<JobPlacement>& jobs,
                                         const std::string& file, int jobs_line, const std::string& jobs_field) {
  long needed = 0;
  for (const JobPlacement& p : jobs) needed += p.nodes_needed;
  if (needed > cluster.nodes())
    throw UserError(file, jobs_line, jobs_field,
                    "expected jobs that fit the cluster's " + std::to_string(cluster.nodes()) + " nodes together; they need " +
                        std::to_string(needed) + " (" + std::to_string(cluster.gpus_per_node()) + " GPUs a node)");
  std::vector<std::vector<int>> out(jobs.size());
  std::vector<int> owner(static_cast<std::size_t>(cluster.nodes()), -1);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const JobPlacement& p = jobs[j];
    if (p.policy != PlacementPolicy::nodes) continue;
    if (static_cast<int>(p.nodes.size()) < p.nodes_needed)
      fail(p, "expected at least " + std::to_string(p.nodes_needed) + " nodes for the job's GPUs, got " +
                  std::to_string(p.nodes.size()));
    std::set<int> seen;
    for (int v : p.nodes) {
      if (v < 0 || v >= cluster.nodes())
        fail(p, "expected nodes 0 to " + std::to_string(cluster.nodes() - 1) + ", got " + std::to_string(v));
      if (!seen.insert(v).second) fail(p, "expected each node once, got node " + std::to_string(v) + " twice");
    }
    out[j].assign(p.nodes.begin(), p.nodes.begin() + p.nodes_needed);
    for (int v : out[j]) {
      if (owner[static_cast<std::size_t>(v)] >= 0)
        fail(p, "expected nodes no other job holds; node " + std::to_string(v) + " is also in " +
                    jobs[static_cast<std::size_t>(owner[static_cast<std::size_t>(v)])].field);
      owner[static_cast<std::size_t>(v)] = static_cast<int>(j);
    }
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].policy == PlacementPolicy::nodes) continue;
    std::vector<char> used(owner.size());
    for (std::size_t v = 0; v < owner.size(); ++v) used[v] = owner[v] >= 0;
    out[j] = by_policy(cluster, jobs[j], used);
    for (int v : out[j]) owner[static_cast<std::size_t>(v)] = static_cast<int>(j);
  }
  return out;
}

void place_plan(IterationPlan& plan, const std::vector<int>& nodes, int gpus_per_node) {
  auto map = [&](int& g) { g = nodes.at(static_cast<std::size_t>(g / gpus_per_node)) * gpus_per_node + g % gpus_per_node; };
  auto map_all = [&](std::vector<int>& v) { std::for_each(v.begin(), v.end(), map); };
  map_all(plan.rank_gpu);
  for (auto* lists : {&plan.tp_group, &plan.dp_group, &plan.expert_dp_group, &plan.cp_group, &plan.unit_gpus})
    for (auto& v : *lists) map_all(v);
  for (auto* by_rank : {&plan.dp_groups, &plan.expert_dp_groups})
    for (auto& groups : *by_rank)
      for (auto& v : groups) map_all(v);
  for (GroupTraffic& t : plan.traffic) map_all(t.gpus);
}

}  // namespace clustersim
