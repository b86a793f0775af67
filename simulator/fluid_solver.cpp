#include "simulator/fluid_solver.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "simulator/event_queue.hpp"
#include "simulator/fluid_routes.hpp"
#include "topologies/invariant.hpp"

namespace clustersim {

namespace {

/// A flow that is moving bytes: its links (each once, with how many times the route lists it),
/// and where it sits in each link's list.
struct Moving {
  FlowId flow = -1;
  double weight = 1;  // 1 / sharing penalty
  double rate_Bps = 0;
  double remaining_bytes = 0;  // at `since`
  Seconds since = 0;
  std::span<const FluidRoutes::Listed> links;  // its route's, merged (FluidRoutes::merged)
  std::vector<std::size_t> slot;  // slot[k]: its place in on_link[links[k].first]
  LinkDir bottleneck = -1;  // the full link its rate is set by
  // Scratch of one solve.
  double new_rate_Bps = 0;
  LinkDir new_bottleneck = -1;
  bool fixed = false;
  std::uint64_t region = 0;
};

struct OnLink {
  int moving;    // index into movers
  int position;  // which of that mover's links this is
};

}  // namespace

/// Per-link state, kept between runs: a run touches only the links its flows cross, so sizing and
/// zeroing arrays over the whole cluster at every run (hundreds of small runs time a plan's
/// collectives alone on a 16K-GPU cluster) would cost more than solving them. A run leaves every
/// list empty and every load and count at 0; one that ended early (an exception) is reset whole.
struct FluidSolver::Tables {
  /// What the solver reads and writes of one link direction, together: a solve visits a few
  /// fields of every link its flows cross, and one cache line per link beats one per field.
  struct Link {
    std::uint64_t seen = 0;  // the mark of the last pass that visited it
    double cap = 0;          // bytes/s
    double left = 0;         // of a solve: what the unfixed flows may still take
    double usage = 0;        // of a solve: the unfixed flows' weights, times their listings
    double load = 0;         // bytes/s the link carries now
    double region_load = 0;  // of which the region's flows
    int unfixed = 0;
    int bottleneck_of = 0;       // flows whose bottleneck the link is
    int region_bottlenecks = 0;  // of which in the region (their old bottleneck)
    LinkDir rep = 0;             // the narrowest of the links carrying the same flows
  };
  std::vector<Link> link;
  std::vector<std::vector<OnLink>> on_link;
  std::vector<std::uint64_t> sum_a, sum_b;
  std::vector<std::size_t> sum_count;
  std::uint64_t mark = 1;
  bool clean = false;

  void reset() {
    const std::size_t n = link.size();
    for (Link& l : link) l = Link{0, l.cap, 0, 0, 0, 0, 0, 0, 0, 0};
    on_link.assign(n, {});
    sum_a.assign(n, 0);
    sum_b.assign(n, 0);
    sum_count.assign(n, 0);
    clean = true;
  }
};

namespace {

class Run {
 public:
  Run(FluidSolver::Tables& t, const FlowGraph& graph, long& solves, long& rated)
      : t_(t), graph_(graph), routes_(graph), solves_(solves), rated_(rated), on_link_(t.on_link), link_(t.link), mark_(t.mark) {
    if (!t.clean) t.reset();
    t.clean = false;  // until this run ends whole
    dirty_mark_ = ++mark_;
    const std::size_t n = graph.flows.size();
    finish_.assign(n, -1.0);
    waiting_.assign(n, 0);
    std::vector<int> count(n + 1, 0);
    for (const Flow& f : graph.flows)
      for (FlowId before : f.after) ++count[static_cast<std::size_t>(before) + 1];
    for (std::size_t i = 0; i < n; ++i) count[i + 1] += count[i];
    succ_begin_ = count;
    succ_.resize(static_cast<std::size_t>(count[n]));
    for (FlowId id = 0; id < static_cast<FlowId>(n); ++id)
      for (FlowId before : graph.flows[static_cast<std::size_t>(id)].after) {
        succ_[static_cast<std::size_t>(count[static_cast<std::size_t>(before)]++)] = id;
        ++waiting_[static_cast<std::size_t>(id)];
      }
    merge_identical_links();
    routes_.set_merged([&](LinkDir l) { return link_[static_cast<std::size_t>(l)].rep; });
  }

  std::vector<Seconds> go() {
    for (FlowId id = static_cast<FlowId>(finish_.size()) - 1; id >= 0; --id)
      if (waiting_[static_cast<std::size_t>(id)] == 0) pending_.push_back(id);
    drain();
    settle();
    while (!events_.empty()) {
      now_ = events_.top().at;
      // Ends within rounding of one another are one instant: one solve for all of them.
      const Seconds until = now_ + 1e-12 * std::max(1.0, now_);
      while (!events_.empty() && events_.top().at <= until) {
        handle(events_.pop());
        drain();
      }
      settle();
    }
    t_.clean = true;
    return std::move(finish_);
  }

