#pragma once
// The fluid solver's routes, interned: flows whose lists of links are equal share one entry. A
// whole-cluster graph lists the same routes many times (every microbatch's transfer between one
// GPU pair, every bucket's ring over the same hops), and copying, sorting and counting each flow's
// links once per flow and again at every start was a third of the solver's time. Where the
// fabric's routing splits flows (collectives/spray.hpp), a route is spread over its ways once, as
// it is interned, rather than in a copy of the graph with every flow's ways spelt out: a 16K-GPU
// job's ring channels over 16 queue pairs each would list 16 times their links. Private to
// fluid_solver.cpp.
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "collectives/flow.hpp"
#include "collectives/spray.hpp"

namespace clustersim {

class FluidRoutes {
 public:
  /// A link of a route and how many times the route lists it.
  using Listed = std::pair<LinkDir, double>;

  /// Interns the route of every flow that moves bytes (links and a size); others get none. With
  /// `spread`, each route goes the ways that router's fabric splits it (collectives/spray.hpp).
  /// A flow with a rate bound (Flow::max_rate_Bps) gets a route of its own that also lists a
  /// private link, numbered from `first_private` up, of the bound's capacity (private_caps()).
  FluidRoutes(const FlowGraph& graph, const Router* spread, LinkDir first_private) {
    const std::size_t n = graph.flows.size();
    route_of_.assign(n, -1);
    // Open addressing, sized by the routes rather than the flows (the 1T run's 4.27M flows take
    // far fewer routes, and a table over every flow was 64 MiB of pages to fault in).
    std::size_t slots = 1024;
    // The table holds interned routes k, each with its hash and its route (bounded flows' routes
    // are not interned, so k and the route number part once there is one).
    std::vector<int> table(slots, -1), route_at;
    std::vector<std::uint64_t> hash_of;
    std::vector<LinkDir> sorted, all;
    for (std::size_t id = 0; id < n; ++id) {
      const Flow& f = graph.flows[id];
      if (f.links.empty() || f.size_bytes == 0) continue;
      if (f.max_rate_Bps > 0) {  // not shared: the private link bounds this flow alone
        route_of_[id] = static_cast<int>(first_flow_.size());
        add_route(f, id, 1, spread, sorted, all);
        const int ways = ways_.back();
        distinct_.emplace_back(first_private + static_cast<LinkDir>(private_caps_.size()), 1.0);
        distinct_begin_.back() = distinct_.size();
        private_caps_.push_back(f.max_rate_Bps * f.copies / ways);  // the route's rate is one way's
        continue;
      }
      std::uint64_t h = mix(f.links.size());
      for (LinkDir l : f.links) h = mix(h ^ static_cast<std::uint32_t>(l));
      std::size_t at = h & (slots - 1);
      for (; table[at] >= 0; at = (at + 1) & (slots - 1)) {
        const std::size_t k = static_cast<std::size_t>(table[at]);
        const std::size_t r = static_cast<std::size_t>(route_at[k]);
        if (hash_of[k] == h && graph.flows[static_cast<std::size_t>(first_flow_[r])].links == f.links) break;
      }
      if (table[at] < 0) {  // a new route: its distinct links, sorted, with their counts
        if (2 * (hash_of.size() + 1) > slots) {  // at most half full
          slots *= 2;
          table.assign(slots, -1);
          for (std::size_t k = 0; k < hash_of.size(); ++k) {
            std::size_t to = hash_of[k] & (slots - 1);
            while (table[to] >= 0) to = (to + 1) & (slots - 1);
            table[to] = static_cast<int>(k);
          }
          for (at = h & (slots - 1); table[at] >= 0;) at = (at + 1) & (slots - 1);
        }
        table[at] = static_cast<int>(hash_of.size());
        hash_of.push_back(h);
        route_at.push_back(static_cast<int>(first_flow_.size()));
        add_route(f, id, 0, spread, sorted, all);
      }
      const int route = route_at[static_cast<std::size_t>(table[at])];
      route_of_[id] = route;
      ++flows_[static_cast<std::size_t>(route)];
    }
  }

  std::size_t size() const { return first_flow_.size(); }
  /// The flow's route, or -1 if it moves no bytes.
  int route_of(FlowId id) const { return route_of_[static_cast<std::size_t>(id)]; }
  /// How many ways the route goes, each with its share of a flow's bytes (1: it does not split).
  int ways(int route) const { return ways_[static_cast<std::size_t>(route)]; }
  /// How many flows take the route.
  int flows(int route) const { return flows_[static_cast<std::size_t>(route)]; }
  /// The route's links, each once with its count, in link order.
  std::span<const Listed> distinct(int route) const { return span_of(distinct_, distinct_begin_, route); }

  /// The capacities (bytes/s) of the private links, from `first_private` up.
  const std::vector<double>& private_caps() const { return private_caps_; }

  static std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

 private:
  /// A new route: flow `id`'s distinct links, sorted, with their counts, taken by `flows` flows so far.
  void add_route(const Flow& f, std::size_t id, int flows, const Router* spread, std::vector<LinkDir>& sorted,
                 std::vector<LinkDir>& all) {
    first_flow_.push_back(static_cast<FlowId>(id));
    flows_.push_back(flows);
    const int ways = spread ? spread_links(*spread, f.links, all) : 1;
    ways_.push_back(ways);
    if (ways > 1)
      sorted.swap(all);
    else
      sorted.assign(f.links.begin(), f.links.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size();) {
      std::size_t j = i;
      while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
      distinct_.emplace_back(sorted[i], static_cast<double>(j - i));
      i = j;
    }
    distinct_begin_.push_back(distinct_.size());
  }

  static std::span<const Listed> span_of(const std::vector<Listed>& all, const std::vector<std::size_t>& begin, int route) {
    const std::size_t r = static_cast<std::size_t>(route);
    return {all.data() + begin[r], begin[r + 1] - begin[r]};
  }

  std::vector<int> route_of_;         // [flow]
  std::vector<FlowId> first_flow_;    // [route]: the flow it was first seen on
  std::vector<int> flows_;            // [route]: flows taking it
  std::vector<int> ways_;             // [route]: the ways it goes
  std::vector<Listed> distinct_;
  std::vector<std::size_t> distinct_begin_{0};  // [route]: where its links start; one past the last
  std::vector<double> private_caps_;           // [private link - first_private]
};

}  // namespace clustersim
