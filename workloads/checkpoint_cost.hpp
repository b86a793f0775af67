#pragma once
// What one checkpoint of a scenario weighs and how long the cluster's storage takes to write it
// and to read it back on restart.
#include "workloads/scenario.hpp"

namespace clustersim {

struct CheckpointCost {
  Bytes bytes = 0;               // the model's 16-bit weights and its fp32 optimizer state, once
  int nodes = 0;                 // the job's nodes, each writing its share
  BytesPerSecond write_Bps = 0;  // min(aggregate write, nodes x per node)
  BytesPerSecond read_Bps = 0;   // min(aggregate read, nodes x per node)
  Seconds write_s = 0;
  Seconds load_s = 0;
};

/// The checkpoint is what a restart needs and no replica duplicates: every parameter once, in the
/// memory model's bytes (kWeightBytesPerParam + kOptimizerBytesPerParam: 2 + 12 B/param for
/// mixed-precision Adam; gradients are not saved). Every node writes its shard at once (Megatron's
/// fully parallel distributed checkpoint), so the bandwidth is the storage's aggregate or the sum of
/// the job's nodes' links, whichever is less. Needs the cluster's `storage:`.
CheckpointCost checkpoint_cost(const ScenarioSpec& s);

}  // namespace clustersim
