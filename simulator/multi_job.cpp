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
  // Together: each job's graph, its flow ids shifted past the jobs before it, in one run.
  std::vector<std::unique_ptr<IterationBuilder>> builders;
  FlowGraph all;
  std::vector<std::size_t> first;
  for (std::size_t j = 0; j < plans.size(); ++j) {
    auto& b = builders.emplace_back(
        std::make_unique<IterationBuilder>(engine, router, plans[j], traces.empty() ? nullptr : traces[j]));
    b->share_fabric();
    const FlowGraph& g = b->build();
    const auto offset = static_cast<FlowId>(all.flows.size());
    first.push_back(all.flows.size());
    all.flows.reserve(all.flows.size() + g.flows.size());
    for (Flow f : g.flows) {
      for (FlowId& a : f.after) a += offset;
      all.flows.push_back(std::move(f));
    }
  }
  first.push_back(all.flows.size());
  const std::vector<Seconds> finish = engine.run(all);
  for (std::size_t j = 0; j < builders.size(); ++j) {
    const std::vector<Seconds> own(finish.begin() + static_cast<std::ptrdiff_t>(first[j]),
                                   finish.begin() + static_cast<std::ptrdiff_t>(first[j + 1]));
    RunReport& together = out[j].together;
    together.scenario = js.jobs[j].scenario.name;
    together.iteration = builders[j]->account(own);
    together.iteration_s = together.iteration.iteration_s;
    complete_report(together, js.jobs[j].scenario, plans[j], memory[j]);
    if (link_tiers) together.link_tiers = link_tier_loads(cluster, engine.last_link_bytes(), together.iteration_s);
  }
  return out;
}

}  // namespace clustersim
