#pragma once
// What `clustersim sweep` prints for its cluster points: the text table, the --json document's
// points (also --csv's rows), the Pareto front of tokens/s against capital cost and its SVG.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "simulator/cli/search_verify.hpp"
#include "simulator/cluster_cost.hpp"
#include "simulator/cluster_sweep.hpp"
#include "topologies/bill_of_materials.hpp"

namespace clustersim::cli {

/// One cluster point, searched and priced.
struct SweepRow {
  ClusterPoint point;
  std::string cluster_name;
  int gpus = 0;  // the cluster's, which may exceed the job's when nodes do not divide it
  BillOfMaterials bom;
  ClusterCost cost;
  long candidates = 0, valid = 0;
  std::vector<Verified> verified;  // engine's fastest first; failures last
  bool on_front = false;
  /// The engine's fastest configuration, or nullptr when none of the top ran.
  const Verified* best() const { return !verified.empty() && verified.front().ok ? &verified.front() : nullptr; }
  double tokens_per_s() const { return best() ? best()->tokens_per_s : 0; }
};

/// Marks the points no cheaper (or equally cheap) point matches in tokens/s.
void mark_pareto_front(std::vector<SweepRow>& rows);

nlohmann::ordered_json sweep_point_json(const SweepRow& row, const Economics& e);
void print_sweep_table(const std::string& title, const std::vector<SweepRow>& rows, const Economics& e);
std::string sweep_svg(const std::string& title, const std::vector<SweepRow>& rows);

}  // namespace clustersim::cli
