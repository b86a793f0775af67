#include "collectives/collective.hpp"

#include "collectives/conservation.hpp"
#include "topologies/units.hpp"

namespace clustersim {

const std::vector<Op>& all_ops() {
  static const std::vector<Op> ops{Op::all_reduce, Op::all_gather, Op::reduce_scatter,
                                   Op::all_to_all, Op::broadcast,  Op::send_recv};
  return ops;
}

const char* to_string(Op op) {
  switch (op) {
    case Op::all_reduce: return "all_reduce";
    case Op::all_gather: return "all_gather";
    case Op::reduce_scatter: return "reduce_scatter";
    case Op::all_to_all: return "all_to_all";
    case Op::broadcast: return "broadcast";
    case Op::send_recv: return "send_recv";
  }
  return "?";
}

std::optional<Op> parse_op(const std::string& name) {
  for (Op op : all_ops())
    if (name == to_string(op)) return op;
  return std::nullopt;
}

double bus_bandwidth_factor(Op op, int n) {
  switch (op) {
    case Op::all_reduce: return 2.0 * (n - 1) / n;
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::all_to_all: return static_cast<double>(n - 1) / n;
    case Op::broadcast:
    case Op::send_recv: return 1.0;
  }
  return 1.0;
}

const std::vector<Protocol>& nccl_protocols() {
  // NCCL 2.2x src/graph/tuning.cc (baseLat, hwLat for NVLink and NET; ring/tree). LL moves 8 data
  // bytes per 16-byte line, LL128 120 of 128 bytes (NCCL models it as 0.92), Simple all of them.
  static const std::vector<Protocol> protocols{
      {"LL", 0.5, microseconds(6.6), microseconds(6.8), microseconds(0.6), microseconds(2.7)},
      {"LL128", 0.92, microseconds(14.0), microseconds(14.0), microseconds(1.9), microseconds(4.0)},
      {"Simple", 1.0, microseconds(8.4), microseconds(8.4), microseconds(3.4), microseconds(14.0)},
  };
  return protocols;
}

std::optional<Protocol> find_protocol(const std::string& name) {
  for (const Protocol& p : nccl_protocols())
    if (p.name == name) return p;
  if (name == "ideal") return ideal_protocol();
  return std::nullopt;
}

Protocol ideal_protocol() { return Protocol{"ideal", 1.0, 0, 0, 0, 0}; }

int nccl_channels_for_size(const Algorithm& algorithm, const Protocol& protocol, Bytes size_bytes, int ranks,
                           int max_channels) {
  const bool ring = algorithm.name() == "ring";
  if (!ring && algorithm.name() != "tree") return max_channels;
  double threads = 0, threshold_bytes = 0;
  if (protocol.name == "Simple") threads = 512, threshold_bytes = 64;
  else if (protocol.name == "LL") threads = 512, threshold_bytes = ring ? 8.0 * ranks : 8.0;
  else if (protocol.name == "LL128") threads = 640, threshold_bytes = 8;
  else return max_channels;
  int channels = max_channels;
  while (channels > 1 && static_cast<double>(size_bytes) < channels * threads * threshold_bytes) --channels;
  return channels;
}

bool Algorithm::supports(Op op) const {
  for (Op o : ops())
    if (o == op) return true;
  return false;
}

std::optional<std::string> Algorithm::not_applicable(const Cluster&, const CollectiveRequest& request) const {
  if (!supports(request.op)) return name() + " does not implement " + to_string(request.op);
  if (!request.protocol.name.empty() && !runs_protocol(request.protocol))
    return name() + " runs only NCCL's Simple protocol (or ideal), not " + request.protocol.name;
  return std::nullopt;
}

FlowGraph Algorithm::lower(const Router& router, const CollectiveRequest& request) const {
  FlowGraph graph = lower_flows(router, request);
  // Every rank of these sends as much as it receives; a broadcast's root only sends.
  check_bytes_conserved(router.cluster(), graph, name() + " " + to_string(request.op) + " lowering",
                        request.op != Op::broadcast, combines_in_switch(request.op));
  return graph;
}

}  // namespace clustersim
