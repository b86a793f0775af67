#pragma once
// The collective vocabulary: operations, NCCL protocols, a request, and the pluggable algorithm
// interface. Algorithms are registered by name (registry.cpp) and listed by the CLI.
#include <optional>
#include <string>
#include <vector>

#include "collectives/flow.hpp"
#include "topologies/router.hpp"

namespace clustersim {

enum class Op { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
const std::vector<Op>& all_ops();
const char* to_string(Op op);
std::optional<Op> parse_op(const std::string& name);

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor.
double bus_bandwidth_factor(Op op, int ranks);

enum class AlgoFamily { ring, tree };

/// NCCL's protocol behaviour as its cost model states it (src/graph/tuning.cc): a fraction of
/// link bandwidth that carries data, a base latency per collective and a latency per hop.
struct Protocol {
  std::string name;
  double bandwidth_fraction = 1.0;
  Seconds base_latency_ring_s = 0;
  Seconds base_latency_tree_s = 0;
  Seconds hop_latency_nvlink_s = 0;
  Seconds hop_latency_network_s = 0;

  Seconds base_latency(AlgoFamily f) const { return f == AlgoFamily::ring ? base_latency_ring_s : base_latency_tree_s; }
};
/// LL, LL128 and Simple with NCCL's defaults.
const std::vector<Protocol>& nccl_protocols();
std::optional<Protocol> find_protocol(const std::string& name);
/// No protocol cost at all: full bandwidth, no latency beyond the links'. For closed-form checks.
Protocol ideal_protocol();

/// The most transfers an all-to-all may span (n(n-1) of them): each is routed, then summed per
/// link (link_loads.hpp), so the cost is the routing: 4,096 ranks (16.8M transfers) take about 9 s of
/// one core, where one engine flow per transfer took 10 s on 128.
inline constexpr long kMaxAllToAllFlows = 4096L * 4095;
/// The most ranks an all-to-all may span under kMaxAllToAllFlows.
constexpr int max_all_to_all_ranks() {
  int n = 2;
  while (static_cast<long>(n + 1) * n <= kMaxAllToAllFlows) ++n;
  return n;
}

/// How transfers that start together (an all-to-all, a step of PAT) become
/// flows: one per (sender, receiver) pair, or summed per directed link (collectives/link_loads.hpp:
/// the same time within 1%, ~n^2 / links times fewer flows). Per link suits a collective timed
/// alone on the fabric, as the sweep and MoE layers do.
enum class AllToAllFlows { per_pair, per_link };

struct CollectiveRequest {
  Op op = Op::all_reduce;
  std::vector<int> ranks;   // rank -> GPU id
  Bytes size_bytes = 0;     // nccl-tests' size: the buffer (all-reduce, broadcast, send/recv) or count*type*ranks
  int channels = 1;
  Protocol protocol;
  int root = 0;             // broadcast root rank
  AllToAllFlows flows = AllToAllFlows::per_link;  // all-to-all's transfers, PAT's step sends (steps.hpp)
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<Op> ops() const = 0;
  bool supports(Op op) const;
  /// Whether `--algo auto` (and the iteration's choice of collective) may pick it: not for an
  /// algorithm that moves other bytes than nccl-tests' op (deepep sends a token once per node).
  virtual bool chosen_by_auto() const { return true; }
  /// Whether NCCL's protocols apply; if not (deepep's kernels are not NCCL's), it runs once, with
  /// the links' latency only.
  virtual bool uses_nccl_protocols() const { return true; }
  /// Why this algorithm cannot run the request on this cluster; nullopt when it can. A request with a
  /// named protocol is also checked against runs_protocol().
  virtual std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& request) const;
  /// NCCL runs NVLS, NVLS-tree and PAT with its Simple protocol only; the others take all three.
  virtual bool runs_protocol(const Protocol&) const { return true; }
  /// Whether the NVSwitch reduces or multicasts in this op (NVLS): bytes are then conserved at the
  /// NICs and fabric switches only (conservation.hpp).
  virtual bool combines_in_switch(Op) const { return false; }
  /// Whether a training iteration's automatic choice may pick it. The algorithms added after the
  /// shipped scenarios were validated are offered by `clustersim collective` only, so that no
  /// validated iteration moves (collectives/README.md).
  virtual bool in_iteration_auto() const { return true; }
  /// The request as flows, checked to send as many bytes as it receives (conservation.hpp).
  FlowGraph lower(const Router& router, const CollectiveRequest& request) const;

 protected:
  virtual FlowGraph lower_flows(const Router& router, const CollectiveRequest& request) const = 0;
};

/// NCCL's channel count for one collective of `size_bytes` (src/enqueue.cc, NCCL 2.2x, ring and
/// tree): from `max_channels` down, one fewer while size < channels x threads x threshold, where a
/// channel runs 512 threads (LL, Simple) or 640 (LL128) and the threshold is 64 bytes a thread for
/// Simple and 8 for LL and LL128 (ring LL: 8 x ranks; src/graph/tuning.cc). Small collectives thus
/// run on fewer channels, down to one. Other algorithms and `ideal` keep `max_channels` (NCCL sizes
/// NVLS by its own channel count, not by size).
int nccl_channels_for_size(const Algorithm& algorithm, const Protocol& protocol, Bytes size_bytes, int ranks,
                           int max_channels);

const Algorithm* find_algorithm(const std::string& name);
std::vector<const Algorithm*> all_algorithms();
std::string algorithm_names();

}  // namespace clustersim
