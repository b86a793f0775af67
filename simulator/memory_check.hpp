#pragma once
// The memory check run_training applies before simulating, for callers that plan a scenario
// themselves (several jobs on one cluster, multi_job.hpp).
#include <vector>

#include "workloads/iteration_plan.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

/// Each pipeline rank's memory per GPU; a rank beyond the GPU's HBM is an OutOfMemoryError
/// (training_run.hpp) naming it, unless allow_oom.
std::vector<StageMemory> checked_stage_memory(const ScenarioSpec& s, const IterationPlan& plan, bool allow_oom);

}  // namespace clustersim
