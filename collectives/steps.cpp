#include "collectives/steps.hpp"

#include "collectives/link_loads.hpp"
#include "collectives/pipeline.hpp"

namespace clustersim {

namespace {

/// One send's channel as a flow: its route, its bytes, its route's latency plus the step's.
Flow step_flow(const Router& router, const CollectiveRequest& req, const StepSend& s, std::size_t k,
               int channel, const StepLatency& latency) {
  const Cluster& c = router.cluster();
  const int src = req.ranks[static_cast<std::size_t>(s.src_rank)], dst = req.ranks[static_cast<std::size_t>(s.dst_rank)];
  const Route r = router.route(src, dst, flow_hash(src, dst, channel + 64 * static_cast<int>(k)));
  Flow f;
  f.src_gpu = src;
  f.dst_gpu = dst;
  f.links = r.links;
  f.size_bytes = wire_bytes(s.data_bytes / req.channels, req.protocol);
  const bool network = c.node_of_gpu(src) != c.node_of_gpu(dst);
  f.latency_s = r.latency_s + latency.per_step_s + (k == 0 ? latency.first_step_s : 0) +
                (latency.protocol_hop ? (network ? req.protocol.hop_latency_network_s : req.protocol.hop_latency_nvlink_s) : 0);
  return f;
}

FlowGraph per_link_steps(const Router& router, const CollectiveRequest& req, const std::vector<Step>& steps,
                         const StepLatency& latency) {
  FlowGraph graph;
  FlowId done = -1;  // the previous step's end
  for (std::size_t k = 0; k < steps.size(); ++k) {
    LinkLoads loads(router.cluster());
    for (int ch = 0; ch < req.channels; ++ch)
      for (const StepSend& s : steps[k]) {
        const Flow f = step_flow(router, req, s, k, ch, latency);
        loads.add(f.src_gpu, f.dst_gpu, f.links, f.size_bytes, f.latency_s);
      }
    Flow end = timer_flow(req.ranks.front(), 0);
    for (Flow& f : loads.flows().flows) {
      if (done >= 0) f.after.push_back(done);
      end.after.push_back(graph.add(std::move(f)));
    }
    if (done >= 0 && end.after.empty()) end.after.push_back(done);
    done = graph.add(std::move(end));
  }
  return graph;
}

}  // namespace

int ceil_log2(int n) {
  int l = 0;
  while ((1L << l) < n) ++l;
  return l;
}

FlowGraph lower_steps(const Router& router, const CollectiveRequest& req, const std::vector<Step>& steps,
                      const StepLatency& latency, AllToAllFlows flows) {
  if (flows == AllToAllFlows::per_link) return per_link_steps(router, req, steps, latency);
  FlowGraph graph;
  const std::size_t n = req.ranks.size();
  // involved[ch][rank]: the flows of the previous step that rank sent or received on channel ch.
  std::vector<std::vector<std::vector<FlowId>>> involved(static_cast<std::size_t>(req.channels),
                                                         std::vector<std::vector<FlowId>>(n));
  for (std::size_t k = 0; k < steps.size(); ++k) {
    for (int ch = 0; ch < req.channels; ++ch) {
      auto& before = involved[static_cast<std::size_t>(ch)];
      std::vector<std::vector<FlowId>> now(n);
      for (const StepSend& s : steps[k]) {
        Flow f = step_flow(router, req, s, k, ch, latency);
        f.after = before[static_cast<std::size_t>(s.src_rank)];
        const FlowId id = graph.add(std::move(f));
        now[static_cast<std::size_t>(s.src_rank)].push_back(id);
        now[static_cast<std::size_t>(s.dst_rank)].push_back(id);
      }
      before = std::move(now);
    }
  }
  return graph;
}

}  // namespace clustersim
