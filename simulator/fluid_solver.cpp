#include "simulator/fluid_solver.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "simulator/event_queue.hpp"
#include "simulator/fluid_bundles.hpp"
#include "simulator/fluid_routes.hpp"
#include "topologies/invariant.hpp"

namespace clustersim {

using fluid::Bundle;
using fluid::Entry;
using fluid::Moving;
using fluid::OnBundle;
using fluid::SignatureTable;

/// Relative slack under which a bundle counts as full and two levels as tied: rates are sums and
/// quotients of capacities, so exact ties come out a few ulps apart.
constexpr double kSlack = 1e-9;

/// Per-link state, kept between runs: a run touches only the links its flows cross, so sizing and
/// zeroing arrays over the whole cluster at every run (hundreds of small runs time a plan's
/// collectives alone on a 16K-GPU cluster) would cost more than solving them. A run leaves every
/// link outside any bundle; one that ended early (an exception) is reset whole.
struct FluidSolver::Tables {
  struct Link {
    double cap = 0;   // bytes/s
    int bundle = -1;  // the bundle it is in while it carries a flow
    int at = 0;       // its place in that bundle's members
  };
  std::vector<Link> link;  // the cluster's link directions, then a run's private links (FluidRoutes)
  std::size_t cluster_links = 0;
  // Kept between runs only for their allocations (hundreds of small runs time a plan's collectives
  // alone): a run hands out movers and bundles in the order a fresh one would, so its results do
  // not depend on the runs before it.
  std::vector<Moving> movers;
  std::vector<Bundle> bundles;
  SignatureTable signatures;
  std::uint64_t mark = 1;  // marks only grow, so no mover or bundle carries one of this run's
  bool clean = true;
  bool equal_shares = false;

  void reset() {
    link.resize(cluster_links);
    for (Link& l : link) l.bundle = -1;
    signatures.clear();
    clean = true;
  }
};

namespace {

class Run {
 public:
  Run(FluidSolver::Tables& t, const FlowGraph& graph, const Router* spread, long& solves, long& rated)
      : t_(t), graph_(graph), routes_(graph, spread, static_cast<LinkDir>(t.cluster_links)), solves_(solves), rated_(rated), link_(t.link), movers_(t.movers), bundles_(t.bundles),
        signatures_(t.signatures), mark_(t.mark) {
    if (!t.clean) t.reset();
    t.clean = false;  // until this run ends whole
    for (double cap : routes_.private_caps()) link_.push_back({cap});
    for (int m = static_cast<int>(movers_.size()) - 1; m >= 0; --m) free_.push_back(m);
    for (int b = static_cast<int>(bundles_.size()) - 1; b >= 0; --b) free_bundles_.push_back(b);
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
    link_.resize(t_.cluster_links);  // the private links go with the run
    t_.clean = true;
    return std::move(finish_);
  }

 private:
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
    const int m = take(movers_, free_);
    {
      Moving& mv = movers_[static_cast<std::size_t>(m)];
      mv.flow = id;
      mv.weight = t_.equal_shares ? f.copies : f.copies / (f.latency_s > 0 ? f.latency_s : 1.0);
      mv.rate_Bps = 0;
      mv.remaining_bytes = static_cast<double>(way_bytes(f.size_bytes, routes_.ways(route))) * f.copies;
      mv.since = now_;
      mv.entries.clear();
      mv.bottleneck = -1;
    }
    // The route's links grouped by the bundle they are in and how often the route lists them: each
    // group becomes one bundle that carries the new flow too (the whole old bundle where the
    // group is all of it, else a new one split off it). Groups in order of first appearance.
    group_links(route);
    for (std::size_t g = 0; g < groups_used_; ++g) {
      const int from = groups_[g].from;
      const double count = groups_[g].count;
      const std::vector<LinkDir>& links = groups_[g].links;
      int to = from;
      if (from >= 0 && links.size() == bundles_[static_cast<std::size_t>(from)].members.size()) {
        forget_signature(from);
      } else {
        to = new_bundle();
        const double cap_before = from >= 0 ? bundles_[static_cast<std::size_t>(from)].cap : 0;
        for (LinkDir l : links) move_link(l, to);
        if (from >= 0) split_off(from, to, cap_before);
      }
      add_to_signature(to, id, count, +1);
      add_entry(m, to, count);
      remember_signature(to);
      touch(to);
    }
    started_.push_back(m);
  }

