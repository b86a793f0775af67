#pragma once
// A job on GPUs of several models (a heterogeneous cluster's node groups). The plan is timed on
// the scenario's GPU (the cluster's `gpu:`); a unit on another model computes at the speed the two
// models' times for its rank's own compute give, so every other part of the engine (variability's
// per-GPU speeds, the fold's classes, the slowest GPU pacing a unit) treats it as a speed.
#include <string>
#include <vector>

#include "workloads/compute_model.hpp"
#include "workloads/iteration_plan.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

/// The compute (and recompute) time of a list of segments, each counted `repeat` times.
Seconds segments_compute_s(const std::vector<Segment>& segments);

/// Pipeline rank r's compute on one GPU for one iteration's worth of each of its stages' passes:
/// the forward, backward and recompute segments of every chunk it holds, once each.
Seconds rank_compute_s(const IterationPlan& plan, int rank);

/// Multiplies each GPU of a placed plan (plan.unit_gpus in cluster ids) by its model's speed for
/// its rank: rank_compute_s on the scenario's GPU over rank_compute_s on the model of its node.
/// `speed` is by cluster GPU id; an empty one is filled with 1 first. Nothing changes when the job
/// holds only the scenario's GPU.
void apply_gpu_models(const ScenarioSpec& s, const IterationPlan& plan, const KernelTable* kernels, int cluster_gpus,
                      std::vector<double>& speed);

/// Each pipeline rank's GPU models (distinct, in the order first met) across the job's replicas.
std::vector<std::vector<std::string>> rank_gpu_models(const ScenarioSpec& s, const IterationPlan& plan);

}  // namespace clustersim
