#pragma once
// Transfers that all start together (an all-to-all), summed per directed link: a flow per loaded
// link carrying the exact bytes routed over it, which runs alone on that link (links that would
// drain at the same instant share one flow).
//
// Why this is the same all-to-all: when every transfer starts at once and each link's fair share
// keeps it busy until its last byte (work conservation), the collective ends when its most loaded
// link drains, load / bandwidth, whatever the sharing in between; max-min gives that exactly for
// equal sizes (the first link to saturate holds its flows at its share to the end, and no share
// ever falls below that), and test_all_to_all_scale checks uniform and skewed routing against the
// per-pair flows within 1%. Why it is needed: n^2 concurrent flows cost SimGrid's solver
// O(flows x links) per completion (46 s for 128 GPUs); the links of a 4096-GPU fabric are ~50K.
// What it gives up: per-pair finish times, and sharing with traffic outside the collective (a link
// flow competes as one flow, not as the k transfers it sums), so use it for collectives timed alone.
#include <vector>

#include "collectives/flow.hpp"

namespace clustersim {

class LinkLoads {
 public:
  explicit LinkLoads(const Cluster& cluster);
  /// A transfer with no predecessors; a link it lists twice carries its bytes twice.
  void add(int src_gpu, int dst_gpu, const std::vector<LinkDir>& links, Bytes size_bytes, Seconds latency_s);
  /// A flow per loaded link, or per set of links that drain together (same bytes, latency and
  /// bandwidth, at most kMaxHopsPerFlow of them), in a deterministic order. A link pays the largest
  /// latency among its transfers, so a latency-bound collective keeps its slowest transfer's latency.
  FlowGraph flows() const;

 private:
  struct Load {
    Bytes bytes = 0;
    Seconds latency_s = 0;
    int src_gpu = -1, dst_gpu = -1;  // the first transfer's: SimGrid wants two hosts per flow
  };
  const Cluster& cluster_;
  std::vector<Load> loads_;  // [LinkDir]
};

}  // namespace clustersim