  /// Fills groups_[0, groups_used_) with the route's links by (bundle, listings), in order of first
  /// appearance: each bundle remembers its first group of this start, and links listed a different
  /// number of times (rare: a ring over one link twice) search the groups after it.
  void group_links(int route) {
    groups_used_ = 0;
    grouping_ = ++mark_;
    for (const auto& [l, count] : routes_.distinct(route)) {
      const int from = link_[static_cast<std::size_t>(l)].bundle;
      std::size_t g = groups_used_;
      if (from >= 0 && bundles_[static_cast<std::size_t>(from)].grouping == grouping_)
        g = bundles_[static_cast<std::size_t>(from)].group;
      else if (from < 0 && fresh_group_ < groups_used_)
        g = fresh_group_;
      while (g < groups_used_ && (groups_[g].from != from || groups_[g].count != count)) ++g;
      if (g == groups_used_) {
        if (groups_.size() == groups_used_) groups_.emplace_back();
        groups_[g].from = from;
        groups_[g].count = count;
        groups_[g].links.clear();
        ++groups_used_;
        if (from >= 0 && bundles_[static_cast<std::size_t>(from)].grouping != grouping_) {
          bundles_[static_cast<std::size_t>(from)].grouping = grouping_;
          bundles_[static_cast<std::size_t>(from)].group = g;
        } else if (from < 0 && fresh_group_ >= g) {
          fresh_group_ = g;
        }
      }
      groups_[g].links.push_back(l);
    }
    fresh_group_ = std::numeric_limits<std::size_t>::max();
  }

  /// `to`, just given some of `from`'s links, carries `from`'s flows as well.
  void split_off(int from, int to, double cap_before) {
    Bundle& source = bundles_[static_cast<std::size_t>(from)];
    Bundle& target = bundles_[static_cast<std::size_t>(to)];
    target.sig_a = source.sig_a;
    target.sig_b = source.sig_b;
    target.load = source.load;
    for (const OnBundle& o : source.on)
      add_entry(o.moving, to, movers_[static_cast<std::size_t>(o.moving)].entries[static_cast<std::size_t>(o.position)].coefficient);
    // Its narrowest link gone, what is left may carry more: the flows it bounds look again.
    if (source.cap != cap_before) touch(from);
  }

  void stop_bytes(int m) {
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    if (mv.bottleneck >= 0) --bundles_[static_cast<std::size_t>(mv.bottleneck)].bottleneck_of;
    while (!mv.entries.empty()) {
      const std::size_t k = mv.entries.size() - 1;
      const Entry e = mv.entries[k];
      Bundle& b = bundles_[static_cast<std::size_t>(e.bundle)];
      // An emptied link's load is exactly 0, whatever rounding the sums carried.
      b.load = b.on.size() == 1 ? 0.0 : b.load - e.coefficient * mv.rate_Bps;
      forget_signature(e.bundle);
      add_to_signature(e.bundle, mv.flow, e.coefficient, -1);
      remove_entry(m, k);
      if (b.on.empty()) {
        dissolve(e.bundle);
        continue;
      }
      // Its links now carry what another bundle's carry: one bundle again.
      const int same = signatures_.find(b.sig_a, b.sig_b);
      const int kept = same < 0 ? e.bundle : merge(e.bundle, same);
      remember_signature(kept);
      touch(kept);
    }
    mv.flow = -1;
    free_.push_back(m);
  }

