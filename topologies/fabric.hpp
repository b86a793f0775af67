#pragma once
// Fabrics are pluggable: each kind registers a builder by name, and the YAML field fabric.type picks
// one. A builder checks its fields against the node, then wires the nodes' NICs into switches.
#include <string>
#include <vector>

#include "topologies/cluster_spec.hpp"

namespace clustersim {

struct Cluster;

class FabricBuilder {
 public:
  virtual ~FabricBuilder() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  /// Throws UserError (through `field`) when the spec cannot be built.
  virtual void validate(const FabricSpec& fabric, const NodeSpec& node, const YamlField& field) const = 0;
  /// Adds the switches and links; the nodes (GPUs, NVSwitch, NICs) already exist.
  virtual void build(Cluster& cluster) const = 0;
  /// Whether the fabric takes NICs of several ports (fabric.planes wires each to its own plane).
  virtual bool wires_planes() const { return false; }
};

const FabricBuilder* find_fabric(const std::string& name);
std::vector<const FabricBuilder*> all_fabrics();
std::string fabric_names();

/// Rejects fields the fabric type does not use, so they are never silently ignored.
void reject_unused_fields(const FabricSpec& fabric, const YamlField& field, bool uses_units, bool uses_tiers);

/// Down and up ports of a switch of `radix` ports at a down:up ratio of `oversubscription`.
struct PortSplit {
  int down = 0;
  int up = 0;
};
PortSplit split_ports(const TierSpec& tier);

/// Every tier below the top must keep at least one port down and one up.
void check_ports(const FabricSpec& fabric, const YamlField& field);

/// The Clos layers above a set of leaves. `pods` partitions the leaves; with two tiers it must be a
/// single pod. Spines of a pod connect to every leaf of the pod, cores of plane j to spine j of every
/// pod, each pair by an equal number of parallel links.
/// `prefix` starts every switch name, so the trees of several planes or rails stay apart in DOT.
void build_clos_above(Cluster& cluster, const std::vector<std::vector<int>>& pods, const std::vector<TierSpec>& tiers,
                      const std::string& prefix = "");
/// The switch counts build_clos_above would produce, for validation: {spines per pod, cores per plane}.
struct ClosShape {
  int spines_per_pod = 0;
  int cores_per_plane = 0;
  std::string problem;  // empty when buildable
};
ClosShape clos_shape(int pods, int leaves_per_pod, const std::vector<TierSpec>& tiers);

/// A fat tree over a list of NIC ports (fabric_tree.cpp): they fill leaves in list order and the
/// Clos above joins the leaves. One tier is one switch; three tiers over one pod drop the core. The
/// fat_tree fabric is this over every port; rail_only builds one per rail, multi_plane one per plane.
struct TreeLayout {
  int leaves = 0;
  int leaves_per_pod = 0;
  int pods = 0;
  std::vector<TierSpec> tiers;  // the tiers actually built
  std::string problem;          // empty when buildable
};
TreeLayout tree_layout(long ports, const std::vector<TierSpec>& tiers);
/// Builds tree_layout(ports.size(), tiers), which must have no problem; `ports` are nic_port ids.
void build_tree_over(Cluster& cluster, const std::vector<int>& ports, const std::vector<TierSpec>& tiers,
                     const std::string& prefix);

}  // namespace clustersim
