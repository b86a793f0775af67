#include "simulator/fold.hpp"

#include <algorithm>
#include <unordered_map>

namespace clustersim {

namespace {

constexpr int kNobody = -1, kSeveral = -2;

/// For each link, the one replica whose own flows cross it (kSeveral if more than one).
std::unordered_map<LinkDir, int> link_owners(const FoldInput& in) {
  std::unordered_map<LinkDir, int> owner;
  for (int d = 0; d < in.replicas; ++d)
    for (const OwnFlow& f : in.copies[static_cast<std::size_t>(d)])
      for (LinkDir l : f.links) {
        auto [it, fresh] = owner.emplace(l, d);
        if (!fresh && it->second != d) it->second = kSeveral;
      }
  return owner;
}

/// For each link some replica's own flows cross, the shared flows crossing it (flow id, with
/// repeats for a flow that crosses it several times), sorted.
std::unordered_map<LinkDir, std::vector<int>> shared_crossings(const FoldInput& in,
                                                               const std::unordered_map<LinkDir, int>& owner) {
  std::unordered_map<LinkDir, std::vector<int>> out;
  for (std::size_t f = 0; f < in.shared.size(); ++f)
    for (LinkDir l : in.shared[f])
      if (owner.count(l)) out[l].push_back(static_cast<int>(f));
  for (auto& [l, flows] : out) std::sort(flows.begin(), flows.end());
  return out;
}

class Matcher {
 public:
  Matcher(const Cluster& cluster, const FoldInput& in) : cluster_(cluster), in_(in), owner_(link_owners(in)) {
    crossings_ = shared_crossings(in, owner_);
  }

  /// Why replica d's own flows share a link with another replica's; empty when they do not.
  std::string shares(int d) const {
    for (const OwnFlow& f : in_.copies[static_cast<std::size_t>(d)])
      for (LinkDir l : f.links)
        if (owner_.at(l) == kSeveral)
          return in_.what + " " + std::to_string(d) + "'s own traffic shares the link " + cluster_.direction_name(l) +
                 " with another " + in_.what + "'s";
    return {};
  }

  /// Whether replica d's own flows are an exact image of replica s's.
  bool same_as(int d, int s) const {
    if (!in_.speeds.empty() && in_.speeds[static_cast<std::size_t>(d)] != in_.speeds[static_cast<std::size_t>(s)])
      return false;
    const auto& a = in_.copies[static_cast<std::size_t>(s)];
    const auto& b = in_.copies[static_cast<std::size_t>(d)];
    if (a.size() != b.size()) return false;
    std::unordered_map<LinkDir, LinkDir> to_b, to_a;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].links.size() != b[i].links.size() || a[i].latency_s != b[i].latency_s ||
          a[i].size_bytes != b[i].size_bytes)
        return false;
      for (std::size_t k = 0; k < a[i].links.size(); ++k) {
        const LinkDir la = a[i].links[k], lb = b[i].links[k];
        auto [ia, fresh_a] = to_b.emplace(la, lb);
        auto [ib, fresh_b] = to_a.emplace(lb, la);
        if (ia->second != lb || ib->second != la) return false;  // not one to one
        if (!fresh_a) continue;
        if (cluster_.effective_bandwidth_Bps(link_of(la)) != cluster_.effective_bandwidth_Bps(link_of(lb))) return false;
        if (crossing(la) != crossing(lb)) return false;
      }
    }
    return true;
  }

 private:
  const std::vector<int>& crossing(LinkDir l) const {
    static const std::vector<int> none;
    auto it = crossings_.find(l);
    return it == crossings_.end() ? none : it->second;
  }

  const Cluster& cluster_;
  const FoldInput& in_;
  std::unordered_map<LinkDir, int> owner_;
  std::unordered_map<LinkDir, std::vector<int>> crossings_;
};

}  // namespace

Folding fold_replicas(const Cluster& cluster, const FoldInput& in, FoldMode mode) {
  Folding out;
  out.simulated_as.resize(static_cast<std::size_t>(in.replicas));
  for (int d = 0; d < in.replicas; ++d) out.simulated_as[static_cast<std::size_t>(d)] = d;
  out.simulated_replicas = in.replicas;
  if (mode == FoldMode::none || in.replicas < 2) return out;
  const Matcher match(cluster, in);
  std::vector<int> isolated_simulated;  // simulated replicas that others may fold onto
  out.simulated_replicas = 0;
  for (int d = 0; d < in.replicas; ++d) {
    const std::string shared = match.shares(d);
    int onto = kNobody;
    if (shared.empty())
      for (int s : isolated_simulated)
        if (match.same_as(d, s)) {
          onto = s;
          break;
        }
    if (onto != kNobody) {
      out.simulated_as[static_cast<std::size_t>(d)] = onto;
      continue;
    }
    ++out.simulated_replicas;
    if (shared.empty()) isolated_simulated.push_back(d);
    if (d > 0 && out.why_not.empty())
      out.why_not = shared.empty() ? in.what + " " + std::to_string(d) + "'s traffic is not an image of " + in.what + " 0's" : shared;
  }
  return out;
}

}  // namespace clustersim