  /// The last index freed, or a new one: the order a fresh run's vector would grow in.
  template <typename T>
  static int take(std::vector<T>& all, std::vector<int>& free) {
    if (free.empty()) {
      all.emplace_back();
      return static_cast<int>(all.size() - 1);
    }
    const int i = free.back();
    free.pop_back();
    return i;
  }

  int new_bundle() {
    const int b = take(bundles_, free_bundles_);
    Bundle& n = bundles_[static_cast<std::size_t>(b)];
    n.seen = n.grouping = 0;
    n.cap = n.load = 0;
    n.bottleneck_of = 0;
    n.sig_a = n.sig_b = 0;
    n.on.clear();
    n.members.clear();
    n.caps.clear();
    return b;
  }

  /// No flow left on its links: they leave it.
  void dissolve(int b) {
    Bundle& d = bundles_[static_cast<std::size_t>(b)];
    for (LinkDir l : d.members) link_[static_cast<std::size_t>(l)].bundle = -1;
    d.members.clear();
    d.caps.clear();
    free_bundles_.push_back(b);
  }

  /// Two bundles carrying the same flows become the larger; returns it.
  int merge(int a, int b) {
    const bool a_larger = bundles_[static_cast<std::size_t>(a)].members.size() >= bundles_[static_cast<std::size_t>(b)].members.size();
    const int kept = a_larger ? a : b, gone = a_larger ? b : a;
    forget_signature(gone);
    Bundle& g = bundles_[static_cast<std::size_t>(gone)];
    while (!g.members.empty()) move_link(g.members.back(), kept);
    bundles_[static_cast<std::size_t>(kept)].bottleneck_of += g.bottleneck_of;
    while (!g.on.empty()) {
      const OnBundle o = g.on.back();
      Moving& mv = movers_[static_cast<std::size_t>(o.moving)];
      if (mv.bottleneck == gone) mv.bottleneck = kept;
      remove_entry(o.moving, static_cast<std::size_t>(o.position));
    }
    free_bundles_.push_back(gone);
    return kept;
  }

  void move_link(LinkDir l, int to) {
    auto& link = link_[static_cast<std::size_t>(l)];
    if (link.bundle >= 0) {
      Bundle& from = bundles_[static_cast<std::size_t>(link.bundle)];
      const LinkDir last = from.members.back();
      from.members[static_cast<std::size_t>(link.at)] = last;
      link_[static_cast<std::size_t>(last)].at = link.at;
      from.members.pop_back();
      auto c = std::find_if(from.caps.begin(), from.caps.end(), [&](const auto& x) { return x.first == link.cap; });
      if (--c->second == 0) from.caps.erase(c);
      from.cap = from.caps.empty() ? 0 : from.caps.front().first;
    }
    Bundle& into = bundles_[static_cast<std::size_t>(to)];
    link.bundle = to;
    link.at = static_cast<int>(into.members.size());
    into.members.push_back(l);
    auto c = std::lower_bound(into.caps.begin(), into.caps.end(), std::make_pair(link.cap, 0));
    if (c != into.caps.end() && c->first == link.cap)
      ++c->second;
    else
      into.caps.insert(c, {link.cap, 1});
    into.cap = into.caps.front().first;
  }

  void add_entry(int m, int b, double coefficient) {
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
    mv.entries.push_back({b, coefficient, bundle.on.size()});
    bundle.on.push_back({m, static_cast<int>(mv.entries.size() - 1)});
  }

  void remove_entry(int m, std::size_t k) {
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    const Entry e = mv.entries[k];
    auto& on = bundles_[static_cast<std::size_t>(e.bundle)].on;
    if (e.slot + 1 != on.size()) {
      on[e.slot] = on.back();
      movers_[static_cast<std::size_t>(on[e.slot].moving)].entries[static_cast<std::size_t>(on[e.slot].position)].slot = e.slot;
    }
    on.pop_back();
    if (k + 1 != mv.entries.size()) {
      mv.entries[k] = mv.entries.back();
      bundles_[static_cast<std::size_t>(mv.entries[k].bundle)].on[mv.entries[k].slot].position = static_cast<int>(k);
    }
    mv.entries.pop_back();
  }

