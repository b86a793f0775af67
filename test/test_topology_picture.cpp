// Topology pictures: the DOT a person reads (styled by kind and link type, parallel links as one
// labelled edge, large fabrics drawn by scalable unit or pod), the GraphML tools read (efficiency,
// rail, node, bandwidth per direction) and the oversubscription per tier of the topology report.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>
#include <string>

#include "support.hpp"
#include "topologies/report.hpp"
#include "topologies/tier_oversubscription.hpp"
#include "topologies/topology_picture.hpp"
#include "simulator/topology_svg.hpp"

using namespace clustersim;
namespace test = clustersim::test;

namespace {

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

int edges(const std::string& dot) { return count(dot, " -- "); }
int boxes(const std::string& dot) { return count(dot, " [label=") - edges(dot); }

/// The label of the one edge between two boxes whose labels start as given.
std::string edge_label(const std::string& dot, const std::string& a, const std::string& b) {
  auto id_of = [&](const std::string& label) {
    std::smatch m;
    REQUIRE(std::regex_search(dot, m, std::regex("  (b[0-9]+) \\[label=\"" + label)));
    return m[1].str();
  };
  const std::string x = id_of(a), y = id_of(b);
  std::smatch m;
  if (std::regex_search(dot, m, std::regex("  " + x + " -- " + y + " \\[label=\"([^\"]*)\"")) ||
      std::regex_search(dot, m, std::regex("  " + y + " -- " + x + " \\[label=\"([^\"]*)\"")))
    return m[1].str();
  FAIL("no edge between " << a << " and " << b);
  return "";
}

}  // namespace

TEST_CASE("DOT draws each vertex styled by kind and labels each link with its type and bandwidth per direction") {
  // Two DGX H100 nodes on one switch: 2 x (8 GPUs + NVSwitch + 8 NICs) + the switch, 48 links,
  // each between its own pair of vertices.
  const Cluster c = test::cluster_from_yaml(
      test::shipped_with("scenarios/clusters/dgx-h100-superpod.yaml", "", "").substr(
          0, test::shipped_with("scenarios/clusters/dgx-h100-superpod.yaml", "", "").find("fabric:")) +
      "fabric: {type: single_switch, nodes: 2, link_type: ndr, bandwidth_Gbps: 400, latency_us: 0.3}\n");
  const std::string dot = cluster_dot(c, PictureLevel::full);
  CHECK(dot.find("graph G {") != std::string::npos);
  CHECK(boxes(dot) == 35);
  CHECK(edges(dot) == 48);
  CHECK(count(dot, "shape=box, style=filled, fillcolor=\"#a1d99b\"") == 16);  // GPUs
  CHECK(count(dot, "shape=hexagon") == 2);                                    // NVSwitches
  CHECK(count(dot, "shape=ellipse") == 16);                                   // NICs
  // Line rates per direction: NVLink4 450 GB/s, NDR 400 Gb/s = 50 GB/s, PCIe5 64 GB/s.
  CHECK(count(dot, "[label=\"nvlink4 450 GB/s\"") == 16);
  CHECK(count(dot, "[label=\"ndr 50.0 GB/s\"") == 16);
  CHECK(count(dot, "[label=\"pcie5 64.0 GB/s\"") == 16);
  // One colour per link type.
  std::set<std::string> colours;
  const std::regex colour("color=\"(#[0-9A-F]{6})\"");
  for (std::sregex_iterator it(dot.begin(), dot.end(), colour), end; it != end; ++it)
    colours.insert((*it)[1].str());
  CHECK(colours.size() == 3);
  CHECK(dot == cluster_dot(c, PictureLevel::full));  // deterministic
}

TEST_CASE("parallel links between two vertices are one edge that says how many") {
  // The 127-node SuperPOD: 4072 links, of which each leaf's 32 uplinks go 2 to each of 16 spines
  // (test_topology): 32 leaves x 16 spines pairs of two.
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const std::string dot = cluster_dot(c, PictureLevel::full);
  CHECK(count(dot, "[label=\"2 x ndr 50.0 GB/s\"") == 32 * 16);
  CHECK(edges(dot) == 4072 - 32 * 16);
}

