#include "simulator/multi_job.hpp"

#include <memory>
#include <string>

#include "simulator/heterogeneous.hpp"
#include "simulator/iteration_builder.hpp"
#include "simulator/memory_check.hpp"
#include "topologies/invariant.hpp"
#include "workloads/plan_iteration.hpp"

namespace clustersim {

std::vector<JobOutcome> run_jobs(const JobsScenario& js, Solver solver, bool allow_oom,
                                 const std::vector<TraceSink*>& traces, bool link_tiers) {
  if (!traces.empty() && traces.size() != js.jobs.size())
    invariant_broken("one trace sink per job", std::to_string(traces.size()) + " sinks for " + std::to_string(js.jobs.size()) + " jobs");
  const Cluster cluster = shared_cluster(js);
  std::vector<IterationPlan> plans;
  plans.reserve(js.jobs.size());  // builders hold references into it
  std::vector<std::vector<StageMemory>> memory;
  for (const JobSpec& j : js.jobs) {
    IterationPlan& plan = plans.emplace_back(plan_iteration(j.scenario));
    place_plan(plan, j.nodes, cluster.gpus_per_node());
    memory.push_back(checked_stage_memory(j.scenario, plan, allow_oom));  // against its nodes' GPU models
    plan.fold = FoldMode::none;
    // Speeds are by cluster GPU id, as the job's variability names them, times its nodes' models'.
    plan.gpu_speed = gpu_speeds(j.scenario.variability, cluster.gpu_count(), cluster.gpus_per_node());
    apply_gpu_models(j.scenario, plan, nullptr, cluster.gpu_count(), plan.gpu_speed);
  }
  Router router(cluster);
  router.remember_routes();
  FabricEngine engine(cluster, solver);
  engine.record_link_bytes(link_tiers);

  std::vector<JobOutcome> out(js.jobs.size());
  for (std::size_t j = 0; j < js.jobs.size(); ++j) {
    out[j].name = js.jobs[j].name;
    out[j].gpus = js.jobs[j].scenario.gpus();
    out[j].nodes = js.jobs[j].nodes;
    RunReport& alone = out[j].alone;
    alone.scenario = js.jobs[j].scenario.name;
    alone.iteration = simulate_iteration(engine, router, plans[j]);
    alone.iteration_s = alone.iteration.iteration_s;
    complete_report(alone, js.jobs[j].scenario, plans[j], memory[j]);
    if (link_tiers) alone.link_tiers = link_tier_loads(cluster, engine.last_link_bytes(), alone.iteration_s);
  }
  // Together: each job's graph, its flow ids shifted past the jobs before it, in one run; with
  // several iterations, each job's graph `iterations` times, every root of one iteration after a
  // barrier that waits for every end of the one before (the optimizer step syncs the job).
  const int n = js.iterations;
  std::vector<std::unique_ptr<IterationBuilder>> builders;
  FlowGraph all;
  std::vector<std::size_t> last_first(plans.size());  // per job, where its last iteration's flows start
  std::vector<std::size_t> graph_size(plans.size());  // per job, flows in one iteration
  std::vector<std::vector<FlowId>> barriers(plans.size());  // per job, after each iteration but the last
  for (std::size_t j = 0; j < plans.size(); ++j) {
    auto& b = builders.emplace_back(
        std::make_unique<IterationBuilder>(engine, router, plans[j], traces.empty() ? nullptr : traces[j]));
    b->share_fabric();
    const FlowGraph& g = b->build();
    graph_size[j] = g.flows.size();
    std::vector<char> has_successor(g.flows.size(), 0);
    for (const Flow& f : g.flows)
      for (FlowId a : f.after) has_successor[std::size_t(a)] = 1;
    for (int k = 0; k < n; ++k) {
      const auto offset = static_cast<FlowId>(all.flows.size());
      last_first[j] = all.flows.size();
      all.flows.reserve(all.flows.size() + g.flows.size() + 1);
      for (Flow f : g.flows) {
        for (FlowId& a : f.after) a += offset;
        if (k > 0 && f.after.empty()) f.after.push_back(barriers[j].back());
        all.flows.push_back(std::move(f));
      }
      if (k + 1 == n) break;
      Flow barrier = timer_flow(g.flows.front().src_gpu, 0);
      for (std::size_t i = 0; i < g.flows.size(); ++i)
        if (!has_successor[i]) barrier.after.push_back(offset + static_cast<FlowId>(i));
      barriers[j].push_back(all.add(std::move(barrier)));
    }
  }
  const std::vector<Seconds> finish = engine.run(all);
  for (std::size_t j = 0; j < builders.size(); ++j) {
    // The last iteration, its times from its own start, is the one accounted (and traced).
    const Seconds start = n > 1 ? finish[std::size_t(barriers[j].back())] : 0;
    const std::size_t from = last_first[j], to = from + graph_size[j];
    std::vector<Seconds> own(finish.begin() + static_cast<std::ptrdiff_t>(from), finish.begin() + static_cast<std::ptrdiff_t>(to));
    for (Seconds& t : own) t -= start;
    RunReport& together = out[j].together;
    together.scenario = js.jobs[j].scenario.name;
    together.iteration = builders[j]->account(own);
    // Each iteration's time: barrier to barrier (the last: to its own end).
    Seconds before = 0;
    for (int k = 0; k < n; ++k) {
      const Seconds end = k + 1 < n ? finish[std::size_t(barriers[j][std::size_t(k)])] : start + together.iteration.iteration_s;
      out[j].together_iterations_s.push_back(end - before);
      before = end;
    }
    // Steady state: the mean past the first iteration, which starts every job in phase at t = 0.
    Seconds steady = 0;
    for (int k = n > 1 ? 1 : 0; k < n; ++k) steady += out[j].together_iterations_s[std::size_t(k)];
    together.iteration_s = steady / (n > 1 ? n - 1 : 1);
    complete_report(together, js.jobs[j].scenario, plans[j], memory[j]);
    if (link_tiers) together.link_tiers = link_tier_loads(cluster, engine.last_link_bytes(), before);
  }
  return out;
}

}  // namespace clustersim
