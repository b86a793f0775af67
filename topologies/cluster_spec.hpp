#pragma once
// A cluster as the user writes it: node, NICs, fabric and per-link-type calibration. Pure data,
// read from YAML by load_cluster_spec(); the graph is built from it by build_cluster().
#include <map>
#include <string>
#include <vector>

#include "topologies/units.hpp"
#include "topologies/yaml_reader.hpp"

namespace clustersim {

/// Calibration of one link type: the fraction of line rate that a long transfer achieves.
/// One value per link type, fixed in the cluster file before any comparison.
struct LinkType {
  std::string name;
  double bandwidth_efficiency = 1.0;
};

/// A physical link class with its line rate and latency.
struct LinkSpec {
  std::string type;  // key into ClusterSpec::link_types
  BytesPerSecond bandwidth_Bps = 0;
  Seconds latency_s = 0;
};

enum class ScaleUp { nvswitch, full_mesh };

struct NodeSpec {
  int gpus = 0;
  ScaleUp scale_up = ScaleUp::nvswitch;
  LinkSpec scale_up_link;      // nvswitch: per GPU per direction; full_mesh: per GPU pair per direction
  bool nvls = false;           // the NVSwitch reduces and multicasts in the switch (NVLink SHARP, NVSwitch gen 3+)
  /// Two-level NVSwitch (NVL576-style): GPUs per first-level domain, each domain's switch joined to
  /// one second-level switch; 0: one NVSwitch for the whole node.
  int scale_up_domain_gpus = 0;
  double scale_up_oversubscription = 1.0;  // a first-level switch's GPU bandwidth over its uplink's
  int nics = 0;
  int nic_ports = 1;           // ports per NIC, each its own link at nic_link's rate (multi_plane wires them to planes)
  LinkSpec nic_link;           // NIC port <-> first switch
  std::vector<int> nic_gpu;    // nic_gpu[i]: the GPU NIC i sits next to
  LinkSpec pcie_link;          // GPU <-> its NIC
};

struct TierSpec {
  int radix = 0;
  double oversubscription = 1.0;  // down:up port ratio of this tier's switches
  int switches = 0;  // above the leaves: spines per pod, cores per plane; 0: the fewest that take every uplink
};

/// How a switch picks among equal-cost next hops (topologies/router.hpp).
enum class Routing { ecmp, adaptive, spray, valiant };
const char* to_string(Routing routing);

/// How a saturated link splits between the flows on it (simulator/fluid_solver.hpp). latency: in
/// inverse proportion to each flow's latency, SimGrid CM02's default (TCP's bias against long round
/// trips); equal: one share per flow (connection), as an RDMA NIC or NVSwitch port arbitrates.
enum class Sharing { latency, equal };
const char* to_string(Sharing sharing);

struct FabricSpec {
  std::string type;            // a registered fabric builder (`clustersim list` names them)
  int nodes = 0;
  int nodes_per_unit = 0;      // rail_optimized: nodes per scalable unit
  LinkSpec switch_link;        // switch <-> switch
  std::vector<TierSpec> tiers; // tier 1 = leaves
  int planes = 0;              // multi_plane: planes, each with its own switches (0: not given)
  std::vector<int> dims;       // torus: switches along each dimension, their product the node count
  int groups = 0;              // dragonfly: groups of all-to-all routers
  int routers_per_group = 0;   // dragonfly
  int global_links = 0;        // dragonfly: links from each router to other groups
  Routing routing = Routing::ecmp;
  /// ecmp: queue pairs a GPU pair's connection spreads its bytes over, each hashed onto its own
  /// equal-cost path (NCCL_IB_QPS_PER_CONNECTION with NCCL_IB_SPLIT_DATA_ON_QPS; Meta's 16 flows
  /// under Enhanced-ECMP). 1: one hash per flow.
  int qps_per_connection = 1;
  Sharing sharing = Sharing::equal;  // on every link the engine models, NVLink and PCIe too
  bool sharp = false;          // the switches reduce in the network (InfiniBand SHARP): CollNet can run
};

/// Where checkpoints go (`storage:`, optional): a parallel file system or object store. A job's
/// checkpoint write is bounded by the aggregate and by its nodes' own links to it; reads (the
/// restart's checkpoint load) by the read figures, the write figures when not given.
struct StorageSpec {
  bool declared = false;
  int line = 0;                            // where `storage:` is written
  BytesPerSecond write_Bps = 0;            // aggregate
  BytesPerSecond read_Bps = 0;             // aggregate
  BytesPerSecond per_node_Bps = 0;         // each node's link to storage, either direction
};

struct ClusterSpec {
  std::string file;
  std::string name;
  std::string gpu;
  std::map<std::string, LinkType> link_types;
  NodeSpec node;
  FabricSpec fabric;
  StorageSpec storage;

  int gpu_count() const { return fabric.nodes * node.gpus; }
  double efficiency(const std::string& link_type) const { return link_types.at(link_type).bandwidth_efficiency; }
};

/// Reads and validates a cluster file. Throws UserError on any bad field.
ClusterSpec load_cluster_spec(const std::string& path, const std::string& named_by = "");
ClusterSpec parse_cluster_spec(const YamlField& root);

}  // namespace clustersim
