#include "simulator/cluster_sweep.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"

namespace clustersim {
namespace {

const char* const kPlain[] = {"cluster", "gpu", "gpus_per_node", "nics_per_node", "nic_Gbps", "fabric", "rails"};
const char* const kPerTier[] = {"oversubscription", "radix", "switches"};

[[noreturn]] void bad(const std::string& expected) { throw UserError("command line", 0, "--vary-cluster", expected); }

/// "oversubscription.2" -> ("oversubscription", 2); a plain name -> (name, 0).
std::pair<std::string, int> split_tier(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return {name, 0};
  const std::string tier = name.substr(dot + 1);
  if (tier.empty() || tier.size() > 1 || tier[0] < '1' || tier[0] > '3') return {name, -1};
  return {name.substr(0, dot), tier[0] - '0'};
}

int count_value(const std::string& point, const std::string& dim, const std::string& value) {
  int n = 0;
  for (char ch : value) {
    if (ch < '0' || ch > '9' || n > 100000) bad(fmt::format("point {}: {}: expected a whole number, got '{}'", point, dim, value));
    n = n * 10 + (ch - '0');
  }
  if (value.empty() || n < 1) bad(fmt::format("point {}: {}: expected a whole number of at least 1, got '{}'", point, dim, value));
  return n;
}

/// NIC i sits next to GPU i * gpus / nics: spread evenly, two to a GPU when there are twice as many.
void place_nics(YAML::Node nics, int gpus, int count) {
  nics["count"] = count;
  YAML::Node next_to(YAML::NodeType::Sequence);
  for (int i = 0; i < count; ++i) next_to.push_back(static_cast<int>(static_cast<long>(i) * gpus / count));
  next_to.SetStyle(YAML::EmitterStyle::Flow);
  nics["gpus"] = next_to;
}

/// rail_optimized needs a scalable unit: one leaf's worth of down ports unless the file has one.
void set_fabric_type(YAML::Node fabric, const std::string& type) {
  fabric["type"] = type;
  if (type != "rail_optimized") {
    fabric.remove("nodes_per_unit");
    return;
  }
  if (fabric["nodes_per_unit"]) return;
  int down = 1;
  if (fabric["tiers"] && fabric["tiers"].IsSequence() && fabric["tiers"].size() > 0) {
    const YAML::Node leaf = fabric["tiers"][0];
    const double radix = leaf["radix"] ? leaf["radix"].as<double>(0) : 0;
    const double os = leaf["oversubscription"] ? leaf["oversubscription"].as<double>(1) : 1;
    down = std::max(1, static_cast<int>(std::lround(radix * os / (os + 1))));
  }
  fabric["nodes_per_unit"] = down;
}

}  // namespace

const std::vector<std::string>& sweep_dimension_names() {
  static const std::vector<std::string> names{"cluster", "gpu", "gpus_per_node", "nics_per_node", "nic_Gbps",
                                              "fabric", "rails", "oversubscription.N", "radix.N", "switches.N"};
  return names;
}

SweepDimension parse_sweep_dimension(const std::string& text) {
  std::string all;
  for (const std::string& n : sweep_dimension_names()) all += (all.empty() ? "" : ", ") + n;
  const auto eq = text.find('=');
  if (eq == std::string::npos) bad("expected NAME=VALUE,VALUE,... with NAME one of " + all + "; got '" + text + "'");
  SweepDimension d;
  d.name = text.substr(0, eq);
  const auto [base, tier] = split_tier(d.name);
  bool known = false;
  for (const char* n : kPlain) known = known || (tier == 0 && base == n);
  for (const char* n : kPerTier) known = known || (tier > 0 && base == n);
  if (!known) bad("expected a dimension among " + all + " (N: the tier, 1 to 3); got '" + d.name + "'");
  std::string rest = text.substr(eq + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string v = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (v.empty()) bad(fmt::format("{}: expected a value between commas; got '{}'", d.name, rest));
    if (std::find(d.values.begin(), d.values.end(), v) != d.values.end())
      bad(fmt::format("{}: expected each value once; '{}' is given twice", d.name, v));
    d.values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (base == "rails")
    for (const std::string& v : d.values)
      if (v != "true" && v != "false") bad(fmt::format("rails: expected true or false; got '{}'", v));
  return d;
}

std::string ClusterPoint::text() const {
  if (values.empty()) return "scenario's cluster";
  std::string out;
  for (const auto& [name, value] : values) out += (out.empty() ? "" : " ") + name + "=" + value;
  return out;
}

std::vector<ClusterPoint> sweep_points(const std::vector<SweepDimension>& dimensions) {
  std::vector<ClusterPoint> points{ClusterPoint{}};
  for (const SweepDimension& d : dimensions) {
    std::vector<ClusterPoint> next;
    for (const ClusterPoint& p : points)
      for (const std::string& v : d.values) {
        ClusterPoint q = p;
        q.values.emplace_back(d.name, v);
        next.push_back(q);
      }
    points = next;
  }
  return points;
}

std::string point_cluster_yaml(const std::string& base_cluster_file, const ClusterPoint& point, int job_gpus) {
  std::string file = base_cluster_file;
  for (const auto& [name, value] : point.values)
    if (name == "cluster") file = value;
  // Read strictly (duplicate keys, size, syntax) before editing a copy.
  const YamlField read = YamlField::load_file(file, "--vary-cluster");
  YAML::Node root = YAML::Clone(read.node());
  if (!root.IsMap() || !root["node"] || !root["fabric"] || !root["node"]["nics"])
    bad(fmt::format("point {}: expected a cluster file with node, node.nics and fabric: {}", point.text(), file));
  YAML::Node node = root["node"], nics = root["node"]["nics"], fabric = root["fabric"];
  const std::string where = point.text();
  for (const auto& [name, value] : point.values) {
    const auto [base, tier] = split_tier(name);
    if (base == "gpu") {
      root["gpu"] = value;
    } else if (base == "gpus_per_node") {
      const int gpus = count_value(where, name, value);
      const int old_gpus = std::max(1, node["gpus"].as<int>(1));
      const int old_nics = nics["count"].as<int>(old_gpus);
      node["gpus"] = gpus;
      place_nics(nics, gpus, std::max(1, static_cast<int>(std::lround(static_cast<double>(old_nics) * gpus / old_gpus))));
    } else if (base == "nics_per_node") {
      place_nics(nics, std::max(1, node["gpus"].as<int>(1)), count_value(where, name, value));
    } else if (base == "nic_Gbps") {
      // One port speed: the NICs' and the switch-to-switch links' (the switches are of that speed).
      nics["bandwidth_Gbps"] = value;
      fabric["bandwidth_Gbps"] = value;
    } else if (base == "fabric") {
      set_fabric_type(fabric, value);
    } else if (base == "rails") {
      set_fabric_type(fabric, value == "true" ? "rail_optimized" : "fat_tree");
    } else if (tier > 0) {
      YAML::Node tiers = fabric["tiers"];
      if (!tiers || !tiers.IsSequence() || static_cast<int>(tiers.size()) < tier)
        bad(fmt::format("point {}: {}: the cluster ({}) has {} tiers, no tier {}", where, name, file,
                        tiers && tiers.IsSequence() ? tiers.size() : 0, tier));
      // switches.1 reaches the loader, which names the leaves' count as derived.
      tiers[tier - 1][base] = value;
    }
  }
  const std::string type = fabric["type"] ? fabric["type"].as<std::string>("") : "";
  if (type != "torus" && type != "dragonfly") {
    const int gpus = std::max(1, node["gpus"].as<int>(1));
    fabric["nodes"] = (job_gpus + gpus - 1) / gpus;
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace clustersim
