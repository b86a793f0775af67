#include "topologies/topology_picture.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

namespace clustersim {

std::optional<PictureLevel> parse_picture_level(const std::string& name) {
  if (name == "node") return PictureLevel::node;
  if (name == "leaf") return PictureLevel::leaf;
  if (name == "spine") return PictureLevel::spine;
  return std::nullopt;
}

namespace {

const char* tier_word(int tier, bool plural) {
  switch (tier) {
    case 1: return plural ? "leaves" : "leaf";
    case 2: return plural ? "spines" : "spine";
    case 3: return plural ? "cores" : "core";
  }
  return plural ? "switches" : "switch";
}

std::string gbps(BytesPerSecond b) {
  std::ostringstream out;
  out.precision(b >= 1e11 ? 0 : 1);
  out << std::fixed << b / 1e9 << " GB/s";
  return out.str();
}

/// A DOT string: quotes escaped, line breaks as DOT's \n.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// A colour-blind-safe palette (Okabe and Ito), one colour per link type in name order.
std::string link_colour(const Cluster& c, const std::string& type) {
  static const char* const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000"};
  std::size_t k = 0;
  for (const auto& [name, spec] : c.spec.link_types) {
    if (name == type) break;
    ++k;
  }
  return palette[k % (sizeof palette / sizeof *palette)];
}

/// A torus or a dragonfly: routers joined to each other at one tier, each with nodes of its own.
bool direct_network(const Cluster& c) { return c.spec.fabric.type == "torus" || c.spec.fabric.type == "dragonfly"; }

/// Routers per group of a direct network, in router order: a dragonfly's groups; a torus's planes
/// (the routers of every dimension but the last: x + dims[0] y in a 4x4x4 torus share a z).
int routers_per_group(const Cluster& c) {
  if (c.spec.fabric.type == "dragonfly") return std::max(1, c.spec.fabric.routers_per_group);
  int n = 1;
  for (std::size_t d = 0; d + 1 < c.spec.fabric.dims.size(); ++d) n *= c.spec.fabric.dims[d];
  return n;
}

/// What a box holding nodes is called at a level.
const char* unit_word(const Cluster& c, PictureLevel level) {
  if (level == PictureLevel::node) return "node";
  if (direct_network(c)) return level == PictureLevel::leaf ? "router" : c.spec.fabric.type == "dragonfly" ? "group" : "plane";
  return level == PictureLevel::leaf ? "unit" : "pod";
}

/// Switches of a tier by name: a direct network's are routers.
const char* switch_word(const Cluster& c, int tier, bool plural) {
  if (direct_network(c)) return plural ? "routers" : "router";
  return tier_word(tier, plural);
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int v) { return parent[static_cast<std::size_t>(v)] == v ? v : parent[static_cast<std::size_t>(v)] = find(parent[static_cast<std::size_t>(v)]); }
  void join(int a, int b) { parent[static_cast<std::size_t>(find(a))] = find(b); }
};

/// A box of the picture: what it holds.
struct Box {
  std::string id;
  int gpus = 0, nvswitches = 0, nics = 0, nodes = 0;
  std::map<int, int> switches;  // tier -> count
  std::set<int> node_set;
  int first_vertex = -1;
  VertexKind kind = VertexKind::gpu;  // of a box of one vertex, or of switches only
  int tier = 0;
  bool single = true;
};

/// Each vertex's box at `level`.
std::vector<int> boxes_of(const Cluster& c, PictureLevel level) {
  const int n = static_cast<int>(boost::num_vertices(c.graph));
  std::vector<int> box(static_cast<std::size_t>(n));
  if (level == PictureLevel::full || level == PictureLevel::node) {
    std::map<int, int> node_box;
    for (int v = 0; v < n; ++v) {
      const VertexInfo& info = c.graph[static_cast<std::size_t>(v)];
      if (level == PictureLevel::node && info.node >= 0) {
        box[static_cast<std::size_t>(v)] = node_box.try_emplace(info.node, v).first->second;
      } else {
        box[static_cast<std::size_t>(v)] = v;
      }
    }
    return box;
  }
  if (direct_network(c)) {
    // A router and its nodes (every link but router to router), then at the spine level its group.
    UnionFind uf(static_cast<std::size_t>(n));
    auto is_router = [&](int v) { return c.graph[static_cast<std::size_t>(v)].kind == VertexKind::fabric_switch; };
    for (const Link& l : c.links)
      if (!(is_router(l.a) && is_router(l.b))) uf.join(l.a, l.b);
    if (level == PictureLevel::spine) {
      const int per_group = routers_per_group(c);
      std::vector<int> first_of_group;
      int router = 0;
      for (int v = 0; v < n; ++v) {
        if (!is_router(v)) continue;
        const std::size_t g = static_cast<std::size_t>(router++ / per_group);
        if (g == first_of_group.size()) first_of_group.push_back(v);
        else uf.join(v, first_of_group[g]);
      }
    }
    for (int v = 0; v < n; ++v) box[static_cast<std::size_t>(v)] = uf.find(v);
    return box;
  }
  // Below the level: nodes and switches up to its tier, joined by their links into components.
  const int top = level == PictureLevel::leaf ? 1 : 2;
  auto below = [&](int v) {
    const VertexInfo& info = c.graph[static_cast<std::size_t>(v)];
    return info.kind != VertexKind::fabric_switch || info.tier <= top;
  };
  UnionFind uf(static_cast<std::size_t>(n));
  for (const Link& l : c.links)
    if (below(l.a) && below(l.b)) uf.join(l.a, l.b);
  for (int v = 0; v < n; ++v) box[static_cast<std::size_t>(v)] = uf.find(v);
  // Switches above it: one box per tier and set of component boxes they reach.
  std::map<int, std::set<int>> reach;
  for (const Link& l : c.links)
    for (auto [from, to] : {std::pair(l.a, l.b), std::pair(l.b, l.a)})
      if (!below(from) && below(to)) reach[from].insert(box[static_cast<std::size_t>(to)]);
  std::map<std::pair<int, std::set<int>>, int> merged;
  for (int v = 0; v < n; ++v)
    if (!below(v)) {
      const auto key = std::make_pair(c.graph[static_cast<std::size_t>(v)].tier, reach[v]);
      box[static_cast<std::size_t>(v)] = merged.try_emplace(key, v).first->second;
    }
  return box;
}

std::string box_label(const Cluster& c, const Box& b, PictureLevel level, int index) {
  if (b.single) return c.graph[static_cast<std::size_t>(b.first_vertex)].name;
  std::ostringstream out;
  if (b.nodes == 0) {  // switches of one tier
    const int tier = b.switches.begin()->first, count = b.switches.begin()->second;
    out << count << " " << switch_word(c, tier, count > 1);
    return out.str();
  }
  if (level == PictureLevel::node) {
    out << "node " << *b.node_set.begin() << "\n" << b.gpus << " GPUs";
    if (b.nvswitches) out << ", " << b.nvswitches << " NVSwitch" << (b.nvswitches > 1 ? "es" : "");
    out << ", " << b.nics << " NIC" << (b.nics == 1 ? "" : "s");
    return out.str();
  }
  out << unit_word(c, level) << " " << index << "\n" << b.nodes << " node" << (b.nodes == 1 ? " (" : "s (") << *b.node_set.begin();
  if (b.nodes > 1) out << "-" << *b.node_set.rbegin();
  out << "), " << b.gpus << " GPUs";
  for (const auto& [tier, count] : b.switches) out << "\n" << count << " " << switch_word(c, tier, count > 1);
  return out.str();
}

std::string box_style(const PictureBox& b) {
  const std::string fill = std::string("fillcolor=\"") + box_fill(b) + "\"";
  if (b.holds_nodes) return "shape=box3d, style=filled, " + fill;
  switch (b.kind) {
    case VertexKind::gpu: return "shape=box, style=filled, " + fill;
    case VertexKind::nvswitch: return "shape=hexagon, style=filled, " + fill;
    case VertexKind::nic: return "shape=ellipse, style=filled, " + fill;
    case VertexKind::fabric_switch: break;
  }
  return std::string("shape=") + (b.single ? "box" : "box3d") + ", style=\"filled,rounded\", " + fill +
         (box_text_white(b) ? ", fontcolor=white" : "");
}

/// What a row of boxes like `p` is called ("units", "routers", "spine groups").
std::string plural_of(const Cluster& c, const Box& b, const PictureBox& p, PictureLevel level) {
  if (p.holds_nodes) return std::string(unit_word(c, level)) + "s";
  switch (p.kind) {
    case VertexKind::gpu: return "GPUs";
    case VertexKind::nvswitch: return "NVSwitches";
    case VertexKind::nic: return "NICs";
    case VertexKind::fabric_switch: break;
  }
  return p.single || direct_network(c) ? switch_word(c, b.tier, true) : std::string(tier_word(b.tier, false)) + " groups";
}

}  // namespace

