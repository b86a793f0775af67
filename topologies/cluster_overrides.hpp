#pragma once
// `--set cluster.PATH=VALUE` (run, compare, collective, topology): a field of a cluster file changed
// on the command line before the file's schema is checked, e.g. cluster.fabric.tiers.0.oversubscription=2
// (a number indexes a list). Every mapping and list on the way must exist; the last key may be new
// (the cluster's own schema then judges it, and an unknown key is the command line's error).
#include <string>
#include <vector>

#include "topologies/cluster_spec.hpp"
#include "topologies/yaml_reader.hpp"

namespace clustersim {

/// Whether a --set names a cluster field ("cluster.PATH=VALUE") rather than a scenario's.
bool is_cluster_override(const std::string& text);

/// The cluster in `root` (a cluster file's tree) with `overrides` applied, parsed.
ClusterSpec parse_cluster_spec_with(const YamlField& root, const std::vector<std::string>& overrides);

/// load_cluster_spec (cluster_spec.hpp) with `overrides` applied first.
ClusterSpec load_cluster_spec_with(const std::string& path, const std::vector<std::string>& overrides,
                                   const std::string& named_by = "");

}  // namespace clustersim
