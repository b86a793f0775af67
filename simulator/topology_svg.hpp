#pragma once
// The cluster as an SVG picture drawn by our own code (no Graphviz at run time), for the HTML
// report's topology section and `topology --svg`: the boxes of cluster_picture() at a level
// (node, leaf or spine) in layers, nodes or units at the bottom and each switch tier above, edges
// coloured by link type with parallel links collapsed and labelled. A row of more than a dozen
// boxes shows its first and last five around one box that stands for the rest, so a 16K-GPU
// SuperPOD is a dozen boxes wide. Up to 24 edges carry their label; beyond, the legend does.
#include <string>

#include "topologies/cluster.hpp"
#include "topologies/topology_picture.hpp"

namespace clustersim {

/// The level a report draws a cluster at when none is asked for: the finest of node, leaf and
/// spine whose picture has at most 40 boxes, else spine.
PictureLevel default_picture_level(const Cluster& cluster);

/// One <svg> element, the same bytes for the same cluster and level.
std::string topology_svg(const Cluster& cluster, PictureLevel level);

/// "node", "leaf", "spine" or "full".
const char* to_string(PictureLevel level);

}  // namespace clustersim
