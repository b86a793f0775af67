#include "workloads/serving/kv_transfers.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>
#include <tuple>

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
  std::vector<int> started;
  for (std::size_t i = 0; i < from_gpus.size(); ++i) {
    int k = 0;
    if (free_shards_.empty()) {
      k = int(shards_.size());
      shards_.emplace_back();
      seen_.push_back(0);
    } else {
      k = free_shards_.back();
      free_shards_.pop_back();
    }
    Shard& s = shards_[std::size_t(k)];
    s = Shard{};
    s.transfer = t;
    s.remaining_bytes = std::max(0.0, bytes_per_gpu);
    s.since = now;
    if (from_gpus[i] != to_gpus[i]) {  // else there is nothing to move
      const Route& r = comm_.route(from_gpus[i], to_gpus[i]);
      s.links = r.links;
      s.latency_s = r.latency_s;
    }
    for (LinkDir d : s.links) on_link_[d].push_back(k);
    started.push_back(k);
  }
  rerate(now, started);
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
  if (ends_.empty() || now < ends_.begin()->first) return landed;
  // The first end is through whatever the rounding (so a wake-up always moves the run on), and so
  // is every end within rounding of now.
  const Seconds through = std::max(within_rounding(now), ends_.begin()->first);
  std::vector<int> neighbours;
  while (!ends_.empty() && ends_.begin()->first <= through) {
    const int k = ends_.begin()->second;
    ends_.erase(ends_.begin());
    Shard& s = shards_[std::size_t(k)];
    for (LinkDir d : s.links) {
      std::vector<int>& on = on_link_[d];
      on.erase(std::find(on.begin(), on.end(), k));
      neighbours.insert(neighbours.end(), on.begin(), on.end());
      if (on.empty()) on_link_.erase(d);
    }
    Transfer& t = transfers_[std::size_t(s.transfer)];
    t.lands_s = std::max(t.lands_s, s.end_s + s.latency_s);
    if (--t.shards_left == 0) {
      landed.emplace_back(t.request, t.lands_s);
      free_transfers_.push_back(s.transfer);
    }
    s.transfer = -1;
    free_shards_.push_back(k);
  }
  // A neighbour may itself have ended in this same instant.
  neighbours.erase(std::remove_if(neighbours.begin(), neighbours.end(), [&](int k) { return shards_[std::size_t(k)].transfer < 0; }),
                   neighbours.end());
  rerate(now, neighbours);
  return landed;
}

void KvTransfers::rerate(Seconds now, const std::vector<int>& seeds) {
  ++version_;
  // The shards coupled to the seeds through shared links, and those links (in id order, so ties
  // in the filling below fall the same way every run).
  std::vector<int> shards;
  std::vector<LinkDir> links;
  for (int k : seeds)
    if (!seen_[std::size_t(k)]) {
      seen_[std::size_t(k)] = 1;
      shards.push_back(k);
    }
  for (std::size_t i = 0; i < shards.size(); ++i)
    for (LinkDir d : shards_[std::size_t(shards[i])].links) {
      links.push_back(d);
      for (int k : on_link_.at(d))
        if (!seen_[std::size_t(k)]) {
          seen_[std::size_t(k)] = 1;
          shards.push_back(k);
        }
    }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  for (int k : shards) {
    seen_[std::size_t(k)] = 0;
    Shard& s = shards_[std::size_t(k)];
    ends_.erase({s.end_s, k});
    s.remaining_bytes = std::max(0.0, s.remaining_bytes - s.rate_Bps * (now - s.since));
    s.since = now;
    s.rate_Bps = 0;
  }
  // Progressive filling with equal shares: the link direction that leaves its unfixed shards the
  // least (what is left of it over their count) fixes them at that share; repeat. Every shard on
  // these links is among `shards`, so each link's whole capacity is theirs.
  std::vector<double> left_Bps(links.size());
  std::vector<int> unfixed(links.size());
  for (std::size_t i = 0; i < links.size(); ++i) {
    left_Bps[i] = cluster_.effective_bandwidth_Bps(link_of(links[i]));
    unfixed[i] = int(on_link_.at(links[i]).size());
  }
  const auto index_of = [&](LinkDir d) { return std::size_t(std::lower_bound(links.begin(), links.end(), d) - links.begin()); };
  // The tightest link first, lowest id among equals; a link's share only grows as shards elsewhere
  // are fixed below it, so an entry pushed before its link's last change is stale and skipped.
  using Entry = std::tuple<double, std::size_t, int>;  // share, link, its change count then
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> tightest;
  std::vector<int> changes(links.size(), 0);
  for (std::size_t i = 0; i < links.size(); ++i) tightest.emplace(left_Bps[i] / unfixed[i], i, 0);
  while (!tightest.empty()) {
    const auto [share_Bps, i, change] = tightest.top();
    tightest.pop();
    if (change != changes[i] || unfixed[i] == 0) continue;
    if (share_Bps <= 0) throw std::logic_error("KvTransfers: a KV shard got no share of its links");
    for (int k : on_link_.at(links[i])) {
      Shard& s = shards_[std::size_t(k)];
      if (s.rate_Bps > 0) continue;
      s.rate_Bps = share_Bps;
      for (LinkDir d : s.links) {
        const std::size_t j = index_of(d);
        left_Bps[j] -= share_Bps;
        --unfixed[j];
        ++changes[j];
        if (unfixed[j] > 0) tightest.emplace(std::max(0.0, left_Bps[j]) / unfixed[j], j, changes[j]);
      }
    }
  }
  for (int k : shards) {
    Shard& s = shards_[std::size_t(k)];
    s.end_s = s.rate_Bps > 0 ? s.since + s.remaining_bytes / s.rate_Bps : s.since;  // no links: through at once
    ends_.insert({s.end_s, k});
  }
}

}  // namespace clustersim
