#pragma once
// The fluid solver's state per moving flow and per bundle of links, and the table that finds a
// bundle by the flows it carries. Private to fluid_solver.cpp.
#include <cstdint>
#include <utility>
#include <vector>

#include "collectives/flow.hpp"

namespace clustersim::fluid {

/// A bundle a moving flow crosses: how many times its route lists each of the bundle's links, and
/// where the flow sits in the bundle's list.
struct Entry {
  int bundle;
  double coefficient;
  std::size_t slot;
};

/// A flow that is moving bytes.
struct Moving {
  FlowId flow = -1;
  double weight = 1;  // 1 / sharing penalty
  double rate_Bps = 0;
  double remaining_bytes = 0;  // at `since`
  Seconds since = 0;
  std::vector<Entry> entries;  // each bundle once
  int bottleneck = -1;         // the full bundle its rate is set by
  // Scratch of one solve.
  double new_rate_Bps = 0;
  int new_bottleneck = -1;
  bool fixed = false;
  std::uint64_t region = 0;
};

struct OnBundle {
  int moving;    // index into movers
  int position;  // which of that mover's entries this is
};

/// The links that carry exactly the same moving flows, as often, right now: they load alike, so
/// only the narrowest can bind, and the solver works on bundles, not links. Why: a data-parallel
/// ring's channel is one flow over 2 dp to 6 dp links, and with every link its own constraint each
/// pipeline transfer starting or ending on one of its NICs re-solved and re-loaded all of them
/// (a cost growing as dp^2 over an iteration). As bundles, the ring's quiet NIC links are one
/// constraint: at dp 64 a region held 143 distinct bundles where it visited 7,708 links.
struct Bundle {
  // What a solve reads and writes, first.
  std::uint64_t seen = 0;    // the mark of the last pass that visited it
  std::uint64_t solved = 0;  // the mark of the last solve whose region crossed it (`left` is of it)
  double cap = 0;          // bytes/s of its narrowest link
  double left = 0;         // of a solve: what the unfixed flows may still take
  double usage = 0;        // of a solve: the unfixed flows' weights, times their listings
  double load = 0;         // bytes/s each of its links carries now
  double region_load = 0;  // of which the region's flows
  int unfixed = 0;
  int bottleneck_of = 0;       // flows whose bottleneck it is
  int region_bottlenecks = 0;  // of which in the region (their old bottleneck)
  std::uint64_t grouping = 0;  // the start that last grouped links of it
  std::size_t group = 0;       // that start's first group of its links
  double floor = 0;            // of a growth step: the lowest level of the region flows it binds
  std::uint64_t sig_a = 0, sig_b = 0;         // two independent sums over its (flow, listings)
  std::vector<OnBundle> on;                   // its flows
  std::vector<LinkDir> members;               // its links
  std::vector<std::pair<double, int>> caps;   // its links' distinct capacities, ascending, counted
};

/// Live bundles by their two sums: open addressing with linear probing, erased by shifting the
/// probe chain back (no tombstones). A node-based map allocated once per insert, at every start
/// and end of a flow, and cost more than the bundles saved on small runs.
class SignatureTable {
 public:
  int find(std::uint64_t a, std::uint64_t b) const {
    if (slots_.empty()) return -1;
    for (std::size_t i = a & mask(); slots_[i].value >= 0; i = (i + 1) & mask())
      if (slots_[i].a == a && slots_[i].b == b) return slots_[i].value;
    return -1;
  }
  /// Adds the key unless it is there already.
  void insert(std::uint64_t a, std::uint64_t b, int value) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    std::size_t i = a & mask();
    for (; slots_[i].value >= 0; i = (i + 1) & mask())
      if (slots_[i].a == a && slots_[i].b == b) return;
    slots_[i] = {a, b, value};
    ++used_;
  }
  /// Removes the key if it maps to `value`.
  void erase(std::uint64_t a, std::uint64_t b, int value) {
    if (slots_.empty()) return;
    std::size_t i = a & mask();
    for (; slots_[i].value >= 0; i = (i + 1) & mask())
      if (slots_[i].a == a && slots_[i].b == b) break;
    if (slots_[i].value != value) return;
    slots_[i].value = -1;
    --used_;
    for (std::size_t j = (i + 1) & mask(); slots_[j].value >= 0; j = (j + 1) & mask()) {
      const std::size_t home = slots_[j].a & mask();
      // Slot j may move back to the hole at i unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      slots_[j].value = -1;
      i = j;
    }
  }
  void clear() {
    for (Slot& s : slots_) s.value = -1;
    used_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t a = 0, b = 0;
    int value = -1;
  };
  std::size_t mask() const { return slots_.size() - 1; }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(64, 2 * old.size()), Slot{});
    used_ = 0;
    for (const Slot& s : old)
      if (s.value >= 0) insert(s.a, s.b, s.value);
  }
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
};

}  // namespace clustersim::fluid
