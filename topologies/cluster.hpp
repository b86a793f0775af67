#pragma once
// A cluster built into a graph: vertices are GPUs, NVSwitches, NICs and fabric switches; edges are
// full-duplex links with a line rate and latency per direction. Alongside the Boost graph it keeps
// the flat indices that routing needs, so no route is ever stored all-pairs.
#include <boost/graph/adjacency_list.hpp>

#include <string>
#include <vector>

#include "topologies/cluster_spec.hpp"

namespace clustersim {

enum class VertexKind { gpu, nvswitch, nic, fabric_switch };
const char* to_string(VertexKind kind);

struct VertexInfo {
  VertexKind kind = VertexKind::gpu;
  int tier = 0;  // 0 inside a node, 1 leaf, 2 spine, 3 core
  int node = -1;
  std::string name;
};

using LinkId = int;

struct Link {
  int a = 0, b = 0;  // vertices; traversing a -> b is the "forward" direction
  std::string type;
  BytesPerSecond bandwidth_Bps = 0;  // line rate per direction
  Seconds latency_s = 0;
};

/// One direction of one link: 2*link for a->b, 2*link+1 for b->a.
using LinkDir = int;
inline LinkDir forward(LinkId l) { return 2 * l; }
inline LinkDir backward(LinkId l) { return 2 * l + 1; }
inline LinkId link_of(LinkDir d) { return d / 2; }

struct EdgeInfo {
  LinkId link = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexInfo, EdgeInfo>;

struct SwitchPort {
  int peer_switch;  // switch index
  LinkId link;
};

struct Switch {
  int vertex = 0;
  int tier = 1;
  std::vector<SwitchPort> ports;  // links to other switches only
};

struct Cluster {
  ClusterSpec spec;
  Graph graph;
  std::vector<Link> links;

  std::vector<int> gpu_vertex;         // GPU id (node*gpus_per_node + local) -> vertex
  std::vector<LinkId> gpu_switch_link; // nvswitch nodes: GPU <-> NVSwitch (its first-level one)
  /// Two-level NVSwitch nodes: per (node, domain), node-major, first-level switch <-> second-level.
  std::vector<LinkId> scale_up_uplink;
  std::vector<LinkId> mesh_link;       // full-mesh nodes: [node][i][j] flattened, i != j
  std::vector<int> nic_vertex;         // NIC id (node*nics_per_node + local) -> vertex
  std::vector<LinkId> nic_pcie_link;   // NIC <-> the GPU it sits next to
  // Per NIC port, port-major (nic_port(nic, port)), so [nic] is the NIC's first port.
  std::vector<LinkId> nic_port_link;   // NIC port <-> its fabric switch
  std::vector<int> nic_switch;         // NIC port -> switch index
  /// rail_only: NICs of different rails share no switch, so a transfer between rails first crosses
  /// the scale-up domain to the GPU next to the destination's rail (topologies/router.hpp).
  bool rails_isolated = false;
  std::vector<Switch> switches;        // fabric switches
  std::vector<int> switch_of_vertex;   // vertex -> switch index, -1 if not a fabric switch

  int nodes() const { return spec.fabric.nodes; }
  int gpus_per_node() const { return spec.node.gpus; }
  int nics_per_node() const { return spec.node.nics; }
  int ports_per_nic() const { return spec.node.nic_ports; }
  int nic_count() const { return static_cast<int>(nic_vertex.size()); }
  /// The id of port `port` of NIC `nic`, the index into nic_port_link and nic_switch.
  int nic_port(int nic, int port) const { return port * nic_count() + nic; }
  int gpu_count() const { return static_cast<int>(gpu_vertex.size()); }
  int node_of_gpu(int gpu) const { return gpu / gpus_per_node(); }
  int local_of_gpu(int gpu) const { return gpu % gpus_per_node(); }
  /// Two-level NVSwitch: first-level domains per node (1 where there is one NVSwitch level).
  int scale_up_domains() const { return spec.node.scale_up_domain_gpus > 0 ? spec.node.gpus / spec.node.scale_up_domain_gpus : 1; }
  /// The first-level domain of a GPU within its node (0 on one level).
  int scale_up_domain_of_gpu(int gpu) const {
    return spec.node.scale_up_domain_gpus > 0 ? local_of_gpu(gpu) / spec.node.scale_up_domain_gpus : 0;
  }
  /// Two-level NVSwitch: the uplink of a GPU's first-level switch.
  LinkId scale_up_uplink_of_gpu(int gpu) const {
    return scale_up_uplink[static_cast<std::size_t>(node_of_gpu(gpu) * scale_up_domains() + scale_up_domain_of_gpu(gpu))];
  }
  /// The NIC a GPU uses by default: one sitting next to it, else the NIC with index local % nics.
  int nic_of_gpu(int gpu) const;
  /// The GPU a NIC sits next to.
  int gpu_of_nic(int nic) const;
  /// The rail of a NIC: its index within the node.
  int rail_of_nic(int nic) const { return nic % nics_per_node(); }
  /// Bandwidth of one direction after the link type's calibrated efficiency.
  BytesPerSecond effective_bandwidth_Bps(LinkId l) const;
  /// "from -> to" for one direction of a link, for messages.
  std::string direction_name(LinkDir d) const;

  // Construction helpers used by the fabric builders.
  int add_vertex(VertexKind kind, int tier, int node, std::string name);
  LinkId add_link(int a, int b, const LinkSpec& spec);
  int add_switch(int tier, std::string name);
  LinkId connect_switches(int lower, int upper);
  void attach_nic(int nic, int switch_index) { attach_nic_port(nic_port(nic, 0), switch_index); }
  void attach_nic_port(int nic_port_id, int switch_index);
};

/// Builds the graph of a validated spec.
Cluster build_cluster(const ClusterSpec& spec);
/// load_cluster_spec + build_cluster.
Cluster load_cluster(const std::string& path, const std::string& named_by = "");

}  // namespace clustersim