TEST_CASE("a 16K-GPU SuperPOD is drawn by scalable unit or by pod") {
  // 2048 nodes in 64 units of 32; a unit has 8 rail leaves and 8 spines; the cores join them.
  // Radix 64 at 1:1: a leaf has 32 NIC ports and 32 uplinks, a spine 32 down and 32 up.
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod-16k.yaml");
  const std::string leaf = cluster_dot(c, PictureLevel::leaf);
  CHECK(count(leaf, "shape=box3d, style=filled") == 64);  // units
  CHECK(count(leaf, "[label=\"8 spines\"") == 64);         // each unit's spines reach it alone
  CHECK(count(leaf, "[label=\"256 cores\"") == 1);         // the cores reach every spine group: 64 x 8 x 32 / 64
  CHECK(boxes(leaf) == 64 + 64 + 1);
  CHECK(leaf.find("[label=\"unit 0\\n32 nodes (0-31), 256 GPUs\\n8 leaves\"") != std::string::npos);
  // A unit's 8 leaves x 32 uplinks reach its spines.
  CHECK(edge_label(leaf, "unit 0", "8 spines") == "256 x ndr 50.0 GB/s");
  const std::string spine = cluster_dot(c, PictureLevel::spine);
  CHECK(boxes(spine) == 64 + 1);
  CHECK(edges(spine) == 64);
  // A pod's 8 spines x 32 uplinks reach the cores.
  CHECK(edge_label(spine, "pod 0", "256 cores") == "256 x ndr 50.0 GB/s");
  const std::string node = cluster_dot(c, PictureLevel::node);
  CHECK(count(node, "[label=\"node ") == 2048);
  CHECK(node.find("[label=\"node 5\\n8 GPUs, 1 NVSwitch, 8 NICs\"") != std::string::npos);
  CHECK(spine.size() < 20000);  // a picture, not a 143,532 pt strip
}

TEST_CASE("the report's SVG draws the 16K-GPU SuperPOD by unit: five units each side of one box for the rest") {
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod-16k.yaml");
  const std::string svg = topology_svg(c, PictureLevel::leaf);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  // Rows of 64 units and 64 spine groups keep 5 + 5 each; the cores are one box: 21 boxes drawn.
  CHECK(count(svg, "<g class=\"box\">") == 21);
  CHECK(count(svg, "<g class=\"box elided\">") == 2);
  CHECK(count(svg, ">... 54 more units<") == 1);
  CHECK(count(svg, ">... 54 more spine groups<") == 1);
  CHECK(count(svg, ">like these<") == 2);  // every unit and every spine group is wired alike
  CHECK(count(svg, ">unit 0<") == 1);
  CHECK(count(svg, ">unit 63<") == 1);
  CHECK(count(svg, ">unit 30<") == 0);
  CHECK(count(svg, ">256 cores</text>") == 1);
  // 10 units to their spines, 10 spine groups to the cores: 20 lines, each labelled as in DOT.
  CHECK(count(svg, "<line x1") - count(svg, "stroke-dasharray") - count(svg, "<g class=\"legend\">") == 20);
  CHECK(count(svg, "class=\"edge-label\"") == 20);
  CHECK(count(svg, ">256 x ndr 50.0 GB/s</text>") == 20 + 1);  // and once in the legend
  // A dozen boxes wide: 11 slots of 190 px and the margins.
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, std::regex("width=\"([0-9.]+)\"")));
  CHECK(std::stod(m[1]) == Approx(11 * 190 + 40));
  CHECK(default_picture_level(c) == PictureLevel::spine);  // 65 boxes at spine, 129 at leaf: the coarsest
}

TEST_CASE("a small cluster is drawn node by node with every edge labelled, and the same bytes each time") {
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-a100-superpod.yaml");
  const ClusterPicture node = cluster_picture(c, PictureLevel::node);
  const std::string svg = topology_svg(c, PictureLevel::node);
  CHECK(svg == topology_svg(c, PictureLevel::node));
  std::size_t nodes = 0;
  for (const PictureBox& b : node.boxes) nodes += b.holds_nodes;
  CHECK(nodes == static_cast<std::size_t>(c.spec.fabric.nodes));
  if (node.boxes.size() <= 40) CHECK(default_picture_level(c) == PictureLevel::node);
  else CHECK(default_picture_level(c) != PictureLevel::node);
}