const char* box_fill(const PictureBox& b) {
  if (b.holds_nodes) return "#c7e9c0";
  switch (b.kind) {
    case VertexKind::gpu: return "#a1d99b";
    case VertexKind::nvswitch: return "#fdd0a2";
    case VertexKind::nic: return "#deebf7";
    case VertexKind::fabric_switch: break;
  }
  return b.tier <= 1 ? "#9ecae1" : b.tier == 2 ? "#4292c6" : "#08519c";
}

bool box_text_white(const PictureBox& b) { return !b.holds_nodes && b.kind == VertexKind::fabric_switch && b.tier >= 2; }

ClusterPicture cluster_picture(const Cluster& c, PictureLevel level) {
  const std::vector<int> box = boxes_of(c, level);
  std::map<int, Box> boxes;  // by representative vertex
  const int n = static_cast<int>(boost::num_vertices(c.graph));
  std::vector<int> order;  // boxes in order of their first vertex
  for (int v = 0; v < n; ++v) {
    const VertexInfo& info = c.graph[static_cast<std::size_t>(v)];
    auto [it, fresh] = boxes.try_emplace(box[static_cast<std::size_t>(v)]);
    Box& b = it->second;
    if (fresh) {
      b.first_vertex = v;
      b.kind = info.kind;
      b.tier = info.tier;
      order.push_back(box[static_cast<std::size_t>(v)]);
    } else {
      b.single = false;
    }
    if (info.kind == VertexKind::gpu) ++b.gpus;
    if (info.kind == VertexKind::nvswitch) ++b.nvswitches;
    if (info.kind == VertexKind::nic) ++b.nics;
    if (info.kind == VertexKind::fabric_switch) ++b.switches[info.tier];
    if (info.node >= 0) b.node_set.insert(info.node);
  }
  ClusterPicture picture;
  picture.level = level;
  std::map<int, int> index_of;  // representative vertex -> index in picture.boxes
  int unit = 0;
  for (int r : order) {
    Box& b = boxes[r];
    b.nodes = static_cast<int>(b.node_set.size());
    const int index = (!b.single && b.nodes > 0) ? unit++ : 0;
    PictureBox p;
    p.id = "b" + std::to_string(r);
    p.label = box_label(c, b, level, index);
    p.kind = b.kind;
    p.tier = b.kind == VertexKind::fabric_switch ? b.tier : 0;
    p.single = b.single;
    p.holds_nodes = !b.single && b.nodes > 0;
    p.gpus = b.gpus;
    p.plural = plural_of(c, b, p, level);
    index_of[r] = static_cast<int>(picture.boxes.size());
    picture.boxes.push_back(std::move(p));
  }
  // Links between two boxes, one edge per (type, bandwidth): parallel links collapse into it.
  std::map<std::tuple<int, int, std::string, BytesPerSecond>, int> edges;
  std::vector<std::tuple<int, int, std::string, BytesPerSecond>> edge_order;
  for (const Link& l : c.links) {
    int a = box[static_cast<std::size_t>(l.a)], b = box[static_cast<std::size_t>(l.b)];
    if (a == b) continue;
    if (a > b) std::swap(a, b);
    auto key = std::make_tuple(a, b, l.type, l.bandwidth_Bps);
    if (edges[key]++ == 0) edge_order.push_back(key);
  }
  for (const auto& key : edge_order) {
    const auto& [a, b, type, bw] = key;
    PictureEdge e;
    e.a = index_of[a];
    e.b = index_of[b];
    e.type = type;
    e.bandwidth_Bps = bw;
    e.count = edges[key];
    e.colour = link_colour(c, type);
    std::ostringstream label;
    if (e.count > 1) label << e.count << " x ";
    label << type << " " << gbps(bw);
    e.label = label.str();
    picture.edges.push_back(std::move(e));
  }
  return picture;
}

