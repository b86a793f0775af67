#include "collectives/steps.hpp"

#include <algorithm>

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

/// Per link: each step moves as one flow per channel over every send's route (a link that k sends
/// cross listed k times), as a ring's channel moves over its hops, and the next step starts once it
/// has ended everywhere. Every send of a step has the same size, so alone the step ends when its
/// most loaded link drains, as summing the step's sends per link gives; beside other traffic every
/// send moves at the step's slowest rate, as a ring's hops do. Why not a flow per loaded link: on
/// PAT's data-parallel groups inside an iteration those were hundreds of flows a step, each
/// re-rated whenever a pipeline transfer met it on a NIC (Llama 3 405B at dp 64: 68 s against 12 s
/// with rings); a step is now channels x ceil(sends / kMaxHopsPerFlow) flows.
FlowGraph lockstep_steps(const Router& router, const CollectiveRequest& req, const std::vector<Step>& steps,
                         const StepLatency& latency) {
  FlowGraph graph;
  FlowId done = -1;  // the previous step's end
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& step = steps[k];
    const FlowId first = static_cast<FlowId>(graph.flows.size());
    for (int ch = 0; ch < req.channels; ++ch)
      for (std::size_t from = 0; from < step.size(); from += kMaxHopsPerFlow) {
        Flow lock = step_flow(router, req, step[from], k, ch, latency);
        for (std::size_t i = from + 1; i < std::min(step.size(), from + kMaxHopsPerFlow); ++i) {
          const Flow f = step_flow(router, req, step[i], k, ch, latency);
          lock.links.insert(lock.links.end(), f.links.begin(), f.links.end());
          lock.latency_s = std::max(lock.latency_s, f.latency_s);
        }
        if (done >= 0) lock.after.push_back(done);
        graph.add(std::move(lock));
      }
    done = add_barrier(graph, req.ranks.front(), first);
  }
  return graph;
}

bool equal_sends(const std::vector<Step>& steps) {
  for (const Step& step : steps)
    for (const StepSend& s : step)
      if (s.data_bytes != step.front().data_bytes) return false;
  return true;
}

}  // namespace

int ceil_log2(int n) {
  int l = 0;
  while ((1L << l) < n) ++l;
  return l;
}

FlowGraph lower_steps(const Router& router, const CollectiveRequest& req, const std::vector<Step>& steps,
                      const StepLatency& latency, AllToAllFlows flows) {
  if (flows == AllToAllFlows::per_link && equal_sends(steps)) return lockstep_steps(router, req, steps, latency);
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