TEST_CASE("GraphML carries calibrated efficiency, rail and node index, and says bandwidth is per direction") {
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const std::string g = cluster_graphml(c);
  CHECK(count(g, "<node ") == static_cast<int>(boost::num_vertices(c.graph)));
  CHECK(count(g, "<edge ") == static_cast<int>(c.links.size()));
  CHECK(g.find("bandwidth_Bps is the line rate of one direction") != std::string::npos);
  for (const char* key : {"efficiency", "effective_bandwidth_Bps", "rail", "node", "latency_s"})
    CHECK(count(g, std::string("attr.name=\"") + key + "\"") == 1);
  // GPU 13 is node 1's local GPU 5: rail 5; its NIC too.
  CHECK(g.find("<data key=\"name\">n1.gpu5</data><data key=\"kind\">gpu</data><data key=\"tier\">0</data><data key=\"node\">1</data><data key=\"rail\">5</data>") != std::string::npos);
  // The NDR efficiency of the cluster file (0.94) and 50 GB/s x 0.94.
  std::smatch m;
  REQUIRE(std::regex_search(g, m, std::regex("<data key=\"type\">ndr</data><data key=\"bandwidth_Bps\">([0-9.e+]+)</data><data key=\"efficiency\">([0-9.]+)</data><data key=\"effective_bandwidth_Bps\">([0-9.e+]+)</data>")));
  CHECK(std::stod(m[1]) == Approx(50e9));
  CHECK(std::stod(m[2]) == Approx(c.spec.efficiency("ndr")));
  CHECK(std::stod(m[3]) == Approx(50e9 * c.spec.efficiency("ndr")));
}

TEST_CASE("oversubscription per tier is down over up bandwidth as built, and the worst switch's") {
  // roce-3tier-clos: 512 nodes x 8 NICs on leaves of radix 64 at 1:1 (32 down, 32 up): 128
  // leaves. Spines of radix 64 at 3:1 (48 down, 16 up) make pods of 48 leaves: 3 pods, the last
  // of 32 leaves; a pod's 48 x 32 leaf uplinks take 32 spines. So 4096 leaf uplinks come into
  // 96 spines with 16 up each: 4096 : 1536 = 8:3 over the tier, 3:1 at a full pod's spine.
  const Cluster& c = test::shipped_cluster("scenarios/clusters/roce-3tier-clos.yaml");
  const auto tiers = tier_oversubscription(c);
  REQUIRE(tiers.size() == 3);
  CHECK(tiers[0].switches == 128);
  CHECK(tiers[0].ratio() == Approx(1.0));
  CHECK(tiers[1].switches == 96);
  CHECK(tiers[1].ratio() == Approx(8.0 / 3));
  CHECK(tiers[1].worst_switch_ratio == Approx(3.0));
  CHECK(tiers[2].up_Bps == 0);
  CHECK(tiers[2].ratio() == 0);
  const auto r = test::run_cli("topology " + test::source_path("scenarios/clusters/roce-3tier-clos.yaml"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.stdout_text.find("2.67:1 (worst switch 3.00:1)") != std::string::npos);
  CHECK(r.stdout_text.find("top tier") != std::string::npos);
}

TEST_CASE("topology --svg and --report draw the cluster at --level, by default the finest with at most 40 boxes") {
  const std::string cluster = test::source_path("scenarios/clusters/dgx-h100-superpod-16k.yaml");
  const std::string svg = test::temp_file("", ".svg"), html = test::temp_file("", ".html");
  auto r = test::run_cli("topology " + cluster + " --svg " + svg + " --report " + html);
  REQUIRE(r.exit_code == 0);
  const std::string picture = test::read_file(svg), page = test::read_file(html);
  CHECK(picture.rfind("<svg ", 0) == 0);
  CHECK(count(picture, ": spine level, 65 boxes") == 1);
  CHECK(count(page, "<section id=\"topology\">") == 1);
  CHECK(count(page, "<section id=\"oversubscription\">") == 1);
  CHECK(page.find(picture) != std::string::npos);  // the same picture, inline
  REQUIRE(test::run_cli("topology " + cluster + " --svg " + svg + " --level leaf").exit_code == 0);
  CHECK(count(test::read_file(svg), ": leaf level, 129 boxes") == 1);
}

TEST_CASE("topology --level without --dot, --svg or --report, or at an unknown level, is one line and exit 2") {
  const std::string cluster = test::source_path("scenarios/clusters/dgx-h100-superpod.yaml");
  auto r = test::run_cli("topology " + cluster + " --level leaf");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text == "error: command line: --level: expected --dot, --svg or --report as well: it sets the level of the picture\n");
  r = test::run_cli("topology " + cluster + " --dot /tmp/clustersim-level.dot --level rack");
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(r.stderr_text == "error: command line: --level: expected node, leaf or spine, got 'rack'\n");
}