  /// A bundle's flows are known by two independent 64-bit sums of a key per (flow, listings).
  void add_to_signature(int b, FlowId flow, double count, int sign) {
    static constexpr std::uint64_t kMaxCount = (1 << 24) - 1;
    const std::uint64_t key = (static_cast<std::uint64_t>(flow) << 24) | std::min<std::uint64_t>(static_cast<std::uint64_t>(count), kMaxCount);
    Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
    const std::uint64_t a = FluidRoutes::mix(key), c = FluidRoutes::mix(key ^ 0x9e3779b97f4a7c15ULL);
    bundle.sig_a += sign > 0 ? a : -a;
    bundle.sig_b += sign > 0 ? c : -c;
  }
  void remember_signature(int b) {
    const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
    signatures_.insert(bundle.sig_a, bundle.sig_b, b);
  }
  void forget_signature(int b) {
    const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
    signatures_.erase(bundle.sig_a, bundle.sig_b, b);
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

  void touch(int b) {
    Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
    if (bundle.seen == dirty_mark_) return;
    bundle.seen = dirty_mark_;
    dirty_.push_back(b);
  }

  /// Re-solves the rates around what changed and reschedules the ends of the flows whose rate
  /// changed. Max-min holds exactly when every flow has a bottleneck: a full bundle on which no
  /// flow has a higher level (rate / weight). The region starts as the flows that started and those
  /// whose bottleneck lost or gained a flow; it is solved with every other flow held at its rate,
  /// then any flow the new rates leave without a bottleneck (or above a region flow on the region
  /// flow's bottleneck) joins it, until none does. A flow elsewhere keeps its rate and its
  /// scheduled end: most changes stay within a few flows, where re-solving the whole coupled
  /// component (everything a long ring touches) would cost thousands.
  void settle() {
    if (dirty_.empty()) return;
    const std::uint64_t region = ++mark_;
    region_.clear();
    // Seeds: the flows that started, and those whose bottleneck is a bundle where a flow started or
    // ended, unless another full bundle of theirs still holds them (rebound). Any other flow on
    // those bundles has a full bundle elsewhere where it is on top, which the change did not touch;
    // the growth below pulls in whatever the new rates unsettle.
    for (int m : started_)
      if (movers_[static_cast<std::size_t>(m)].flow >= 0) join(m, region);
    started_.clear();
    // A bundle knows how many flows it is the bottleneck of: the scan of its flows (hundreds on a
    // shared uplink) ends once it has met them all, and is skipped where there are none.
    for (int b : dirty_) {
      const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      if (bundle.members.empty()) continue;  // dissolved or merged since
      int left = bundle.bottleneck_of;
      for (auto o = bundle.on.begin(); left > 0 && o != bundle.on.end(); ++o)
        if (movers_[static_cast<std::size_t>(o->moving)].bottleneck == b) {
          --left;
          if (movers_[static_cast<std::size_t>(o->moving)].region != region && !rebound(o->moving, 0)) join(o->moving, region);
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
    risen_.clear();
    for (int m : region_) {
      Moving& mv = movers_[static_cast<std::size_t>(m)];
      if (mv.bottleneck != mv.new_bottleneck) {
        if (mv.bottleneck >= 0) --bundles_[static_cast<std::size_t>(mv.bottleneck)].bottleneck_of;
        ++bundles_[static_cast<std::size_t>(mv.new_bottleneck)].bottleneck_of;
        mv.bottleneck = mv.new_bottleneck;
      }
      if (mv.new_rate_Bps == mv.rate_Bps) continue;
      const bool rises = mv.new_rate_Bps > mv.rate_Bps;
      for (const Entry& e : mv.entries) {
        Bundle& bundle = bundles_[static_cast<std::size_t>(e.bundle)];
        bundle.load += e.coefficient * (mv.new_rate_Bps - mv.rate_Bps);
        if (rises && bundle.seen != risen) {
          bundle.seen = risen;
          risen_.push_back(e.bundle);
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
    // raises a double, so a bundle whose flows all fell or held is still within its last check (a
    // long ring's bundles would otherwise be checked at every one of its joins).
    for (int b : risen_) {
      const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      if (bundle.load > bundle.cap * (1 + 1e-9))
        invariant_broken("link utilization at most 1", "link direction " + std::to_string(bundle.members.front()) + " carries " +
                                                           std::to_string(bundle.load) + " B/s of " + std::to_string(bundle.cap));
    }
  }

  void join(int m, std::uint64_t region) {
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    if (mv.region == region) return;
    mv.region = region;
    region_.push_back(m);
  }

  static double level(const Moving& mv, bool in_region) { return (in_region ? mv.new_rate_Bps : mv.rate_Bps) / mv.weight; }

  /// What a bundle's links could still carry at the rates of the moment: those the last solve gave
  /// its region where that region (`region`, 0 before any) crossed the bundle, else those set.
  double spare_Bps(const Bundle& bundle, std::uint64_t region) const {
    return region != 0 && bundle.solved == solved_ ? bundle.left : bundle.cap - bundle.load;
  }

  /// Whether a flow outside the region still has a bottleneck at the rates of the moment (the
  /// region's new ones where `region` is being solved, 0 before): a full bundle of its own on which
  /// no flow stands higher. If it has, that bundle becomes its bottleneck and it stays out of the
  /// region: its rate can neither rise (the bundle is full) nor must fall (nothing there stands
  /// above it), which is what re-solving it would find. Why: where a pipeline transfer ends on a
  /// data-parallel ring's bottleneck NIC, the ring is held as tightly at the next NIC with a
  /// transfer (an equal share there), and so are the transfers its re-solve pulled in one by one;
  /// a settle re-solved tens of flows seven times over to change no rate (MLPerf GPT-3 at dp 120:
  /// 94% of the solver's work). The first growth rule still pulls a flow that stands above a
  /// region flow on that flow's bottleneck, so a flow kept out here is pulled if the region's new
  /// rates later need it to yield.
  bool rebound(int m, std::uint64_t region) {
    Moving& mv = movers_[static_cast<std::size_t>(m)];
    const double own = level(mv, false);
    auto holds = [&](int b) {
      const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      if (spare_Bps(bundle, region) > bundle.cap * kSlack) return false;  // most of a ring's are not full
      for (const OnBundle& o : bundle.on) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        if (level(g, region != 0 && g.region == region) > own * (1 + kSlack)) return false;
      }
      return true;
    };
    for (const Entry& e : mv.entries) {
      if (!holds(e.bundle)) continue;
      if (e.bundle != mv.bottleneck) {
        if (mv.bottleneck >= 0) --bundles_[static_cast<std::size_t>(mv.bottleneck)].bottleneck_of;
        ++bundles_[static_cast<std::size_t>(e.bundle)].bottleneck_of;
        mv.bottleneck = e.bundle;
      }
      return true;
    }
    return false;
  }

  /// Weighted progressive filling over the region, on what the flows outside it leave of each
  /// bundle: the bundle that fills first at the common level fixes its flows at level x weight.
  /// Fixing a flow at a level no higher than a bundle's own (left / usage) can only raise that
  /// bundle's level, so a key in the heap is a lower bound: a popped key that has risen goes back.
  void solve_region(std::uint64_t region) {
    using Key = std::pair<double, int>;
    const std::uint64_t here = ++mark_;
    solved_ = here;
    region_bundles_.clear();
    for (int m : region_) {
      Moving& mv = movers_[static_cast<std::size_t>(m)];
      mv.fixed = false;
      for (const Entry& e : mv.entries) {
        Bundle& bundle = bundles_[static_cast<std::size_t>(e.bundle)];
        if (bundle.seen != here) {
          bundle.seen = here;
          bundle.solved = here;
          region_bundles_.push_back(e.bundle);
          bundle.usage = 0;
          bundle.unfixed = 0;
          bundle.region_load = 0;
          bundle.region_bottlenecks = 0;
        }
        bundle.usage += e.coefficient * mv.weight;
        bundle.region_load += e.coefficient * mv.rate_Bps;
        ++bundle.unfixed;
      }
      if (mv.bottleneck >= 0 && bundles_[static_cast<std::size_t>(mv.bottleneck)].seen == here)
        ++bundles_[static_cast<std::size_t>(mv.bottleneck)].region_bottlenecks;
    }
    heap_.clear();
    for (int b : region_bundles_) {
      Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      const double outside = bundle.load - bundle.region_load;
      bundle.left = std::max(0.0, bundle.cap - outside);
      heap_.push_back({bundle.left / bundle.usage, b});
    }
    std::make_heap(heap_.begin(), heap_.end(), std::greater<Key>());
    double fill = 0;
    // Once every region flow is fixed the bundles left in the heap can fix nothing: stop there
    // rather than pop them all (most regions are a few flows over many bundles).
    std::size_t unfixed = region_.size();
    while (!heap_.empty() && unfixed > 0) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<Key>());
      const auto [key, b] = heap_.back();
      heap_.pop_back();
      Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      if (bundle.unfixed == 0) continue;
      const double now_key = std::max(0.0, bundle.left) / bundle.usage;
      if (now_key > key * (1 + 1e-12) && !heap_.empty() && now_key > heap_.front().first) {
        heap_.push_back({now_key, b});
        std::push_heap(heap_.begin(), heap_.end(), std::greater<Key>());
        continue;
      }
      fill = std::max(fill, now_key);  // rounding cannot lower it
      for (const OnBundle& o : bundle.on) {
        Moving& mv = movers_[static_cast<std::size_t>(o.moving)];
        if (mv.region != region || mv.fixed) continue;
        mv.fixed = true;
        --unfixed;
        mv.new_rate_Bps = fill * mv.weight;
        mv.new_bottleneck = b;
        for (const Entry& e : mv.entries) {
          Bundle& other = bundles_[static_cast<std::size_t>(e.bundle)];
          other.left -= e.coefficient * mv.new_rate_Bps;
          other.usage -= e.coefficient * mv.weight;
          --other.unfixed;
        }
      }
    }
  }

  /// Adds to the region every outside flow the region's new rates unsettle: one above a region
  /// flow on that flow's bottleneck (it must yield), and one whose bottleneck the region touched
  /// and left not full, or where a region flow now rises above it (it may take more, or less).
  void pull_unsettled(std::uint64_t region) {
    pulled_.clear();
    // The flows fixed at one bundle share its level (up to rounding): each bottleneck is scanned
    // once, against the lowest of them, which pulls what scanning it for each would. Why: a
    // ring's channels share their bottleneck, and a scan per channel grew faster than dp^2.
    const std::uint64_t lowest = ++mark_;
    bottlenecks_.clear();
    for (int m : region_) {
      const Moving& mv = movers_[static_cast<std::size_t>(m)];
      Bundle& b = bundles_[static_cast<std::size_t>(mv.new_bottleneck)];
      if (b.seen != lowest) {
        b.seen = lowest;
        b.floor = level(mv, true);
        bottlenecks_.push_back(mv.new_bottleneck);
      } else {
        b.floor = std::min(b.floor, level(mv, true));
      }
    }
    for (int b : bottlenecks_) {
      const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      const double bar = bundle.floor * (1 + kSlack);
      for (const OnBundle& o : bundle.on) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        if (g.region != region && level(g, false) > bar) pulled_.push_back(o.moving);
      }
    }
    // The same on the region's other full bundles: an outside flow standing above a region flow
    // there yields once the region flow's bottleneck lets it rise. Pulled now rather than one
    // bundle a growth step: a data-parallel ring held by a transfer at one NIC, once that transfer
    // is pulled, met the next NIC's, and a settle solved the ring beside 20 to 30 more transfers
    // at each of eight steps (MLPerf GPT-3 at dp 240).
    for (int b : region_bundles_) {
      const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      if (bundle.seen == lowest || bundle.left > bundle.cap * kSlack) continue;  // a bottleneck (above), or not full
      double floor = std::numeric_limits<double>::infinity(), outside_top = 0;
      for (const OnBundle& o : bundle.on) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        if (g.region == region)
          floor = std::min(floor, level(g, true));
        else
          outside_top = std::max(outside_top, level(g, false));
      }
      if (outside_top <= floor * (1 + kSlack)) continue;
      for (const OnBundle& o : bundle.on) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        if (g.region != region && level(g, false) > floor * (1 + kSlack)) pulled_.push_back(o.moving);
      }
    }
    for (int b : region_bundles_) {
      const Bundle& bundle = bundles_[static_cast<std::size_t>(b)];
      if (bundle.bottleneck_of == bundle.region_bottlenecks) continue;  // no outside flow's bottleneck
      bool bottleneck_of_outside = false;
      double load = 0, top = 0;
      for (const OnBundle& o : bundle.on) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        const bool in = g.region == region;
        load += g.entries[static_cast<std::size_t>(o.position)].coefficient * (in ? g.new_rate_Bps : g.rate_Bps);
        top = std::max(top, level(g, in));
        bottleneck_of_outside |= !in && g.bottleneck == b;
      }
      if (!bottleneck_of_outside) continue;
      const bool full = load >= bundle.cap * (1 - kSlack);
      for (const OnBundle& o : bundle.on) {
        const Moving& g = movers_[static_cast<std::size_t>(o.moving)];
        if (g.region != region && g.bottleneck == b && (!full || level(g, false) < top * (1 - kSlack)) && !rebound(o.moving, region))
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
  std::vector<FluidSolver::Tables::Link>& link_;
  std::vector<Moving>& movers_;
  std::vector<Bundle>& bundles_;
  SignatureTable& signatures_;
  std::uint64_t& mark_;
  // Of this run.
  std::uint64_t dirty_mark_ = 0;
  Seconds now_ = 0;
  EventQueue events_;
  std::vector<Seconds> finish_;
  std::vector<int> waiting_, succ_begin_;
  std::vector<FlowId> succ_, pending_;
  std::vector<int> free_, free_bundles_;
  struct Group {
    int from;      // the bundle the links are in, or -1
    double count;  // how often the route lists each
    std::vector<LinkDir> links;
  };
  std::vector<Group> groups_;  // of one start; the first groups_used_
  std::size_t groups_used_ = 0;
  std::size_t fresh_group_ = std::numeric_limits<std::size_t>::max();  // the first group of links in no bundle
  std::uint64_t grouping_ = 0;  // which start is grouping links
  std::vector<int> dirty_, region_bundles_, risen_, bottlenecks_;
  std::vector<std::pair<double, int>> heap_;
  std::vector<int> region_, pulled_, started_;
  std::uint64_t solved_ = 0;  // the last solve's mark (Bundle::solved)
};

}  // namespace

FluidSolver::FluidSolver(std::vector<double> capacity_Bps, bool equal_shares) : tables_(std::make_unique<Tables>()) {
  tables_->equal_shares = equal_shares;
  tables_->link.resize(capacity_Bps.size());
  tables_->cluster_links = capacity_Bps.size();
  for (std::size_t i = 0; i < capacity_Bps.size(); ++i) tables_->link[i].cap = capacity_Bps[i];
}

FluidSolver::~FluidSolver() = default;

std::vector<Seconds> FluidSolver::run(const FlowGraph& graph, const Router* spread) {
  solves_ = rated_flows_ = 0;
  return Run(*tables_, graph, spread, solves_, rated_flows_).go();
}

}  // namespace clustersim
