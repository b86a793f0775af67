#pragma once
// Where a serving fleet's replicas sit on a cluster, and on which GPU model. On a cluster of one
// model, replica r takes GPUs r x tp x pp onwards, as before. On a heterogeneous cluster (the
// cluster file's node_groups:), a pool may name its model: `serving.gpu` for every replica, or
// `disaggregated.prefill_gpu` / `decode_gpu` for each pool (Splitwise's case: prompts on the
// compute-rich GPU, tokens on the one with more HBM bandwidth). Pools are placed in order (prefill,
// then decode), each replica on the lowest free GPUs of its pool's model; a pool that names none
// takes the lowest free GPUs of any model, and such a replica may not straddle two models (it
// would run at neither's speed; naming the model places it inside one).
#include <optional>
#include <string>
#include <vector>

#include "topologies/yaml_reader.hpp"

namespace clustersim {

struct ServingSpec;

struct ReplicaPlacement {
  std::vector<int> gpus;  // tp x pp GPU ids in rank order (tensor-parallel rank fastest)
  std::string gpu;        // the GPU model they hold
};

/// A pool of replicas and the model it asks for ("" for any), with the fields that set them, for
/// errors.
struct PoolModel {
  int replicas = 0;
  std::string gpu;
  std::optional<YamlField> gpu_field;  // where gpu is written; absent when it is not
  YamlField count_field;               // where the replica count is written (or the section)
};

/// One placement per replica, pools in order. UserErrors: a model the cluster lacks, more replicas
/// than its free GPUs hold, a replica straddling two models.
std::vector<ReplicaPlacement> place_replicas(const ServingSpec& s, const std::vector<PoolModel>& pools);

}  // namespace clustersim
