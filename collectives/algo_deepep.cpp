// DeepEP's normal kernels (algo_deepep.hpp), and `deepep` as an all-to-all algorithm of
// `clustersim collective`: each rank dispatches its tokens under DeepEP's benchmark routing.
#include "collectives/algo_deepep.hpp"

#include <algorithm>
#include <cassert>

namespace clustersim {

namespace {

/// What one GPU can push into its node's NVLink domain, one direction.
double nvlink_egress_Bps(const Cluster& c, int gpu) {
  if (!c.gpu_switch_link.empty()) return c.effective_bandwidth_Bps(c.gpu_switch_link[static_cast<std::size_t>(gpu)]);
  const int g = c.gpus_per_node(), node = c.node_of_gpu(gpu), i = c.local_of_gpu(gpu);
  double sum = 0;
  for (int j = 0; j < g; ++j) {
    const LinkId l = c.mesh_link.empty() ? -1 : c.mesh_link[static_cast<std::size_t>(node) * g * g + i * g + j];
    if (j != i && l >= 0) sum += c.effective_bandwidth_Bps(l);
  }
  return sum;
}

double nic_Bps(const Cluster& c, int gpu) {
  if (c.nic_port_link.empty()) return 0;
  // A multi-plane NIC's ports all carry the GPU's traffic (topologies/fabric_multi_plane.cpp).
  return c.ports_per_nic() * c.effective_bandwidth_Bps(c.nic_port_link[static_cast<std::size_t>(c.nic_of_gpu(gpu))]);
}

/// C(a - b, k) / C(a, k): the chance that k distinct picks out of a all miss a set of b.
double all_miss(double a, double b, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= std::max(0.0, (a - b - i) / (a - i));
  return p;
}

struct Shape {
  int nodes, experts, chosen_nodes;
};

Shape shape_of(int ranks, int per_node, const DeepEpRouting& r) {
  const int per = std::min(per_node, ranks);
  const int nodes = ranks / per;
  return {nodes, std::max(ranks, r.experts / ranks * ranks), std::min(nodes, r.max_nodes)};
}

/// A token's chance to need a set of `experts_in_set` experts inside one given node.
double hit(const Shape& s, double experts_in_set, int top_k) {
  const double pool = double(s.experts) / s.nodes * s.chosen_nodes;  // the experts of its chosen nodes
  return double(s.chosen_nodes) / s.nodes * (1 - all_miss(pool, experts_in_set, std::min(top_k, int(pool))));
}

}  // namespace

double deepep_nvlink_share(const Cluster& cluster, int gpu, const DeepEpKernel& kernel) {
  const double nvlink = nvlink_egress_Bps(cluster, gpu);
  if (nvlink <= 0) return 1;
  return std::min(1.0, kernel.channels() * kernel.sm_nvlink_Bps / nvlink);
}

FlowGraph lower_deepep(const Router& router, const std::vector<int>& gpus, int per_node,
                       const std::vector<std::vector<double>>& network_bytes,
                       const std::vector<std::vector<double>>& nvlink_bytes, const DeepEpKernel& kernel,
                       AllToAllFlows flows) {
  assert(kernel.sms >= 2 && kernel.sm_nvlink_Bps > 0 && "a kernel needs SMs that send");
  const Cluster& c = router.cluster();
  TwoLegCosts costs;
  costs.nvlink_wire_factor.reserve(gpus.size());
  for (int g : gpus) costs.nvlink_wire_factor.push_back(1 / deepep_nvlink_share(c, g, kernel));
  const int first = gpus.empty() ? 0 : gpus.front();
  const double nic = nic_Bps(c, first), nvlink = nvlink_egress_Bps(c, first) * deepep_nvlink_share(c, first, kernel);
  // The fill, the same both ways (dispatch: RDMA then NVLink; combine: NVLink then RDMA): the
  // second leg starts after every channel's first chunk of the first, and the first leg's last
  // chunks still cross the second. Each leg thus pays one chunk per channel of the other.
  const bool two_legs = static_cast<int>(gpus.size()) > per_node && nic > 0;
  if (two_legs && kernel.token_bytes > 0 && nvlink > 0) {
    costs.nvlink_extra_s = kernel.channels() * kernel.rdma_chunk_tokens * kernel.token_bytes / nic;
    costs.network_extra_s = kernel.channels() * kernel.nvl_chunk_tokens * kernel.token_bytes / nvlink;
  }
  return lower_node_limited_all_to_all(router, gpus, per_node, network_bytes, nvlink_bytes, ideal_protocol(), costs,
                                       flows);
}

double deepep_node_hit(int ranks, int per_node, const DeepEpRouting& routing) {
  const Shape s = shape_of(ranks, per_node, routing);
  return hit(s, double(s.experts) / s.nodes, routing.top_k);
}

double deepep_rank_hit(int ranks, int per_node, const DeepEpRouting& routing) {
  const Shape s = shape_of(ranks, per_node, routing);
  return hit(s, double(s.experts) / ranks, routing.top_k);
}

DeepEpCountedBytes deepep_counted_bytes(int ranks, int per_node, double send_bytes, const DeepEpRouting& routing) {
  const Shape s = shape_of(ranks, per_node, routing);
  DeepEpCountedBytes out;
  out.rdma_bytes = s.nodes * deepep_node_hit(ranks, per_node, routing) * send_bytes;
  out.nvl_bytes = ranks * deepep_rank_hit(ranks, per_node, routing) * send_bytes;
  return out;
}

namespace {

/// `collective --op all_to_all --algo deepep`: the request's size is each rank's tokens in bytes
/// (nccl-tests' send buffer, before any token is copied to several experts); its channels are
/// DeepEP's, two SMs each.
class DeepEp final : public Algorithm {
 public:
  std::string name() const override { return "deepep"; }
  std::string description() const override {
    return "DeepEP's normal dispatch: once per node over the rail NIC, then NVLink (its benchmark's routing; a channel "
           "is 2 SMs)";
  }
  std::vector<Op> ops() const override { return {Op::all_to_all}; }
  bool chosen_by_auto() const override { return false; }
  bool uses_nccl_protocols() const override { return false; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    const int n = static_cast<int>(req.ranks.size()), g = cluster.gpus_per_node();
    if (n < 2) return std::nullopt;  // nothing to send
    if (n > g && n % g != 0)
      return "deepep needs whole nodes: " + std::to_string(n) + " GPUs is not a multiple of " + std::to_string(g) +
             " per node";
    // Ranks fill whole nodes in order (or lie in one node), so that GPU i of one node and GPU i
    // of another share a rail.
    bool in_order = true;
    for (int i = 0; i < n; ++i) in_order = in_order && req.ranks[static_cast<std::size_t>(i)] == req.ranks[0] + i;
    const bool aligned = n > g ? req.ranks[0] % g == 0
                               : cluster.node_of_gpu(req.ranks.front()) == cluster.node_of_gpu(req.ranks.back());
    if (!in_order || !aligned) return "deepep needs the ranks to fill consecutive nodes";
    return std::nullopt;
  }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    const int n = static_cast<int>(req.ranks.size());
    if (n < 2) return {};
    const int per = std::min(router.cluster().gpus_per_node(), n), nodes = n / per;
    const DeepEpRouting routing;
    const double send = static_cast<double>(req.size_bytes);
    const double node_hit = deepep_node_hit(n, per, routing), rank_hit = deepep_rank_hit(n, per, routing);
    std::vector<std::vector<double>> network(n, std::vector<double>(nodes, 0)), nvlink(n, std::vector<double>(n, 0));
    for (int i = 0; i < n; ++i) {
      for (int m = 0; m < nodes; ++m)
        if (m != i / per) network[i][m] = send * node_hit;
      // GPU i forwards what its node's ranks need from its own tokens and from the lane-i GPU of
      // every other node: nodes sources in all.
      for (int j = (i / per) * per; j < (i / per + 1) * per; ++j)
        if (j != i) nvlink[i][j] = nodes * send * rank_hit;
    }
    DeepEpKernel kernel;
    kernel.sms = 2 * req.channels;  // a DeepEP channel runs on two SMs
    kernel.token_bytes = kDeepEpBenchmarkTokenBytes;
    return lower_deepep(router, req.ranks, per, network, nvlink, kernel);
  }
};

}  // namespace

const Algorithm& deepep_algorithm() {
  static const DeepEp a;
  return a;
}

}  // namespace clustersim