 private:
  /// Links that carry exactly the same flows, as often, over the whole run load alike at every
  /// instant, so only the narrowest of them can bind: each flow keeps that one (an exact cut of the
  /// solver's work; a chain GPU -> PCIe -> NIC -> leaf port often collapses to one link). Sets are
  /// compared by two independent 64-bit hashes of (flow, times listed) and their count. The hashes
  /// are sums, so each route adds its flows' keys once per count it lists a link with, rather than
  /// each flow once per link: the same sums, without visiting every flow's route.
  void merge_identical_links() {
    static constexpr std::uint64_t kMaxCount = (1 << 24) - 1;
    auto clamped = [](double count) { return std::min<std::uint64_t>(static_cast<std::uint64_t>(count), kMaxCount); };
    std::vector<std::size_t> count_begin{0};  // [route]: where its distinct counts start in counts
    std::vector<std::uint64_t> counts;
    auto count_slot = [&](std::size_t r, double count) {
      const auto from = counts.begin() + static_cast<std::ptrdiff_t>(count_begin[r]);
      return static_cast<std::size_t>(std::find(from, counts.end(), clamped(count)) - counts.begin());
    };
    for (std::size_t r = 0; r < routes_.size(); ++r) {
      for (const auto& [l, count] : routes_.distinct(static_cast<int>(r)))
        if (count_slot(r, count) == counts.size()) counts.push_back(clamped(count));
      count_begin.push_back(counts.size());
    }
    std::vector<std::uint64_t> key_a(counts.size(), 0), key_b(counts.size(), 0);  // [count slot]: its route's flows' keys
    for (std::size_t id = 0; id < graph_.flows.size(); ++id) {
      const int r = routes_.route_of(static_cast<FlowId>(id));
      if (r < 0) continue;
      for (std::size_t k = count_begin[static_cast<std::size_t>(r)]; k < count_begin[static_cast<std::size_t>(r) + 1]; ++k) {
        const std::uint64_t key = (static_cast<std::uint64_t>(id) << 24) | counts[k];
        key_a[k] += FluidRoutes::mix(key);
        key_b[k] += FluidRoutes::mix(key ^ 0x9e3779b97f4a7c15ULL);
      }
    }
    std::vector<LinkDir> touched;
    for (std::size_t r = 0; r < routes_.size(); ++r)
      for (const auto& [l, count] : routes_.distinct(static_cast<int>(r))) {
        const std::size_t k = count_slot(r, count), i = static_cast<std::size_t>(l);
        if (t_.sum_count[i] == 0) touched.push_back(l);
        t_.sum_count[i] += static_cast<std::size_t>(routes_.flows(static_cast<int>(r)));
        t_.sum_a[i] += key_a[k];
        t_.sum_b[i] += key_b[k];
      }
    std::sort(touched.begin(), touched.end());  // the narrowest, the lowest-numbered on a tie
    std::map<std::tuple<std::uint64_t, std::uint64_t, std::size_t>, LinkDir> first;
    auto key_of = [&](LinkDir l) {
      const std::size_t i = static_cast<std::size_t>(l);
      return std::make_tuple(t_.sum_a[i], t_.sum_b[i], t_.sum_count[i]);
    };
    for (LinkDir l : touched) {
      auto [it, fresh] = first.emplace(key_of(l), l);
      if (!fresh && link_[static_cast<std::size_t>(l)].cap < link_[static_cast<std::size_t>(it->second)].cap) it->second = l;
    }
    for (LinkDir l : touched) link_[static_cast<std::size_t>(l)].rep = first.at(key_of(l));
    for (LinkDir l : touched) {
      const std::size_t i = static_cast<std::size_t>(l);
      t_.sum_a[i] = t_.sum_b[i] = 0;
      t_.sum_count[i] = 0;
    }
  }

  /// Starts the flows whose predecessors have all finished, and those that become ready through
  /// them (a chain of empty steps ends at once): a work list, not recursion, however long the chain.
  void drain() {
    while (!pending_.empty()) {
      const FlowId id = pending_.back();
      pending_.pop_back();
      const Flow& f = graph_.flows[static_cast<std::size_t>(id)];
      if (f.latency_s > 0)
        events_.push(now_ + f.latency_s, id);  // its latency paid, it starts moving bytes
      else
        start_bytes(id);
    }
  }

