// Point-to-point collectives: all-to-all as every rank sending its share straight to every other,
// and send/recv as nccl-tests' sendrecv does it (rank i sends to i+1). "direct" leaves a node through
// the sender's own NIC; "pxn" (NCCL >= 2.12) first crosses NVLink to the GPU whose NIC is on the
// destination's rail and leaves through that NIC, so traffic never changes rails in the fabric.
#include "collectives/pipeline.hpp"
#include "collectives/point_to_point.hpp"

namespace clustersim {
namespace {

class Direct final : public Algorithm {
 public:
  explicit Direct(bool pxn) : pxn_(pxn) {}
  std::string name() const override { return pxn_ ? "pxn" : "direct"; }
  std::string description() const override {
    return pxn_ ? "point-to-point via the local GPU on the destination's rail (PXN), rail-optimized fabrics"
                : "point-to-point straight from each sender's NIC";
  }
  std::vector<Op> ops() const override { return {Op::all_to_all, Op::send_recv}; }

  std::optional<std::string> not_applicable(const Cluster& cluster, const CollectiveRequest& req) const override {
    if (auto why = Algorithm::not_applicable(cluster, req)) return why;
    if (pxn_ && !pxn_applies(cluster))
      return "pxn needs a rail-optimized fabric; " + cluster.spec.fabric.type + " has no rails";
    return std::nullopt;
  }

  FlowGraph lower_flows(const Router& router, const CollectiveRequest& req) const override {
    FlowGraph graph;
    const int n = static_cast<int>(req.ranks.size());
    if (n < 2) return graph;
    // nccl-tests' all-to-all size is each rank's send buffer; every peer gets 1/n of it. Its n^2
    // transfers are summed per link: the same time, and it scales to thousands of GPUs.
    if (req.op == Op::all_to_all)
      return lower_uniform_all_to_all(router, req.ranks, static_cast<double>(req.size_bytes) / n, req.protocol, pxn_,
                                      req.flows);
    const double per_channel = static_cast<double>(req.size_bytes) / req.channels;
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < req.channels; ++c)
        graph.add(pair_flow(router, req, req.ranks[i], req.ranks[(i + 1) % n], c, per_channel));
    return graph;
  }

 private:
  Flow pair_flow(const Router& router, const CollectiveRequest& req, int src, int dst, int channel, double bytes) const {
    return point_to_point_flow(router, src, dst, bytes, req.protocol, pxn_, flow_hash(src, dst, channel));
  }
  bool pxn_;
};

}  // namespace

const Algorithm& direct_algorithm() {
  static Direct instance(false);
  return instance;
}

const Algorithm& pxn_algorithm() {
  static Direct instance(true);
  return instance;
}

}  // namespace clustersim
