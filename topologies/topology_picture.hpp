#pragma once
// The cluster as pictures: Graphviz DOT that a person can read, at a level of detail that keeps a
// 16K-GPU fabric to a few dozen boxes, and GraphML that tools can read with every attribute the
// simulator uses (calibrated efficiency, rail and node index, bandwidth per direction).
#include <optional>
#include <string>
#include <vector>

#include "topologies/cluster.hpp"

namespace clustersim {

/// What one box of the picture stands for. full: every vertex; node: a node's GPUs, NVSwitches and
/// NICs in one box; leaf: the nodes and leaf switches that connect without a higher tier (a
/// scalable unit) in one box; spine: the same up to the spines (a pod). Switches above the level
/// that reach the same boxes are drawn as one box ("8 spines"). A direct network (torus, dragonfly),
/// whose routers join each other at one tier, is drawn by router at the leaf level (a router with
/// its nodes) and by router group at the spine level (a dragonfly's groups; a torus's planes, every
/// dimension but the last), the links between routers as edges between boxes.
enum class PictureLevel { full, node, leaf, spine };
std::optional<PictureLevel> parse_picture_level(const std::string& name);  // node, leaf, spine

/// One box of a picture: a vertex, a node, a unit or pod, or switches of one tier grouped.
struct PictureBox {
  std::string id;     // "b<first vertex>"
  std::string label;  // lines separated by \n: "unit 3\n32 nodes (96-127), 256 GPUs\n8 leaves"
  VertexKind kind = VertexKind::gpu;  // its first vertex's
  int tier = 0;       // a switch box's tier (1 leaf, 2 spine, 3 core); 0 otherwise
  bool single = true;        // one vertex
  bool holds_nodes = false;  // a node, unit or pod
  int gpus = 0;
  std::string plural;  // what boxes like it are called, for a picture that counts them: "units", "routers"
};

/// The links between two boxes of one type and bandwidth, collapsed into one edge.
struct PictureEdge {
  int a = 0, b = 0;  // indices into ClusterPicture::boxes, a < b in box order
  std::string type;
  BytesPerSecond bandwidth_Bps = 0;  // per link, per direction (line rate)
  int count = 0;                     // links collapsed into it
  std::string colour;                // the link type's (Okabe and Ito), "#0072B2"
  std::string label;                 // "32 x ndr 50.0 GB/s"
};

/// What `cluster_dot` and the report's SVG (simulator/topology_svg.hpp) both draw.
struct ClusterPicture {
  PictureLevel level = PictureLevel::full;
  std::vector<PictureBox> boxes;  // in order of their first vertex
  std::vector<PictureEdge> edges;
};
ClusterPicture cluster_picture(const Cluster& cluster, PictureLevel level);
/// A box's fill by what it holds (nodes, GPU, NVSwitch, NIC, switch tier: darker going up), and
/// whether its text is white on it; DOT and SVG use the same.
const char* box_fill(const PictureBox& box);
bool box_text_white(const PictureBox& box);

/// DOT: boxes styled by kind (GPU, NVSwitch, NIC, switch per tier, groups), and between two boxes
/// one edge per link type, coloured by it and labelled with the count and each link's bandwidth per
/// direction ("32 x ndr 50 GB/s"). The same cluster gives the same bytes.
std::string cluster_dot(const Cluster& cluster, PictureLevel level);

/// GraphML of every vertex and link: vertex name, kind, tier, node and rail (-1 where none: a rail
/// is a NIC's index in its node, a GPU's own NIC's, a leaf's when all its NICs share one), and per
/// link its type, line rate and calibrated bandwidth per direction, efficiency and latency.
std::string cluster_graphml(const Cluster& cluster);

}  // namespace clustersim