  void start_bytes(FlowId id) {
    const Flow& f = graph_.flows[static_cast<std::size_t>(id)];
    const int route = routes_.route_of(id);
    if (route < 0) return end(id);  // no links or no bytes
    int m;
    if (!free_.empty()) {
      m = free_.back();
      free_.pop_back();
    } else {
      m = static_cast<int>(movers_.size());
      movers_.emplace_back();
    }
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    mv.flow = id;
    mv.weight = f.copies / (f.latency_s > 0 ? f.latency_s : 1.0);
    mv.rate_Bps = 0;
    mv.remaining_bytes = static_cast<double>(f.size_bytes) * f.copies;
    mv.since = now_;
    mv.links = routes_.merged(route);
    mv.slot.resize(mv.links.size());
    for (std::size_t k = 0; k < mv.links.size(); ++k) {
      auto& list = on_link_[static_cast<std::size_t>(mv.links[k].first)];
      mv.slot[k] = list.size();
      list.push_back({m, static_cast<int>(k)});
      touch(mv.links[k].first);
    }
    mv.bottleneck = -1;
    started_.push_back(m);
  }

  void stop_bytes(int m) {
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    if (mv.bottleneck >= 0) --link_[static_cast<std::size_t>(mv.bottleneck)].bottleneck_of;
    for (std::size_t k = 0; k < mv.links.size(); ++k) {
      const LinkDir l = mv.links[k].first;
      auto& list = on_link_[static_cast<std::size_t>(l)];
      // An emptied link's load is exactly 0, whatever rounding the sums carried.
      link_[static_cast<std::size_t>(l)].load = list.size() == 1 ? 0.0 : link_[static_cast<std::size_t>(l)].load - mv.links[k].second * mv.rate_Bps;
      const std::size_t at = mv.slot[k];
      list[at] = list.back();
      list.pop_back();
      if (at < list.size()) movers_[static_cast<std::size_t>(list[at].moving)].slot[static_cast<std::size_t>(list[at].position)] = at;
      touch(l);
    }
    mv.flow = -1;
    free_.push_back(m);
  }

  void end(FlowId id) {
    finish_[static_cast<std::size_t>(id)] = now_;
    for (int k = succ_begin_[static_cast<std::size_t>(id)]; k < succ_begin_[static_cast<std::size_t>(id) + 1]; ++k) {
      const FlowId next = succ_[static_cast<std::size_t>(k)];
      if (--waiting_[static_cast<std::size_t>(next)] == 0) pending_.push_back(next);
    }
  }

  /// A flow's latency is paid (an event tied to no mover), or a mover has sent its bytes.
  void handle(const EventQueue::Event& e) {
    if (e.slot < 0) return start_bytes(e.flow);
    stop_bytes(e.slot);
    end(e.flow);
  }

  void touch(LinkDir l) {
    if (link_[static_cast<std::size_t>(l)].seen == dirty_mark_) return;
    link_[static_cast<std::size_t>(l)].seen = dirty_mark_;
    dirty_.push_back(l);
  }

