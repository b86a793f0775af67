// `node_groups:`: which nodes of a cluster hold another GPU model than its `gpu:`.
#include <algorithm>
#include <cctype>
#include <string>

#include "topologies/node_groups.hpp"

namespace clustersim {

namespace {

/// One entry of `nodes:`: a node id or a range "A-B" (both ends included), within [0, count).
void read_nodes_entry(const YamlField& f, int count, std::vector<int>& out) {
  const std::string text = f.as_string();
  const std::string expected = "expected a node id or a range such as \"8-15\", each within 0 to " + std::to_string(count - 1);
  const std::size_t dash = text.find('-');
  auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) f.fail(expected + ", got '" + text + "'");
    const long n = std::stol(digits);
    if (n >= count) f.fail(expected + ", got '" + text + "'");
    return static_cast<int>(n);
  };
  const int first = number(text.substr(0, dash));
  const int last = dash == std::string::npos ? first : number(text.substr(dash + 1));
  if (last < first) f.fail(expected + " (a range from the lower id up), got '" + text + "'");
  for (int n = first; n <= last; ++n) out.push_back(n);
}

}  // namespace

std::vector<NodeGroup> read_node_groups(const YamlField& f, const std::string& cluster_gpu, int nodes) {
  if (!f.is_sequence() || f.size() == 0)
    f.fail("expected a list of node groups, such as [{gpu: H200, nodes: \"8-15\"}]");
  std::vector<NodeGroup> out;
  std::vector<int> owner(static_cast<std::size_t>(nodes), -1);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const YamlField g = f.element(i);
    g.expect_keys({"gpu", "nodes", "note"});
    if (auto note = g.find("note")) note->as_string();
    NodeGroup group;
    const YamlField gpu = g.child("gpu");
    group.gpu = gpu.as_string();
    if (group.gpu == cluster_gpu)
      gpu.fail("expected another GPU model than the cluster's own (" + cluster_gpu + "): nodes no group names hold it already");
    const YamlField list = g.child("nodes");
    std::vector<int> ids;
    if (list.is_sequence()) {
      if (list.size() == 0) list.fail("expected at least one node id or range");
      for (std::size_t k = 0; k < list.size(); ++k) read_nodes_entry(list.element(k), nodes, ids);
    } else {
      read_nodes_entry(list, nodes, ids);
    }
    for (int n : ids) {
      int& o = owner[static_cast<std::size_t>(n)];
      if (o >= 0)
        list.fail("expected node groups that share no node; node " + std::to_string(n) + " is already in node_groups[" +
                  std::to_string(o) + "]");
      o = static_cast<int>(i);
    }
    std::sort(ids.begin(), ids.end());
    group.nodes = std::move(ids);
    out.push_back(std::move(group));
  }
  return out;
}

const std::string& gpu_of_node(const std::vector<NodeGroup>& groups, const std::string& cluster_gpu, int n) {
  for (const NodeGroup& g : groups)
    if (std::binary_search(g.nodes.begin(), g.nodes.end(), n)) return g.gpu;
  return cluster_gpu;
}

}  // namespace clustersim
