#include "simulator/training_run.hpp"
#include "simulator/memory_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "simulator/heterogeneous.hpp"
#include "topologies/user_error.hpp"
#include "workloads/job_placement.hpp"
#include "workloads/model_math.hpp"
#include "workloads/plan_iteration.hpp"

namespace clustersim {

namespace {

double gib(Bytes b) { return static_cast<double>(b) / (1ULL << 30); }

std::vector<StageMemory> plan_memory(const ScenarioSpec& s, const IterationPlan& plan) {
  // Peak in-flight microbatches come from the schedule's own table, replayed with unit passes.
  const ScheduleTiming shape_timing = replay(*plan.schedule, plan.shape, 1.0, 2.0);
  const int p = plan.shape.stages;
  std::vector<StageMemory> out;
  const int v = plan.shape.chunks, stages = static_cast<int>(plan.stages.size());
  // Context parallelism: each rank keeps the activations of 1/cp of every sequence.
  ModelSpec local = s.model;
  local.seq_len = s.model.seq_len / s.layout.cp;
  for (int r = 0; r < p; ++r) {
    double params = 0, expert_params = 0;
    int layers = 0, moe_layers = 0;
    bool first = false, last = false, holds_encoder = false;
    double embedding_in_flight = -1, head_in_flight = -1;
    for (int c = 0; c < v; ++c) {
      const int stage = plan.schedule->chunk_stage(plan.shape, r, c);
      params += static_cast<double>(plan.stages[stage].gradient_bytes) / plan.gradient_bytes_per_param;
      expert_params += static_cast<double>(plan.stages[stage].expert_gradient_bytes) / plan.gradient_bytes_per_param;
      for (int l = s.first_layer(stage); l < s.first_layer(stage) + s.stage_layers[static_cast<std::size_t>(stage)]; ++l) {
        ++layers;
        moe_layers += s.model.is_moe_layer(l);
      }
      first = first || stage == s.first_language_stage();
      holds_encoder = holds_encoder || stage == 0;
      last = last || stage == stages - 1;
      const double chunk_peak = shape_timing.peak_held_by_chunk[r][c];
      if (stage == s.first_language_stage()) embedding_in_flight = chunk_peak;
      if (stage == stages - 1) head_in_flight = chunk_peak;
    }
    StageLoad load;
    load.params_on_rank = params;
    load.expert_params_on_rank = expert_params;
    load.expert_data_parallel = s.layout.dp / s.ep * s.layout.cp;
    // The schedule counts activations in units of 1/p of the model: a chunk's layers scaled by
    // model_stages / p (L / p for even stages, whatever the schedule).
    const double unit = static_cast<double>(stages) / (p * v);
    load.layers = layers * unit;
    load.moe_layers = moe_layers * unit;
    load.in_flight_microbatches = shape_timing.peak_in_flight_microbatches[r];
    load.first_stage = first;
    if (holds_encoder && s.model.encoder)
      load.extra_activation_bytes =
          s.model.encoder->layers * static_cast<double>(activation_bytes_per_layer(
                                        encoder_model(s.model), s.microbatch, s.layout.tp, s.sequence_parallel, s.recompute));
    load.last_stage = last;
    load.embedding_in_flight_microbatches = embedding_in_flight;
    load.head_in_flight_microbatches = head_in_flight;
    load.mtp_modules = last ? s.model.mtp_depth : 0;
    load.data_parallel = s.layout.dp * s.layout.cp;  // context-parallel ranks hold the same weights
    load.distributed_optimizer = s.distributed_optimizer;
    load.gradient_bytes_per_param = s.gradient_buffer_bytes();
    load.optimizer_bytes_per_param = s.optimizer_state_bytes_per_param();
    load.zero_stage = s.zero_stage;
    if (s.zero_stage == 3 && layers > 0) {
      const double per_layer = (params + expert_params) / layers;
      load.gathered_params = s.reshard_after_forward ? 2 * per_layer : params + expert_params;
    }
    const bool fp8 = s.eight_bit_gemm_inputs();
    out.push_back(stage_memory(local,
                               {s.microbatch, s.layout.tp, s.sequence_parallel, s.recompute, fp8,
                                s.attention == AttentionKernel::flash, s.recompute_modules},
                               load));
  }
  return out;
}

}  // namespace

FoldMode fold_under(const VariabilitySpec& v, FoldMode asked) {
  // Variability makes replicas unlike: replica 0 cannot stand for the rest unproven.
  return v.varies() && asked == FoldMode::assume ? FoldMode::exact : asked;
}

FoldMode fold_under(const ScenarioSpec& s, FoldMode asked) {
  // So do GPUs of several models.
  return s.heterogeneous() && asked == FoldMode::assume ? FoldMode::exact : fold_under(s.variability, asked);
}

std::vector<StageMemory> checked_stage_memory(const ScenarioSpec& s, const IterationPlan& plan, bool allow_oom) {
  const std::vector<StageMemory> memory = plan_memory(s, plan);
  // Each rank against the least HBM among its GPUs' models (a heterogeneous cluster's ranks may
  // sit on different ones; plan.unit_gpus is placed by then).
  const std::vector<std::vector<std::string>> models =
      plan.unit_gpus.empty() ? std::vector<std::vector<std::string>>{} : rank_gpu_models(s, plan);
  for (std::size_t r = 0; r < memory.size(); ++r) {
    const GpuModel* gpu = nullptr;
    if (r < models.size())
      for (const std::string& m : models[r]) {
        const GpuModel& g = m == s.cluster.gpu ? s.gpu : s.group_gpus.at(m);
        if (!gpu || g.hbm_bytes < gpu->hbm_bytes) gpu = &g;
      }
    if (!gpu) gpu = &s.gpu;
    if (!allow_oom && memory[r].total > gpu->hbm_bytes) {
      const StageMemory& m = memory[r];
      char line[512];
      std::snprintf(line, sizeof line,
                    "pipeline stage %zu needs %.2f GiB per GPU, %.2f GiB more than the %s's %.2f GiB (weights %.2f, "
                    "gradients %.2f, optimizer %.2f, activations %.2f, recompute workspace %.2f GiB); expected a "
                    "layout that fits: more tp or pp, a smaller microbatch, recompute, or --allow-oom to run it anyway",
                    r, gib(m.total), gib(m.total - gpu->hbm_bytes), gpu->name.c_str(), gib(gpu->hbm_bytes),
                    gib(m.weights), gib(m.gradients), gib(m.optimizer), gib(m.activations), gib(m.recompute_workspace));
      throw OutOfMemoryError(s.file, s.parallel_line, "parallel", line);
    }
  }
  return memory;
}

void complete_report(RunReport& report, const ScenarioSpec& s, const IterationPlan& plan,
                     const std::vector<StageMemory>& memory) {
  report.hbm_bytes = s.gpu.hbm_bytes;
  for (int g = 0; g < s.gpus() && !plan.gpu_speed.empty(); ++g) {
    const int id = s.node_of(g) * s.cluster.node.gpus + g % s.cluster.node.gpus;
    if (plan.gpu_speed[static_cast<std::size_t>(id)] < report.slowest_speed) {
      report.slowest_speed = plan.gpu_speed[static_cast<std::size_t>(id)];
      report.slowest_gpu = id;
    }
  }
  const int shown = report.iteration.reported_replica, p = plan.shape.stages;
  for (int r = 0; r < p; ++r)
    report.rank_gpus.push_back(plan.unit_gpus.empty() ? plan.rank_gpu[static_cast<std::size_t>(r)]
                                                      : plan.unit_gpus[static_cast<std::size_t>(shown * p + r)].front());
  const double tokens = static_cast<double>(s.global_batch) * s.model.seq_len;
  report.tokens_per_s = tokens / report.iteration_s;
  const double executed =
      training_flops_per_iteration(s.model, s.global_batch, s.recompute == Recompute::full);
  report.model_tflops_per_gpu = executed / report.iteration_s / s.gpus() / 1e12;
  report.mfu = model_flops_per_token(s.model) * report.tokens_per_s / s.gpus() / *s.gpu.peak_flops(s.precision);
  if (s.heterogeneous()) {  // over the job's GPUs' own peaks, each node's model's
    double peak_flops = 0;
    for (int n = 0; n * s.cluster.node.gpus < s.gpus(); ++n)
      peak_flops += *s.gpu_of_node(s.node_of(n * s.cluster.node.gpus)).peak_flops(s.precision) *
                    std::min(s.cluster.node.gpus, s.gpus() - n * s.cluster.node.gpus);
    report.mfu = model_flops_per_token(s.model) * report.tokens_per_s / peak_flops;
  }
  const std::vector<std::vector<std::string>> models = rank_gpu_models(s, plan);
  for (std::size_t r = 0; r < memory.size(); ++r) {
    std::string model;
    for (const std::string& m : models.at(r)) model += (model.empty() ? "" : "+") + m;
    report.stages.push_back({static_cast<int>(r), plan.rank_gpu[r], memory[r], report.iteration.ranks[r], model});
  }
}

RunReport run_training(const ScenarioSpec& s, bool allow_oom, const KernelTable* kernels, FoldMode fold, Solver solver,
                       Placements placement, bool link_tiers, TraceSink* trace) {
  IterationPlan plan = plan_iteration(s, kernels);
  plan.fold = fold_under(s, fold);
  plan.placement = placement;
  if (!s.nodes.empty()) place_plan(plan, s.nodes, s.cluster.node.gpus);
  const std::vector<StageMemory> memory = checked_stage_memory(s, plan, allow_oom);

  Cluster cluster = build_cluster(s.cluster);
  apply_link_changes(cluster, s.variability.links);
  plan.gpu_speed = gpu_speeds(s.variability, cluster.gpu_count(), cluster.gpus_per_node());
  apply_gpu_models(s, plan, kernels, cluster.gpu_count(), plan.gpu_speed);
  RunReport report;
  report.scenario = s.name;
  const bool flapping = !s.variability.flapping.empty();
  std::vector<double> link_bytes;
  auto simulate_on = [&](const Cluster& c, TraceSink* t) {
    Router router(c);
    router.remember_routes();
    FabricEngine engine(c, solver);
    engine.record_link_bytes(link_tiers || flapping);
    IterationResult r = simulate_iteration(engine, router, plan, t);
    link_bytes = engine.last_link_bytes();
    if (link_tiers) report.link_tiers = link_tier_loads(c, link_bytes, r.iteration_s);
    return r;
  };
  report.iteration = simulate_on(cluster, flapping ? nullptr : trace);
  report.iteration_s = report.iteration.iteration_s;
  if (flapping) {
    // This draw's flapping links, from the iteration with all of them up (flapping.hpp).
    report.flaps = draw_flaps(cluster, s.variability.flapping, s.variability.seed, report.iteration_s, link_bytes);
    if (report.flaps.rerouted() || trace) report.iteration = simulate_on(cluster, trace);
    report.iteration_s = report.iteration.iteration_s + report.flaps.stall_s;
  }
  complete_report(report, s, plan, memory);
  return report;
}

}  // namespace clustersim
