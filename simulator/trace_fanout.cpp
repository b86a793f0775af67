#include "simulator/trace_fanout.hpp"

#include <algorithm>

namespace clustersim {

TraceFanout::TraceFanout(TraceSink& sink, TraceLayout layout) : sink_(sink), layout_(std::move(layout)) {
  const auto& units = *layout_.units;
  for (const auto& u : units)
    for (int g : u) gpus_ = std::max(gpus_, g + 1);
  replica_of_.assign(static_cast<std::size_t>(gpus_), -1);
  rank_of_ = member_of_ = replica_of_;
  traced_.assign(static_cast<std::size_t>(gpus_), false);
  tp_group_.resize(static_cast<std::size_t>(gpus_));
  cp_group_.resize(static_cast<std::size_t>(gpus_));
  std::vector<bool> in_dp(static_cast<std::size_t>(gpus_), false);
  for (int g : layout_.in_dp_groups)
    if (g >= 0 && g < gpus_) in_dp[static_cast<std::size_t>(g)] = true;
  const int tp = std::max(1, layout_.tp);
  for (int d = 0; d < layout_.replicas; ++d)
    for (int r = 0; r < layout_.ranks; ++r) {
      const std::vector<int>& unit = units[static_cast<std::size_t>(d * layout_.ranks + r)];
      for (std::size_t m = 0; m < unit.size(); ++m) {
        const int y = unit[m];
        const std::size_t at = static_cast<std::size_t>(y);
        replica_of_[at] = d;
        rank_of_[at] = r;
        member_of_[at] = static_cast<int>(m);
        const int s = layout_.simulated_as[static_cast<std::size_t>(d)];
        if (!sink_.wants(y, s == d && m == 0)) continue;
        traced_[at] = true;
        sink_.place(y, r, d);
        const int member = static_cast<int>(m);
        compute_[gpu(s, r, member)].push_back(y);
        pp_[gpu(s, r, member < layout_.own_members ? member : 0)].push_back(y);
        dp_[in_dp[at] ? y : gpu(d, r, 0)].push_back(y);
        // TP groups are runs of tp members; a CP group takes one member of each run.
        const std::size_t run = static_cast<std::size_t>(tp), first = m - m % run;
        for (std::size_t k = first; k < std::min(unit.size(), first + run); ++k) tp_group_[at].push_back(unit[k]);
        for (std::size_t k = m % run; k < unit.size(); k += run) cp_group_[at].push_back(unit[k]);
      }
    }
}

int TraceFanout::gpu(int replica, int rank, int member) const {
  return (*layout_.units)[static_cast<std::size_t>(replica * layout_.ranks + rank)][static_cast<std::size_t>(member)];
}

void TraceFanout::emit(const std::unordered_map<int, std::vector<int>>& targets, int from, const TraceRecord& record) {
  const auto it = targets.find(from);
  if (it == targets.end()) return;
  for (int y : it->second) sink_.event(y, y == from ? -1 : from, record);
}

void TraceFanout::unit(int replica, int rank, TraceRecord record) {
  const std::size_t members = (*layout_.units)[static_cast<std::size_t>(replica * layout_.ranks + rank)].size();
  for (std::size_t m = 0; m < members; ++m) {
    const int x = gpu(replica, rank, static_cast<int>(m));
    const auto it = compute_.find(x);
    if (it == compute_.end()) continue;
    for (int y : it->second) {
      TraceRecord r = record;
      if (record.track == TraceTrack::tp) r.group = &tp_group_[static_cast<std::size_t>(y)];
      if (record.track == TraceTrack::cp) r.group = &cp_group_[static_cast<std::size_t>(y)];
      sink_.event(y, y == x ? -1 : x, r);
    }
  }
}

void TraceFanout::transfer(int replica, int from, int to, int member, std::uint64_t index, TraceRecord record) {
  const auto id = [&](int sender) { return index * static_cast<std::uint64_t>(gpus_) + static_cast<std::uint64_t>(sender) + 1; };
  const auto traced = [&](int g) { return g >= 0 && g < gpus_ && traced_[static_cast<std::size_t>(g)]; };
  const int sender = gpu(replica, from, member), receiver = gpu(replica, to, member);
  if (const auto it = pp_.find(sender); it != pp_.end())
    for (int y : it->second) {
      const std::size_t at = static_cast<std::size_t>(y);
      const int peer = gpu(replica_of_[at], to, member_of_[at]);
      TraceRecord r = record;
      r.track = TraceTrack::pp_send;
      r.name = "send";
      r.peer = peer;
      r.flow_out = traced(peer) ? id(y) : 0;
      sink_.event(y, y == sender ? -1 : sender, r);
    }
  if (const auto it = pp_.find(receiver); it != pp_.end())
    for (int y : it->second) {
      const std::size_t at = static_cast<std::size_t>(y);
      const int peer = gpu(replica_of_[at], from, member_of_[at]);
      TraceRecord r = record;
      r.track = TraceTrack::pp_recv;
      r.name = "recv";
      r.peer = peer;
      r.flow_in = traced(peer) ? id(peer) : 0;
      sink_.event(y, y == receiver ? -1 : receiver, r);
    }
}

void TraceFanout::collective(int replica, const std::vector<int>& group, TraceRecord record) {
  record.group = &group;
  for (int x : group) emit(replica >= 0 ? pp_ : dp_, x, record);
}

}  // namespace clustersim