  /// Re-solves the rates around what changed and reschedules the ends of the flows whose rate
  /// changed. Max-min holds exactly when every flow has a bottleneck: a full link on which no flow
  /// has a higher level (rate / weight). The region starts as the flows that started and those
  /// whose bottleneck lost or gained a flow; it is solved with every other flow held at its rate,
  /// then any flow the new rates leave without a bottleneck (or above a region flow on the region
  /// flow's bottleneck) joins it, until none does. A flow elsewhere keeps its rate and its
  /// scheduled end: most changes stay within a few flows, where re-solving the whole coupled
  /// component (everything a long ring touches) would cost thousands.
  void settle() {
    if (dirty_.empty()) return;
    const std::uint64_t region = ++mark_;
    region_.clear();
    // Seeds: the flows that started, and those whose bottleneck is a link where a flow started or
    // ended. Any other flow on those links has a full link elsewhere where it is on top, which
    // the change did not touch; the growth below pulls in whatever the new rates unsettle.
    for (int m : started_)
      if (movers_[static_cast<std::size_t>(m)].flow >= 0) join(m, region);
    started_.clear();
    // A link knows how many flows it is the bottleneck of: the scan of its flows (hundreds on a
    // shared uplink) ends once it has met them all, and is skipped where there are none.
    for (LinkDir l : dirty_) {
      int left = link_[static_cast<std::size_t>(l)].bottleneck_of;
      const auto& on = on_link_[static_cast<std::size_t>(l)];
      for (auto o = on.begin(); left > 0 && o != on.end(); ++o)
        if (movers_[static_cast<std::size_t>(o->moving)].bottleneck == l) {
          join(o->moving, region);
          --left;
        }
    }
    dirty_.clear();
    dirty_mark_ = ++mark_;  // the next touched set starts clean
    if (region_.empty()) return;
    for (;;) {
      solve_region(region);
      ++solves_;
      const std::size_t before = region_.size();
      pull_unsettled(region);
      if (region_.size() == before) break;
    }
    const std::uint64_t risen = ++mark_;
    risen_links_.clear();
    for (int m : region_) {
      Moving& mv = movers_[static_cast<std::size_t>(m)];
      if (mv.bottleneck != mv.new_bottleneck) {
        if (mv.bottleneck >= 0) --link_[static_cast<std::size_t>(mv.bottleneck)].bottleneck_of;
        ++link_[static_cast<std::size_t>(mv.new_bottleneck)].bottleneck_of;
        mv.bottleneck = mv.new_bottleneck;
      }
      if (mv.new_rate_Bps == mv.rate_Bps) continue;
      const bool rises = mv.new_rate_Bps > mv.rate_Bps;
      for (const auto& [l, coefficient] : mv.links) {
        FluidSolver::Tables::Link& link = link_[static_cast<std::size_t>(l)];
        link.load += coefficient * (mv.new_rate_Bps - mv.rate_Bps);
        if (rises && link.seen != risen) {
          link.seen = risen;
          risen_links_.push_back(l);
        }
      }
      mv.remaining_bytes = std::max(0.0, mv.remaining_bytes - mv.rate_Bps * (now_ - mv.since));
      mv.since = now_;
      mv.rate_Bps = mv.new_rate_Bps;
      ++rated_;
      events_.set(m, now_ + mv.remaining_bytes / mv.rate_Bps, mv.flow);
    }
    // No link above its bandwidth, checked where loads are set, once all of the region's are
    // (beyond the rounding of the sums). Only where a flow rose: adding a negative amount never
    // raises a double, so a link whose flows all fell or held is still within its last check (a
    // long ring's links would otherwise be checked at every one of its joins).
    for (LinkDir l : risen_links_) {
      const std::size_t i = static_cast<std::size_t>(l);
      if (link_[i].load > link_[i].cap * (1 + 1e-9))
        invariant_broken("link utilization at most 1", "link direction " + std::to_string(l) + " carries " +
                                                           std::to_string(link_[i].load) + " B/s of " + std::to_string(link_[i].cap));
    }
  }

  void join(int m, std::uint64_t region) {
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    if (mv.region == region) return;
    mv.region = region;
    region_.push_back(m);
  }

  static double level(const Moving& mv, bool in_region) { return (in_region ? mv.new_rate_Bps : mv.rate_Bps) / mv.weight; }

  /// Weighted progressive filling over the region, on what the flows outside it leave of each
  /// link: the link that fills first at the common level fixes its flows at level x weight.
  /// Fixing a flow at a level no higher than a link's own (left / usage) can only raise that
  /// link's level, so a key in the heap is a lower bound: a popped key that has risen goes back.
  void solve_region(std::uint64_t region) {
    using Key = std::pair<double, LinkDir>;
    const std::uint64_t here = ++mark_;
    region_links_.clear();
    for (int m : region_) {
      Moving& mv = movers_[static_cast<std::size_t>(m)];
      mv.fixed = false;
      for (const auto& [l, coefficient] : mv.links) {
        const std::size_t i = static_cast<std::size_t>(l);
        if (link_[i].seen != here) {
          link_[i].seen = here;
          region_links_.push_back(l);
          link_[i].usage = 0;
          link_[i].unfixed = 0;
          link_[i].region_load = 0;
          link_[i].region_bottlenecks = 0;
        }
        link_[i].usage += coefficient * mv.weight;
        link_[i].region_load += coefficient * mv.rate_Bps;
        ++link_[i].unfixed;
      }
      if (mv.bottleneck >= 0 && link_[static_cast<std::size_t>(mv.bottleneck)].seen == here)
        ++link_[static_cast<std::size_t>(mv.bottleneck)].region_bottlenecks;
    }
    heap_.clear();
    for (LinkDir l : region_links_) {
      const std::size_t i = static_cast<std::size_t>(l);
      const double outside = link_[i].load - link_[i].region_load;
      link_[i].left = std::max(0.0, link_[i].cap - outside);
      heap_.push_back({link_[i].left / link_[i].usage, l});
    }
    std::make_heap(heap_.begin(), heap_.end(), std::greater<Key>());
    double fill = 0;
    // Once every region flow is fixed the links left in the heap can fix nothing: stop there
    // rather than pop them all (most regions are a few flows over many links).
    std::size_t unfixed = region_.size();
    while (!heap_.empty() && unfixed > 0) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<Key>());
      const auto [key, l] = heap_.back();
      heap_.pop_back();
      const std::size_t i = static_cast<std::size_t>(l);
      if (link_[i].unfixed == 0) continue;
      const double now_key = std::max(0.0, link_[i].left) / link_[i].usage;
      if (now_key > key * (1 + 1e-12) && !heap_.empty() && now_key > heap_.front().first) {
        heap_.push_back({now_key, l});
        std::push_heap(heap_.begin(), heap_.end(), std::greater<Key>());
        continue;
      }
      fill = std::max(fill, now_key);  // rounding cannot lower it
      for (const OnLink& o : on_link_[i]) {
        Moving& mv = movers_[static_cast<std::size_t>(o.moving)];
        if (mv.region != region || mv.fixed) continue;
        mv.fixed = true;
        --unfixed;
        mv.new_rate_Bps = fill * mv.weight;
        mv.new_bottleneck = l;
        for (const auto& [l2, coefficient] : mv.links) {
          const std::size_t j = static_cast<std::size_t>(l2);
          link_[j].left -= coefficient * mv.new_rate_Bps;
          link_[j].usage -= coefficient * mv.weight;
          --link_[j].unfixed;
        }
      }
    }
  }

