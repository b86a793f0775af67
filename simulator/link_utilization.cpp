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

/// The flows on each directed link, in one array sorted by link. Not an array indexed by link: a
/// collective timed alone on a 100K-GPU cluster touches a few hundred of its millions of links, and
/// sizing and zeroing one per collective was two fifths of a whole-cluster run on a shrunk job.
Peak peak(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish) {
  std::vector<std::pair<LinkDir, Use>> uses;
  for (std::size_t id = 0; id < graph.flows.size(); ++id) {
    const Flow& f = graph.flows[id];
    if (f.links.empty()) continue;
    Seconds start = 0;
    for (FlowId a : f.after) start = std::max(start, finish[static_cast<std::size_t>(a)]);
    for (LinkDir d : f.links)  // a link listed twice carries the bytes twice
      uses.push_back({d, {start, finish[id], static_cast<double>(f.size_bytes) * f.copies}});
  }
  std::stable_sort(uses.begin(), uses.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  Peak out;
  for (std::size_t from = 0; from < uses.size();) {
    const LinkDir d = uses[from].first;
    std::size_t to = from;
    while (to < uses.size() && uses[to].first == d) ++to;
    const auto begin = uses.begin() + static_cast<std::ptrdiff_t>(from), end = uses.begin() + static_cast<std::ptrdiff_t>(to);
    from = to;
    const double bandwidth = cluster.effective_bandwidth_Bps(link_of(d));
    auto consider = [&](double bytes, Seconds window_s) {
      const double u = window_s > 0 ? bytes / (bandwidth * window_s) : (bytes > 0 ? 1e300 : 0);
      if (u > out.utilization) out = {u, d};
    };
    // Windows from a flow's start to the last finish among flows starting no earlier.
    std::sort(begin, end, [](const auto& x, const auto& y) { return x.second.start_s < y.second.start_s; });
    double bytes = 0;
    Seconds last = 0;
    for (auto it = end; it != begin;) {
      --it;
      bytes += it->second.bytes;
      last = std::max(last, it->second.finish_s);
      consider(bytes, last - it->second.start_s);
    }
    // Windows to a flow's finish from the first start among flows finishing no later.
    std::sort(begin, end, [](const auto& x, const auto& y) { return x.second.finish_s < y.second.finish_s; });
    bytes = 0;
    Seconds earliest = begin->second.start_s;
    for (auto it = begin; it != end; ++it) {
      bytes += it->second.bytes;
      earliest = std::min(earliest, it->second.start_s);
      consider(bytes, it->second.finish_s - earliest);
    }
  }
  return out;
}

/// The peak over what the engine ran: where routing splits flows, each flow over all of its ways
/// (collectives/spray.hpp), which it crosses at one pace, so no utilization is overstated.
Peak peak_as_run(const Cluster& cluster, const FlowGraph& graph, const std::vector<Seconds>& finish) {
  if (!splits_flows(cluster.spec.fabric)) return peak(cluster, graph, finish);
  const Router router(cluster);
  return peak(cluster, split_flows(router, graph), finish);
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
