#pragma once
// A scenario read from a YAML map that need not be a file of its own: a job written inline in a
// jobs scenario (jobs.hpp). Errors name the map's own file, lines and field paths.
#include <string>
#include <vector>

#include "topologies/yaml_reader.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

/// load_scenario on `root`, whose relative paths resolve against `path`'s folder.
ScenarioSpec load_scenario_node(const YamlField& root, const std::string& path, const std::vector<std::string>& overrides);

}  // namespace clustersim
