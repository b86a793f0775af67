#include "topologies/link_faults.hpp"
#include "topologies/link_reroute.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

[[noreturn]] void fail(const LinkChange& c, const std::string& expected) {
  throw UserError(c.file, c.line, c.field, expected);
}

/// Vertex name -> vertex, built once per call: clusters name every vertex uniquely.
std::unordered_map<std::string, int> vertex_names(const Cluster& cluster) {
  std::unordered_map<std::string, int> out;
  for (std::size_t v = 0; v < boost::num_vertices(cluster.graph); ++v) out.emplace(cluster.graph[v].name, static_cast<int>(v));
  return out;
}

std::vector<LinkId> links_named(const Cluster& cluster, const LinkChange& change,
                                const std::unordered_map<std::string, int>& vertices) {
  std::string name = change.name;
  long index = -1;  // which of parallel links, -1 for all
  if (const std::size_t hash = name.rfind('#'); hash != std::string::npos) {
    const std::string digits = name.substr(hash + 1);
    if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
      fail(change, "expected NAME#K with K a link index (0, 1, ...), got '" + change.name + "'");
    index = std::stol(digits);
    name.resize(hash);
  }
  // Vertex names may hold '-' themselves: try every split whose both sides name a vertex.
  for (std::size_t dash = name.find('-'); dash != std::string::npos; dash = name.find('-', dash + 1)) {
    const auto a = vertices.find(name.substr(0, dash)), b = vertices.find(name.substr(dash + 1));
    if (a == vertices.end() || b == vertices.end()) continue;
    std::vector<LinkId> between;
    for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(a->second), cluster.graph); e != end; ++e)
      if (static_cast<int>(boost::target(*e, cluster.graph)) == b->second) between.push_back(cluster.graph[*e].link);
    std::sort(between.begin(), between.end());
    if (between.empty()) fail(change, "expected two vertices joined by a link; " + a->first + " and " + b->first + " are not");
    if (index < 0) return between;
    if (index >= static_cast<long>(between.size()))
      fail(change, "expected a link index below " + std::to_string(between.size()) + " (the links between " + a->first +
                       " and " + b->first + "), got " + std::to_string(index));
    return {between[static_cast<std::size_t>(index)]};
  }
  fail(change, "expected a link of the cluster named A-B after its two ends (such as leaf0-spine1, n0.gpu0-n0.nvswitch; "
               "`clustersim topology --dot` lists them), got '" + change.name + "'");
}

/// Two switches that NICs hang from and that the remaining ports no longer join; empty if none.
std::string disconnected(const Cluster& cluster) {
  if (cluster.nic_switch.empty()) return {};
  std::vector<char> seen(cluster.switches.size(), 0);
  std::deque<int> queue{cluster.nic_switch.front()};
  seen[static_cast<std::size_t>(queue.front())] = 1;
  while (!queue.empty()) {
    const int s = queue.front();
    queue.pop_front();
    for (const SwitchPort& p : cluster.switches[static_cast<std::size_t>(s)].ports)
      if (!seen[static_cast<std::size_t>(p.peer_switch)]) {
        seen[static_cast<std::size_t>(p.peer_switch)] = 1;
        queue.push_back(p.peer_switch);
      }
  }
  auto name = [&](int s) { return cluster.graph[static_cast<std::size_t>(cluster.switches[static_cast<std::size_t>(s)].vertex)].name; };
  for (int s : cluster.nic_switch)
    if (!seen[static_cast<std::size_t>(s)]) return name(cluster.nic_switch.front()) + " and " + name(s);
  return {};
}

}  // namespace

std::vector<LinkId> links_named(const Cluster& cluster, const LinkChange& change) {
  return links_named(cluster, change, vertex_names(cluster));
}

bool fail_if_reroutable(Cluster& cluster, const LinkChange& change) {
  const std::vector<LinkId> links = links_named(cluster, change);
  std::vector<std::pair<int, std::vector<SwitchPort>>> saved;  // to put back if the fabric parts
  for (LinkId l : links) {
    const Link& link = cluster.links[static_cast<std::size_t>(l)];
    const int a = cluster.switch_of_vertex[static_cast<std::size_t>(link.a)];
    const int b = cluster.switch_of_vertex[static_cast<std::size_t>(link.b)];
    if (a < 0 || b < 0) break;  // a node's own link: nothing to route over instead
    for (int s : {a, b}) {
      auto& ports = cluster.switches[static_cast<std::size_t>(s)].ports;
      saved.emplace_back(s, ports);
      ports.erase(std::remove_if(ports.begin(), ports.end(), [l](const SwitchPort& p) { return p.link == l; }), ports.end());
    }
  }
  const bool node_link = saved.size() != 2 * links.size();
  if (!node_link && disconnected(cluster).empty()) return true;
  for (auto it = saved.rbegin(); it != saved.rend(); ++it) cluster.switches[static_cast<std::size_t>(it->first)].ports = it->second;
  return false;
}

void apply_link_changes(Cluster& cluster, const std::vector<LinkChange>& changes) {
  if (changes.empty()) return;
  const auto vertices = vertex_names(cluster);
  for (const LinkChange& change : changes) {
    const std::vector<LinkId> links = links_named(cluster, change, vertices);
    if (!change.failed) {
      for (LinkId l : links) cluster.links[static_cast<std::size_t>(l)].bandwidth_Bps *= change.bandwidth_fraction;
      continue;
    }
    for (LinkId l : links) {
      const Link& link = cluster.links[static_cast<std::size_t>(l)];
      const int a = cluster.switch_of_vertex[static_cast<std::size_t>(link.a)];
      const int b = cluster.switch_of_vertex[static_cast<std::size_t>(link.b)];
      if (a < 0 || b < 0)
        fail(change, "expected a link between two fabric switches; '" + change.name +
                         "' is a node's own link, whose failure cuts a GPU off rather than rerouting (degrade it instead)");
      for (int s : {a, b}) {
        auto& ports = cluster.switches[static_cast<std::size_t>(s)].ports;
        ports.erase(std::remove_if(ports.begin(), ports.end(), [l](const SwitchPort& p) { return p.link == l; }), ports.end());
      }
    }
    if (const std::string cut = disconnected(cluster); !cut.empty())
      fail(change, "expected failed links that leave the fabric connected; with '" + change.name + "' down, no path joins " + cut +
                       " (NICs hang from both)");
  }
}

}  // namespace clustersim
