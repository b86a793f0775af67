#include "collectives/point_to_point.hpp"

#include <cassert>

#include "collectives/link_loads.hpp"
#include "collectives/pipeline.hpp"

namespace clustersim {

Flow point_to_point_flow(const Router& router, int src, int dst, double data_bytes, const Protocol& protocol, bool pxn,
                         std::uint64_t hash) {
  const Cluster& c = router.cluster();
  Route r;
  const bool network = c.node_of_gpu(src) != c.node_of_gpu(dst);
  if (!network) {
    router.append_scale_up(src, dst, r);
  } else if (pxn) {
    const int dst_nic = c.nic_of_gpu(dst);
    const int proxy_nic = c.node_of_gpu(src) * c.nics_per_node() + c.rail_of_nic(dst_nic);
    router.append_scale_up(src, c.gpu_of_nic(proxy_nic), r);
    r.append(router.route_between_nics(proxy_nic, dst_nic, hash));
  } else {
    r = router.route(src, dst, hash);
  }
  Flow f;
  f.src_gpu = src;
  f.dst_gpu = dst;
  f.links = std::move(r.links);
  f.size_bytes = wire_bytes(data_bytes, protocol);
  f.latency_s = protocol.base_latency(AlgoFamily::ring) + r.latency_s +
                (network ? protocol.hop_latency_network_s : protocol.hop_latency_nvlink_s);
  return f;
}

namespace {

/// Collects an all-to-all's transfers as flows of their own or summed per link.
class Transfers {
 public:
  Transfers(const Cluster& cluster, AllToAllFlows flows)
      : per_link_(flows == AllToAllFlows::per_link), loads_(cluster) {}
  void add(Flow f) {
    if (per_link_) loads_.add(f);
    else graph_.add(std::move(f));
  }
  FlowGraph take() { return per_link_ ? loads_.flows() : std::move(graph_); }

 private:
  bool per_link_;
  LinkLoads loads_;
  FlowGraph graph_;
};

}  // namespace

FlowGraph lower_all_to_all_v(const Router& router, const std::vector<int>& gpus,
                             const std::vector<std::vector<double>>& bytes, const Protocol& protocol, bool pxn,
                             AllToAllFlows flows) {
  assert(bytes.size() == gpus.size() && "one row of sizes per rank");
  Transfers out(router.cluster(), flows);
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = 0; j < gpus.size(); ++j)
      if (i != j && bytes[i][j] > 0)
        out.add(point_to_point_flow(router, gpus[i], gpus[j], bytes[i][j], protocol, pxn, flow_hash(gpus[i], gpus[j], 0)));
  return out.take();
}

FlowGraph lower_uniform_all_to_all(const Router& router, const std::vector<int>& gpus, double pair_bytes,
                                   const Protocol& protocol, bool pxn, AllToAllFlows flows) {
  Transfers out(router.cluster(), flows);
  for (int src : gpus)
    for (int dst : gpus)
      if (src != dst) out.add(point_to_point_flow(router, src, dst, pair_bytes, protocol, pxn, flow_hash(src, dst, 0)));
  return out.take();
}

FlowGraph lower_node_limited_all_to_all(const Router& router, const std::vector<int>& gpus, int per_node,
                                        const std::vector<std::vector<double>>& network_bytes,
                                        const std::vector<std::vector<double>>& nvlink_bytes, const Protocol& protocol,
                                        AllToAllFlows flows) {
  assert(per_node > 0 && gpus.size() % per_node == 0 && "ranks fill whole nodes");
  Transfers graph(router.cluster(), flows);
  const std::size_t n = gpus.size(), nodes = n / per_node;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t home = i / per_node, lane = i % per_node;
    for (std::size_t node = 0; node < nodes; ++node)
      if (node != home && network_bytes[i][node] > 0) {
        // To the GPU of the same local index - the same rail - in the destination node.
        const int dst = gpus[node * per_node + lane];
        graph.add(point_to_point_flow(router, gpus[i], dst, network_bytes[i][node], protocol, false,
                                      flow_hash(gpus[i], dst, 0)));
      }
    for (std::size_t j = 0; j < n; ++j)
      if (j != i && j / per_node == home && nvlink_bytes[i][j] > 0)
        graph.add(point_to_point_flow(router, gpus[i], gpus[j], nvlink_bytes[i][j], protocol, false, 0));
  }
  return graph.take();
}

}  // namespace clustersim
