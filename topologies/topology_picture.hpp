#pragma once
// The cluster as pictures: Graphviz DOT that a person can read, at a level of detail that keeps a
// 16K-GPU fabric to a few dozen boxes, and GraphML that tools can read with every attribute the
// simulator uses (calibrated efficiency, rail and node index, bandwidth per direction).
#include <optional>
#include <string>

#include "topologies/cluster.hpp"

namespace clustersim {

/// What one box of the picture stands for. full: every vertex; node: a node's GPUs, NVSwitches and
/// NICs in one box; leaf: the nodes and leaf switches that connect without a higher tier (a
/// scalable unit) in one box; spine: the same up to the spines (a pod). Switches above the level
/// that reach the same boxes are drawn as one box ("8 spines").
enum class PictureLevel { full, node, leaf, spine };
std::optional<PictureLevel> parse_picture_level(const std::string& name);  // node, leaf, spine

/// DOT: boxes styled by kind (GPU, NVSwitch, NIC, switch per tier, groups), and between two boxes
/// one edge per link type, coloured by it and labelled with the count and each link's bandwidth per
/// direction ("32 x ndr 50 GB/s"). The same cluster gives the same bytes.
std::string cluster_dot(const Cluster& cluster, PictureLevel level);

/// GraphML of every vertex and link: vertex name, kind, tier, node and rail (-1 where none: a rail
/// is a NIC's index in its node, a GPU's own NIC's, a leaf's when all its NICs share one), and per
/// link its type, line rate and calibrated bandwidth per direction, efficiency and latency.
std::string cluster_graphml(const Cluster& cluster);

}  // namespace clustersim