namespace {

/// Every number in an SVG's attributes and path data is >= 0: nothing drawn off the picture's top or left.
bool nothing_above_or_left(const std::string& svg) {
  return svg.find("=\"-") == std::string::npos && !std::regex_search(svg, std::regex(R"(d="[^"]*-[0-9])"));
}

/// Edges of a picture by the number of links each collapses: {links: edges}.
std::map<int, int> edge_counts(const ClusterPicture& p) {
  std::map<int, int> out;
  for (const PictureEdge& e : p.edges) ++out[e.count];
  return out;
}

}  // namespace

TEST_CASE("a torus is drawn by router at the leaf level and by plane at the spine level, routers joined by their links") {
  // 4x4x4: one router a node, each with 6 neighbours (+-1 in x, y and z, wrapping): 64 x 6 / 2 =
  // 192 router links of 1600 Gb/s (200 GB/s). A plane (fixed z) holds 16 routers; each router has
  // one link up and one down in z, so planes z and z+1 (mod 4) share 16 links: a ring of 4 edges.
  const Cluster& c = test::shipped_cluster("scenarios/clusters/torus-h100-4x4x4.yaml");
  const ClusterPicture leaf = cluster_picture(c, PictureLevel::leaf);
  REQUIRE(leaf.boxes.size() == 64);
  CHECK(leaf.boxes[5].label == "router 5\n1 node (5), 8 GPUs\n1 router");
  CHECK(leaf.boxes[5].plural == "routers");
  CHECK(leaf.edges.size() == 192);
  CHECK(edge_counts(leaf) == std::map<int, int>{{1, 192}});
  CHECK(leaf.edges[0].label == "ndr 200 GB/s");
  const ClusterPicture spine = cluster_picture(c, PictureLevel::spine);
  REQUIRE(spine.boxes.size() == 4);
  CHECK(spine.boxes[1].label == "plane 1\n16 nodes (16-31), 128 GPUs\n16 routers");
  REQUIRE(spine.edges.size() == 4);
  for (const PictureEdge& e : spine.edges) CHECK(e.label == "16 x ndr 200 GB/s");
  // 128 boxes by node, 64 by router: the report draws it by plane.
  CHECK(default_picture_level(c) == PictureLevel::spine);
  const std::string svg = topology_svg(c, PictureLevel::spine);
  CHECK(count(svg, "<g class=\"box\">") == 4);
  CHECK(count(svg, "<path d=\"M ") == 4);  // the ring, as arcs over one row
  CHECK(count(svg, "class=\"edge-label\"") == 4);
  CHECK(nothing_above_or_left(svg));
  // By router: a row of 64 keeps 5 each side and says what the rest are.
  const std::string by_router = topology_svg(c, PictureLevel::leaf);
  CHECK(count(by_router, ">... 54 more routers<") == 1);
  CHECK(count(by_router, ">like these<") == 1);
  CHECK(nothing_above_or_left(by_router));
  CHECK(count(topology_svg(c, PictureLevel::node), ">... 54 more routers<") == 1);  // not "leaves"
}

TEST_CASE("a dragonfly is drawn by router at the leaf level and by group at the spine level, one global link between each two groups") {
  // 9 groups of 4 routers, 2 global links a router: g = a h + 1 = 9, the balanced dragonfly of Kim
  // et al. (ISCA 2008), where every two groups share exactly one global link: C(9, 2) = 36 edges.
  // Inside a group, 4 routers all to all: 6 local links; 9 x 6 + 36 = 90 router links in all.
  const Cluster& c = test::shipped_cluster("scenarios/clusters/dragonfly-h100.yaml");
  const ClusterPicture spine = cluster_picture(c, PictureLevel::spine);
  REQUIRE(spine.boxes.size() == 9);
  CHECK(spine.boxes[2].label == "group 2\n4 nodes (8-11), 32 GPUs\n4 routers");
  CHECK(spine.edges.size() == 36);
  CHECK(edge_counts(spine) == std::map<int, int>{{1, 36}});
  std::set<std::pair<int, int>> pairs;
  for (const PictureEdge& e : spine.edges) pairs.insert({e.a, e.b});
  CHECK(pairs.size() == 36);
  const ClusterPicture leaf = cluster_picture(c, PictureLevel::leaf);
  REQUIRE(leaf.boxes.size() == 36);
  std::size_t links = 0;
  for (const PictureEdge& e : leaf.edges) links += static_cast<std::size_t>(e.count);
  CHECK(links == 90);
  CHECK(default_picture_level(c) == PictureLevel::leaf);  // 72 boxes by node, 36 by router
  const std::string svg = topology_svg(c, PictureLevel::spine);
  CHECK(count(svg, "<g class=\"box\">") == 9);
  CHECK(count(svg, "<path d=\"M ") == 36);
  CHECK(count(svg, "class=\"edge-label\"") == 0);  // 36 edges: more than 24, so the legend says it
  CHECK(count(svg, ">ndr 50.0 GB/s</text>") == 1);
  CHECK(nothing_above_or_left(svg));
  CHECK(nothing_above_or_left(topology_svg(c, PictureLevel::leaf)));
}