  /// Adds to the region every outside flow the region's new rates unsettle: one above a region
  /// flow on that flow's bottleneck (it must yield), and one whose bottleneck the region touched
  /// and left not full, or where a region flow now rises above it (it may take more, or less).
  void pull_unsettled(std::uint64_t region) {
    constexpr double kSlack = 1e-9;
    pulled_.clear();
    for (int m : region_) {
      const Moving& mv = movers_[static_cast<std::size_t>(m)];
      const double mine = level(mv, true) * (1 + kSlack);
      for (const OnLink& o : on_link_[static_cast<std::size_t>(mv.new_bottleneck)]) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        if (g.region != region && level(g, false) > mine) pulled_.push_back(o.moving);
      }
    }
    for (LinkDir l : region_links_) {
      const std::size_t i = static_cast<std::size_t>(l);
      if (link_[i].bottleneck_of == link_[i].region_bottlenecks) continue;  // no outside flow's bottleneck
      bool bottleneck_of_outside = false;
      double load = 0, top = 0;
      for (const OnLink& o : on_link_[i]) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        const bool in = g.region == region;
        load += g.links[static_cast<std::size_t>(o.position)].second * (in ? g.new_rate_Bps : g.rate_Bps);
        top = std::max(top, level(g, in));
        bottleneck_of_outside |= !in && g.bottleneck == l;
      }
      if (!bottleneck_of_outside) continue;
      const bool full = load >= link_[i].cap * (1 - kSlack);
      for (const OnLink& o : on_link_[i]) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        if (g.region != region && g.bottleneck == l && (!full || level(g, false) < top * (1 - kSlack)))
          pulled_.push_back(o.moving);
      }
    }
    for (int m : pulled_) join(m, region);
  }

  // Per link, kept between runs (FluidSolver::Tables).
  FluidSolver::Tables& t_;
  const FlowGraph& graph_;
  FluidRoutes routes_;
  long& solves_;
  long& rated_;
  std::vector<std::vector<OnLink>>& on_link_;
  std::vector<FluidSolver::Tables::Link>& link_;
  std::uint64_t& mark_;
  // Of this run.
  std::uint64_t dirty_mark_ = 0;
  Seconds now_ = 0;
  EventQueue events_;
  std::vector<Seconds> finish_;
  std::vector<int> waiting_, succ_begin_;
  std::vector<FlowId> succ_, pending_;
  std::vector<Moving> movers_;
  std::vector<int> free_;
  std::vector<LinkDir> dirty_, region_links_, risen_links_;
  std::vector<std::pair<double, LinkDir>> heap_;
  std::vector<int> region_, pulled_, started_;
};

}  // namespace

FluidSolver::FluidSolver(std::vector<double> capacity_Bps) : tables_(std::make_unique<Tables>()) {
  tables_->link.resize(capacity_Bps.size());
  for (std::size_t i = 0; i < capacity_Bps.size(); ++i) tables_->link[i].cap = capacity_Bps[i];
}

FluidSolver::~FluidSolver() = default;

std::vector<Seconds> FluidSolver::run(const FlowGraph& graph) {
  solves_ = rated_flows_ = 0;
  return Run(*tables_, graph, solves_, rated_flows_).go();
}

}  // namespace clustersim
