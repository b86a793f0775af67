#include "workloads/checkpoint_cost.hpp"

#include <algorithm>
#include <cmath>

#include "workloads/memory_model.hpp"
#include "workloads/model_math.hpp"

namespace clustersim {

CheckpointCost checkpoint_cost(const ScenarioSpec& s) {
  CheckpointCost c;
  const double bytes = parameter_count(s.model) * (kWeightBytesPerParam + kOptimizerBytesPerParam);
  c.bytes = static_cast<Bytes>(std::llround(bytes));
  c.nodes = (s.gpus() + s.cluster.node.gpus - 1) / s.cluster.node.gpus;
  const StorageSpec& st = s.cluster.storage;
  c.write_Bps = std::min(st.write_Bps, c.nodes * st.per_node_Bps);
  c.read_Bps = std::min(st.read_Bps, c.nodes * st.per_node_Bps);
  c.write_s = bytes / c.write_Bps;
  c.load_s = bytes / c.read_Bps;
  return c;
}

}  // namespace clustersim
