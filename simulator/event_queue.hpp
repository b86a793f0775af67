#pragma once
// The fluid solver's event queue: a binary heap ordered by (time, order of scheduling) in which an
// event may be tied to a slot (a moving flow) and moved when that flow's rate changes. Re-pushing
// instead would leave the old event behind to be popped and ignored: in a whole-cluster replay
// most rate changes are such, and the stale events outnumbered the live ones by 20 to 1 (GPT-3 on
// 1,024 GPUs: 47K queued on average, ~2K live), every push and pop paying for them.
#include <cstdint>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

class EventQueue {
 public:
  struct Event {
    Seconds at = 0;
    std::uint64_t order = 0;  // ties pop in the order they were scheduled: results are deterministic
    int flow = -1;
    int slot = -1;  // the slot it is tied to, or -1
  };

  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }

  /// An event tied to no slot.
  void push(Seconds at, int flow) { insert({at, order_++, flow, -1}); }

  /// Schedules `slot`'s event at `at` (scheduled now, for ties), moving the one it had if any.
  void set(int slot, Seconds at, int flow) {
    if (static_cast<std::size_t>(slot) >= where_.size()) where_.resize(static_cast<std::size_t>(slot) + 1, -1);
    const int at_index = where_[static_cast<std::size_t>(slot)];
    if (at_index < 0) return insert({at, order_++, flow, slot});
    Event& e = heap_[static_cast<std::size_t>(at_index)];
    const bool earlier = at < e.at;  // a new order is always later: only an earlier time moves it up
    e = {at, order_++, flow, slot};
    earlier ? up(static_cast<std::size_t>(at_index)) : down(static_cast<std::size_t>(at_index));
  }

  Event pop() {
    const Event e = heap_.front();
    if (e.slot >= 0) where_[static_cast<std::size_t>(e.slot)] = -1;
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) {
      place(0);
      down(0);
    }
    return e;
  }

  /// Events scheduled so far, stale-free: what the run cost.
  std::uint64_t scheduled() const { return order_; }

 private:
  static bool before(const Event& a, const Event& b) { return a.at != b.at ? a.at < b.at : a.order < b.order; }

  void insert(const Event& e) {
    heap_.push_back(e);
    place(heap_.size() - 1);
    up(heap_.size() - 1);
  }
  void place(std::size_t i) {
    if (heap_[i].slot >= 0) where_[static_cast<std::size_t>(heap_[i].slot)] = static_cast<int>(i);
  }
  void up(std::size_t i) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!before(heap_[i], heap_[parent])) break;
      std::swap(heap_[i], heap_[parent]);
      place(i);
      i = parent;
    }
    place(i);
  }
  void down(std::size_t i) {
    for (;;) {
      std::size_t best = i;
      for (std::size_t c = 2 * i + 1; c <= 2 * i + 2 && c < heap_.size(); ++c)
        if (before(heap_[c], heap_[best])) best = c;
      if (best == i) break;
      std::swap(heap_[i], heap_[best]);
      place(i);
      i = best;
    }
    place(i);
  }

  std::vector<Event> heap_;
  std::vector<int> where_;  // [slot]: its event's index in heap_, or -1
  std::uint64_t order_ = 0;
};

}  // namespace clustersim