std::string cluster_dot(const Cluster& c, PictureLevel level) {
  const ClusterPicture picture = cluster_picture(c, level);
  std::ostringstream out;
  out << "// " << c.spec.name << ": bandwidths are per direction of full-duplex links (line rate)\n";
  out << "graph G {\n  graph [rankdir=BT, overlap=false, splines=true, fontname=\"Helvetica\"];\n"
      << "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n";
  for (const PictureBox& b : picture.boxes) out << "  " << b.id << " [label=" << quoted(b.label) << ", " << box_style(b) << "];\n";
  for (const PictureEdge& e : picture.edges)
    out << "  " << picture.boxes[static_cast<std::size_t>(e.a)].id << " -- " << picture.boxes[static_cast<std::size_t>(e.b)].id
        << " [label=" << quoted(e.label) << ", color=\"" << e.colour << "\", penwidth=" << 1 + static_cast<int>(std::log2(e.count))
        << "];\n";
  out << "}\n";
  return out.str();
}

namespace {

std::string xml(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

/// Each vertex's rail: a NIC's index in its node, a GPU's own NIC's, a switch's where every NIC
/// attached to it has the same one; -1 otherwise.
std::vector<int> rails(const Cluster& c) {
  std::vector<int> rail(boost::num_vertices(c.graph), -1);
  std::map<int, std::set<int>> switch_rails;
  for (std::size_t nic = 0; nic < c.nic_vertex.size(); ++nic) {
    const int r = c.rail_of_nic(static_cast<int>(nic));
    rail[static_cast<std::size_t>(c.nic_vertex[nic])] = r;
    if (nic < c.nic_switch.size() && c.nic_switch[nic] >= 0) switch_rails[c.switches[static_cast<std::size_t>(c.nic_switch[nic])].vertex].insert(r);
  }
  for (int g = 0; g < c.gpu_count() && c.nics_per_node() > 0; ++g)
    rail[static_cast<std::size_t>(c.gpu_vertex[static_cast<std::size_t>(g)])] = c.rail_of_nic(c.nic_of_gpu(g));
  for (const auto& [v, set] : switch_rails)
    if (set.size() == 1) rail[static_cast<std::size_t>(v)] = *set.begin();
  return rail;
}

}  // namespace

std::string cluster_graphml(const Cluster& c) {
  std::ostringstream out;
  out.precision(17);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n";
  const char* keys[][4] = {
      {"description", "graph", "description", "string"},
      {"name", "node", "name", "string"},
      {"kind", "node", "kind", "string"},
      {"tier", "node", "tier", "int"},
      {"node", "node", "node", "int"},
      {"rail", "node", "rail", "int"},
      {"type", "edge", "type", "string"},
      {"bandwidth_Bps", "edge", "bandwidth_Bps", "double"},
      {"efficiency", "edge", "efficiency", "double"},
      {"effective_bandwidth_Bps", "edge", "effective_bandwidth_Bps", "double"},
      {"latency_s", "edge", "latency_s", "double"},
  };
  for (const auto& k : keys)
    out << "  <key id=\"" << k[0] << "\" for=\"" << k[1] << "\" attr.name=\"" << k[2] << "\" attr.type=\"" << k[3] << "\"/>\n";
  out << "  <graph id=\"G\" edgedefault=\"undirected\">\n"
      << "    <data key=\"description\">" << xml(c.spec.name)
      << ": every link is full duplex; bandwidth_Bps is the line rate of one direction, effective_bandwidth_Bps "
         "the same after the link type's calibrated efficiency; node is the node index, rail the NIC rail "
         "(-1: none)</data>\n";
  const std::vector<int> rail = rails(c);
  for (std::size_t v = 0; v < boost::num_vertices(c.graph); ++v) {
    const VertexInfo& info = c.graph[v];
    out << "    <node id=\"n" << v << "\"><data key=\"name\">" << xml(info.name) << "</data><data key=\"kind\">"
        << to_string(info.kind) << "</data><data key=\"tier\">" << info.tier << "</data><data key=\"node\">" << info.node
        << "</data><data key=\"rail\">" << rail[v] << "</data></node>\n";
  }
  for (std::size_t l = 0; l < c.links.size(); ++l) {
    const Link& link = c.links[l];
    out << "    <edge id=\"e" << l << "\" source=\"n" << link.a << "\" target=\"n" << link.b << "\"><data key=\"type\">"
        << xml(link.type) << "</data><data key=\"bandwidth_Bps\">" << link.bandwidth_Bps << "</data><data key=\"efficiency\">"
        << c.spec.efficiency(link.type) << "</data><data key=\"effective_bandwidth_Bps\">"
        << c.effective_bandwidth_Bps(static_cast<LinkId>(l)) << "</data><data key=\"latency_s\">" << link.latency_s
        << "</data></edge>\n";
  }
  out << "  </graph>\n</graphml>\n";
  return out.str();
}

}  // namespace clustersim
