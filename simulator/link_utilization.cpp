#include "simulator/link_utilization.hpp"

#include <algorithm>
#include <cstdio>

#include "collectives/spray.hpp"
#include "topologies/invariant.hpp"

namespace clustersim {

namespace {

struct Use {
  Seconds start_s, finish_s;
  double bytes;
};

struct Peak {
  double utilization = 0;
  LinkDir link = -1;
};

/// The flows on each directed link, in one array sliced per link (a vector per link would be one
/// allocation per loaded link, on fabrics of 100K links).
Peak peak(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish) {
  std::vector<std::size_t> first(2 * cluster.links.size() + 1, 0);
  for (const Flow& f : graph.flows)
    for (LinkDir d : f.links) ++first[static_cast<std::size_t>(d) + 1];
  for (std::size_t i = 1; i < first.size(); ++i) first[i] += first[i - 1];
  std::vector<Use> uses(first.back());
  std::vector<std::size_t> next(first.begin(), first.end() - 1);
  for (std::size_t id = 0; id < graph.flows.size(); ++id) {
    const Flow& f = graph.flows[id];
    if (f.links.empty()) continue;
    Seconds start = 0;
    for (FlowId a : f.after) start = std::max(start, finish[static_cast<std::size_t>(a)]);
    for (LinkDir d : f.links)  // a link listed twice carries the bytes twice
      uses[next[static_cast<std::size_t>(d)]++] = {start, finish[id], static_cast<double>(f.size_bytes) * f.copies};
  }
  Peak out;
  for (std::size_t d = 0; d + 1 < first.size(); ++d) {
    if (first[d] == first[d + 1]) continue;
    const auto begin = uses.begin() + static_cast<std::ptrdiff_t>(first[d]);
    const auto end = uses.begin() + static_cast<std::ptrdiff_t>(first[d + 1]);
    const double bandwidth = cluster.effective_bandwidth_Bps(link_of(static_cast<LinkDir>(d)));
    auto consider = [&](double bytes, Seconds window_s) {
      const double u = window_s > 0 ? bytes / (bandwidth * window_s) : (bytes > 0 ? 1e300 : 0);
      if (u > out.utilization) out = {u, static_cast<LinkDir>(d)};
    };
    // Windows from a flow's start to the last finish among flows starting no earlier.
    std::sort(begin, end, [](const Use& x, const Use& y) { return x.start_s < y.start_s; });
    double bytes = 0;
    Seconds last = 0;
    for (auto it = end; it != begin;) {
      --it;
      bytes += it->bytes;
      last = std::max(last, it->finish_s);
      consider(bytes, last - it->start_s);
    }
    // Windows to a flow's finish from the first start among flows finishing no later.
    std::sort(begin, end, [](const Use& x, const Use& y) { return x.finish_s < y.finish_s; });
    bytes = 0;
    Seconds earliest = begin->start_s;
    for (auto it = begin; it != end; ++it) {
      bytes += it->bytes;
      earliest = std::min(earliest, it->start_s);
      consider(bytes, it->finish_s - earliest);
    }
  }
  return out;
}

/// The peak over what the engine ran: under spraying, the sub-flows (collectives/spray.hpp), each
/// given its original's window, which holds its own (it starts with it and ends by its join), so
/// no utilization is overstated.
Peak peak_as_run(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish) {
  if (cluster.spec.fabric.routing != Routing::spray) return peak(cluster, graph, finish);
  const Router router(cluster);
  const FlowGraph run = spray_flows(router, graph);
  std::vector<Seconds> at(run.flows.size(), 0);
  std::copy(finish.begin(), finish.end(), at.begin());
  for (std::size_t id = 0; id < graph.flows.size(); ++id)
    if (run.flows[id].links.empty() && !graph.flows[id].links.empty())  // a join in a sprayed flow's place
      for (FlowId sub : run.flows[id].after) at[static_cast<std::size_t>(sub)] = finish[id];
  return peak(cluster, run, at);
}

}  // namespace

double peak_link_utilization(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish_s) {
  return peak_as_run(cluster, graph, finish_s).utilization;
}

void check_link_utilization(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish_s,
                            const std::string& run) {
  const Peak p = peak_as_run(cluster, graph, finish_s);
  if (p.utilization <= 1 + kUtilizationSlack) return;
  const Link& l = cluster.links[static_cast<std::size_t>(link_of(p.link))];
  const bool fwd = p.link == forward(link_of(p.link));
  char detail[96];
  std::snprintf(detail, sizeof detail, " carries %.9g of its bandwidth", p.utilization);
  invariant_broken("link utilization never above 1",
                   run + ": link " + cluster.graph[static_cast<std::size_t>(fwd ? l.a : l.b)].name + " -> " +
                       cluster.graph[static_cast<std::size_t>(fwd ? l.b : l.a)].name + detail);
}

}  // namespace clustersim
