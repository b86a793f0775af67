#include "collectives/point_to_point.hpp"

#include <cassert>

#include "collectives/conservation.hpp"
#include "collectives/link_loads.hpp"
#include "collectives/pipeline.hpp"

namespace clustersim {

namespace {

bool crosses_network(const Cluster& c, int src, int dst) { return c.node_of_gpu(src) != c.node_of_gpu(dst); }

/// One transfer's links and their latency, appended to `r`, which an all-to-all reuses for its n^2
/// transfers (a fresh route each would be most of the lowering's time at 4096 GPUs).
void route_transfer(const Router& router, int src, int dst, bool pxn, std::uint64_t hash, Route& r) {
  const Cluster& c = router.cluster();
  if (!crosses_network(c, src, dst)) return router.append_scale_up(src, dst, r);
  // Without PXN, the GPU's own NIC, or another rail's on a rail-only fabric.
  const int egress = pxn ? pxn_egress_nic(c, src, dst) : router.egress_nic(src, c.nic_of_gpu(dst));
  router.append_route_via_nic(src, egress, dst, hash, r);
}

Seconds transfer_latency(bool network, const Route& r, const Protocol& protocol) {
  return protocol.base_latency(AlgoFamily::ring) + r.latency_s +
         (network ? protocol.hop_latency_network_s : protocol.hop_latency_nvlink_s);
}

}  // namespace

bool pxn_applies(const Cluster& cluster) {
  return cluster.spec.fabric.type == "rail_optimized" || cluster.spec.fabric.type == "rail_only";
}

int pxn_egress_nic(const Cluster& c, int src_gpu, int dst_gpu) {
  return c.node_of_gpu(src_gpu) * c.nics_per_node() + c.rail_of_nic(c.nic_of_gpu(dst_gpu));
}

Flow point_to_point_flow(const Router& router, int src, int dst, double data_bytes, const Protocol& protocol, bool pxn,
                         std::uint64_t hash) {
  Route r;
  route_transfer(router, src, dst, pxn, hash, r);
  Flow f;
  f.src_gpu = src;
  f.dst_gpu = dst;
  f.latency_s = transfer_latency(crosses_network(router.cluster(), src, dst), r, protocol);
  f.links = std::move(r.links);
  f.size_bytes = wire_bytes(data_bytes, protocol);
  return f;
}

namespace {

/// Routes an all-to-all's transfers into flows of their own or sums them per link.
class Transfers {
 public:
  Transfers(const Router& router, const Protocol& protocol, AllToAllFlows flows)
      : router_(router), protocol_(protocol), per_link_(flows == AllToAllFlows::per_link), loads_(router.cluster()) {}

  /// wire_factor scales the wire bytes (a transfer driven below its links' rate), extra_s adds latency.
  void add(int src, int dst, double data_bytes, bool pxn, std::uint64_t hash, double wire_factor = 1,
           Seconds extra_s = 0) {
    if (!per_link_) {
      Flow f = point_to_point_flow(router_, src, dst, data_bytes, protocol_, pxn, hash);
      f.size_bytes = static_cast<Bytes>(static_cast<double>(f.size_bytes) * wire_factor);
      f.latency_s += extra_s;
      return void(graph_.add(std::move(f)));
    }
    route_.links.clear();
    route_.latency_s = 0;
    route_transfer(router_, src, dst, pxn, hash, route_);
    loads_.add(src, dst, route_.links,
               static_cast<Bytes>(static_cast<double>(wire_bytes(data_bytes, protocol_)) * wire_factor),
               transfer_latency(crosses_network(router_.cluster(), src, dst), route_, protocol_) + extra_s);
  }
  FlowGraph take() {
    FlowGraph out = per_link_ ? loads_.flows() : std::move(graph_);
    check_bytes_conserved(router_.cluster(), out, per_link_ ? "all-to-all summed per link" : "all-to-all per pair");
    return out;
  }

 private:
  const Router& router_;
  const Protocol& protocol_;
  bool per_link_;
  LinkLoads loads_;
  FlowGraph graph_;
  Route route_;
};

}  // namespace

FlowGraph lower_all_to_all_v(const Router& router, const std::vector<int>& gpus,
                             const std::vector<std::vector<double>>& bytes, const Protocol& protocol, bool pxn,
                             AllToAllFlows flows) {
  assert(bytes.size() == gpus.size() && "one row of sizes per rank");
  Transfers out(router, protocol, flows);
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = 0; j < gpus.size(); ++j)
      if (i != j && bytes[i][j] > 0) out.add(gpus[i], gpus[j], bytes[i][j], pxn, flow_hash(gpus[i], gpus[j], 0));
  return out.take();
}

FlowGraph lower_uniform_all_to_all(const Router& router, const std::vector<int>& gpus, double pair_bytes,
                                   const Protocol& protocol, bool pxn, AllToAllFlows flows) {
  Transfers out(router, protocol, flows);
  for (int src : gpus)
    for (int dst : gpus)
      if (src != dst) out.add(src, dst, pair_bytes, pxn, flow_hash(src, dst, 0));
  return out.take();
}

FlowGraph lower_node_limited_all_to_all(const Router& router, const std::vector<int>& gpus, int per_node,
                                        const std::vector<std::vector<double>>& network_bytes,
                                        const std::vector<std::vector<double>>& nvlink_bytes, const Protocol& protocol,
                                        AllToAllFlows flows) {
  return lower_node_limited_all_to_all(router, gpus, per_node, network_bytes, nvlink_bytes, protocol, TwoLegCosts{},
                                       flows);
}

FlowGraph lower_node_limited_all_to_all(const Router& router, const std::vector<int>& gpus, int per_node,
                                        const std::vector<std::vector<double>>& network_bytes,
                                        const std::vector<std::vector<double>>& nvlink_bytes, const Protocol& protocol,
                                        const TwoLegCosts& costs, AllToAllFlows flows) {
  assert((costs.nvlink_wire_factor.empty() || costs.nvlink_wire_factor.size() == gpus.size()) &&
         "one NVLink wire factor per rank");
  assert(per_node > 0 && gpus.size() % per_node == 0 && "ranks fill whole nodes");
  Transfers graph(router, protocol, flows);
  const std::size_t n = gpus.size(), nodes = n / per_node;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t home = i / per_node, lane = i % per_node;
    for (std::size_t node = 0; node < nodes; ++node)
      if (node != home && network_bytes[i][node] > 0) {
        // To the GPU of the same local index - the same rail - in the destination node.
        const int dst = gpus[node * per_node + lane];
        graph.add(gpus[i], dst, network_bytes[i][node], false, flow_hash(gpus[i], dst, 0), 1,
                  costs.network_extra_s);
      }
    const double factor = costs.nvlink_wire_factor.empty() ? 1 : costs.nvlink_wire_factor[i];
    for (std::size_t j = 0; j < n; ++j)
      if (j != i && j / per_node == home && nvlink_bytes[i][j] > 0)
        graph.add(gpus[i], gpus[j], nvlink_bytes[i][j], false, 0, factor, costs.nvlink_extra_s);
  }
  return graph.take();
}

}  // namespace clustersim
