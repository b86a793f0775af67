#include "collectives/nccl_closed_form.hpp"

#include "collectives/tuner_nccl.hpp"

namespace clustersim {

Seconds nccl_closed_form_s(const Cluster& cluster, Op op, const std::vector<int>& group, Bytes bytes, int channels, bool tuned) {
  if (bytes == 0 || group.size() < 2) return 0;
  Seconds t = 0;
  if (tuned) {
    const CollectiveRequest req{op, group, bytes, channels, Protocol{}, 0};
    if (auto c = nccl_choose(cluster, req, std::nullopt, false); c && c->predicted_s) t = *c->predicted_s;
  }
  if (t == 0) t = nccl_predicted_time(nccl_topology(cluster, group, channels), op, "ring", "Simple", bytes).value_or(0);
  return t;
}

}  // namespace clustersim
