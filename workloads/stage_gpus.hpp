#pragma once
// parallel.stage_gpus on a heterogeneous cluster (topologies/node_groups.hpp): each pipeline rank
// on nodes of a named GPU model.
#include "workloads/scenario.hpp"

namespace clustersim {

/// Reads parallel.stage_gpus into s.stage_gpus and places the job: s.nodes lists, in rank order,
/// the lowest free nodes of each rank's model. UserErrors at the field: not one model per rank, a
/// model the cluster lacks, a layout whose ranks do not hold whole nodes (pp not the outermost
/// dimension, or tp x cp x dp not a multiple of a node), more ranks on a model than its nodes hold.
void read_stage_gpus(const YamlField& f, ScenarioSpec& s);

}  // namespace clustersim
