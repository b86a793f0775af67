#include "workloads/serving/kv_transfers.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace clustersim {

namespace {

// Ends within rounding of one another are one instant, as in the engine's fluid solver.
Seconds within_rounding(Seconds t) { return t + 1e-12 * std::max(1.0, t); }

}  // namespace

Seconds KvTransfers::start(Seconds now, long request, const std::vector<int>& from_gpus, const std::vector<int>& to_gpus,
                           double bytes_per_gpu) {
  if (from_gpus.size() != to_gpus.size() || from_gpus.empty())
    throw std::logic_error("KvTransfers::start: the two replicas hold different GPU counts");
  long t = 0;
  if (free_transfers_.empty()) {
    t = long(transfers_.size());
    transfers_.emplace_back();
  } else {
    t = free_transfers_.back();
    free_transfers_.pop_back();
  }
  transfers_[std::size_t(t)] = {request, int(from_gpus.size()), now};
  for (std::size_t i = 0; i < from_gpus.size(); ++i) {
    Shard s;
    s.transfer = t;
    s.remaining_bytes = std::max(0.0, bytes_per_gpu);
    s.since = now;
    if (from_gpus[i] != to_gpus[i]) {  // else there is nothing to move
      const Route& r = comm_.route(from_gpus[i], to_gpus[i]);
      s.links = r.links;
      s.latency_s = r.latency_s;
    }
    shards_.push_back(std::move(s));
  }
  rerate(now);
  return timing_alone_ ? 0 : alone_s(from_gpus, to_gpus, bytes_per_gpu);
}

Seconds KvTransfers::alone_s(const std::vector<int>& from_gpus, const std::vector<int>& to_gpus, double bytes_per_gpu) {
  KvTransfers empty(cluster_, comm_);
  empty.timing_alone_ = true;
  empty.start(0, 0, from_gpus, to_gpus, bytes_per_gpu);
  for (;;) {
    const auto landed = empty.advance(empty.next_end_s());
    if (!landed.empty()) return landed.front().second;
  }
}

std::vector<std::pair<long, Seconds>> KvTransfers::advance(Seconds now) {
  std::vector<std::pair<long, Seconds>> landed;
  if (shards_.empty() || now < next_end_s_) return landed;
  const Seconds through = within_rounding(now);
  std::vector<Shard> moving;
  moving.reserve(shards_.size());
  for (Shard& s : shards_) {
    const Seconds end = s.rate_Bps > 0 ? s.since + s.remaining_bytes / s.rate_Bps : s.since;
    // The shard whose end set next_end_s_ ends here whatever the rounding, so a wake-up always
    // moves the run on.
    if (end > through && end != next_end_s_) {
      moving.push_back(std::move(s));
      continue;
    }
    Transfer& t = transfers_[std::size_t(s.transfer)];
    t.lands_s = std::max(t.lands_s, end + s.latency_s);
    if (--t.shards_left == 0) {
      landed.emplace_back(t.request, t.lands_s);
      free_transfers_.push_back(s.transfer);
    }
  }
  shards_ = std::move(moving);
  rerate(now);
  return landed;
}

void KvTransfers::rerate(Seconds now) {
  ++version_;
  for (Shard& s : shards_) {
    s.remaining_bytes = std::max(0.0, s.remaining_bytes - s.rate_Bps * (now - s.since));
    s.since = now;
    s.rate_Bps = 0;
  }
  // Progressive filling with equal shares: the link direction that leaves its unfixed shards the
  // least (what is left of it over their count) fixes them at that share; repeat. Link directions
  // in id order, so ties fall the same way every run.
  struct Direction {
    double left_Bps = 0;
    int unfixed = 0;
    std::vector<int> shards;
  };
  std::map<LinkDir, Direction> on;
  for (int i = 0; i < int(shards_.size()); ++i)
    for (LinkDir d : shards_[std::size_t(i)].links) {
      auto [it, added] = on.try_emplace(d);
      if (added) it->second.left_Bps = cluster_.effective_bandwidth_Bps(link_of(d));
      ++it->second.unfixed;
      it->second.shards.push_back(i);
    }
  std::vector<char> fixed(shards_.size(), 0);
  for (std::size_t i = 0; i < shards_.size(); ++i)
    if (shards_[i].links.empty()) fixed[i] = 1;  // nothing to cross: through at once
  for (;;) {
    Direction* tightest = nullptr;
    double share_Bps = 0;
    for (auto& [d, dir] : on) {
      if (dir.unfixed == 0) continue;
      const double share = std::max(0.0, dir.left_Bps) / dir.unfixed;
      if (!tightest || share < share_Bps) {
        tightest = &dir;
        share_Bps = share;
      }
    }
    if (!tightest) break;
    for (int i : tightest->shards) {
      if (fixed[std::size_t(i)]) continue;
      fixed[std::size_t(i)] = 1;
      Shard& s = shards_[std::size_t(i)];
      s.rate_Bps = share_Bps;
      for (LinkDir d : s.links) {
        Direction& dir = on.at(d);
        dir.left_Bps -= share_Bps;
        --dir.unfixed;
      }
    }
  }
  next_end_s_ = std::numeric_limits<double>::infinity();
  for (const Shard& s : shards_) {
    if (s.rate_Bps <= 0 && s.remaining_bytes > 0 && !s.links.empty())
      throw std::logic_error("KvTransfers: a KV shard got no share of its links");
    next_end_s_ = std::min(next_end_s_, s.rate_Bps > 0 ? s.since + s.remaining_bytes / s.rate_Bps : s.since);
  }
}

}  // namespace clustersim
