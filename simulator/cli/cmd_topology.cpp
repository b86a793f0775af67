// `clustersim topology`: what a cluster file builds into, before any simulation: counts, the
// bisection bandwidth, and optionally the graph for drawing (DOT, GraphML) or a JSON summary.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "simulator/cli/commands.hpp"
#include "topologies/report.hpp"
#include "topologies/tier_oversubscription.hpp"
#include "topologies/topology_picture.hpp"

namespace clustersim::cli {

namespace {

struct Options {
  std::string cluster;
  std::string dot, graphml, json, level;
};

const char* tier_name(int tier) {
  switch (tier) {
    case 1: return "leaf";
    case 2: return "spine";
    case 3: return "core";
  }
  return "switch";
}

constexpr double kGBps = 1e9;  // bandwidths print in GB/s (10^9 bytes/s), as nccl-tests does

void print_report(const Cluster& c, const TopologyReport& r, const std::vector<TierOversubscription>& tiers) {
  auto row = [](const std::string& label, const std::string& value) {
    std::cout << fmt::format("  {:<20} {:>12}\n", label, value);
  };
  std::cout << fmt::format("# clustersim topology: {} ({}, {})\n", c.spec.name, c.spec.fabric.type, c.spec.gpu);
  row("GPUs", std::to_string(r.gpus));
  row("nodes", std::to_string(r.nodes));
  row("NVSwitches", std::to_string(r.nvswitches));
  row("NICs", std::to_string(r.nics));
  row("switches", std::to_string(r.switch_count()));
  for (const auto& [tier, count] : r.switches_per_tier)
    row(fmt::format("  tier {} ({})", tier, tier_name(tier)), std::to_string(count));
  row("links", std::to_string(r.links));
  for (const auto& [type, count] : r.links_per_type) row("  " + type, std::to_string(count));
  row("bisection (GB/s)", fmt::format("{:.1f}", r.bisection_Bps / kGBps));
  row("  per GPU (GB/s)", fmt::format("{:.2f}", r.bisection_per_gpu_Bps / kGBps));
  std::cout << fmt::format("# bisection: max flow at line rate from nodes [0, {}) to nodes [{}, {})\n",
                           r.bisection_half_nodes, r.bisection_half_nodes, r.nodes);
  std::cout << "# oversubscription per tier: line rate down (NICs or the tier below) : up, per direction, and the worst switch's\n";
  for (const TierOversubscription& t : tiers)
    std::cout << fmt::format("  tier {} ({:<5}) {:>10.1f} GB/s : {:>10.1f} GB/s   {}\n", t.tier, tier_name(t.tier),
                             t.down_Bps / kGBps, t.up_Bps / kGBps,
                             t.up_Bps > 0 ? fmt::format("{:.2f}:1 (worst switch {:.2f}:1)", t.ratio(), t.worst_switch_ratio)
                                          : std::string("top tier"));
}

nlohmann::ordered_json to_json(const Cluster& c, const std::string& file, const TopologyReport& r,
                               const std::vector<TierOversubscription>& tiers) {
  nlohmann::ordered_json j = json_document("topology", {{"cluster", c.spec.name}, {"cluster_file", file}});
  j["cluster"] = c.spec.name;
  j["fabric"] = c.spec.fabric.type;
  j["gpus"] = r.gpus;
  j["nodes"] = r.nodes;
  j["nvswitches"] = r.nvswitches;
  j["nics"] = r.nics;
  j["switches"] = r.switch_count();
  j["switches_per_tier"] = nlohmann::ordered_json::object();
  for (const auto& [tier, count] : r.switches_per_tier) j["switches_per_tier"][tier_name(tier)] = count;
  j["links"] = r.links;
  j["links_per_type"] = r.links_per_type;
  j["bisection_Bps"] = r.bisection_Bps;
  j["bisection_per_gpu_Bps"] = r.bisection_per_gpu_Bps;
  j["bisection_half_nodes"] = r.bisection_half_nodes;
  j["oversubscription_per_tier"] = nlohmann::ordered_json::array();
  for (const TierOversubscription& t : tiers)
    j["oversubscription_per_tier"].push_back({{"tier", t.tier}, {"name", tier_name(t.tier)}, {"switches", t.switches},
                                              {"down_Bps", t.down_Bps}, {"up_Bps", t.up_Bps},
                                              {"ratio", t.up_Bps > 0 ? nlohmann::ordered_json(t.ratio()) : nlohmann::ordered_json()},
                                              {"worst_switch_ratio", t.up_Bps > 0 ? nlohmann::ordered_json(t.worst_switch_ratio)
                                                                                  : nlohmann::ordered_json()}});
  return j;
}

}  // namespace

void add_topology_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("topology", "print a cluster's counts and bisection bandwidth");
  cmd->add_option("cluster,--cluster", o->cluster, "cluster YAML file (positional, or --cluster as the other commands take it)")->required();
  cmd->add_option("--dot", o->dot, "also write the graph as Graphviz DOT to this file (styled, parallel links as one edge)");
  CLI::Option* level_option = cmd->add_option("--level", o->level,
                  "draw --dot with one box per node, per leaf group (scalable unit) or per spine group (pod): node, leaf, spine "
                  "(default: every GPU, NIC and switch)");
  cmd->add_option("--graphml", o->graphml, "also write the graph as GraphML to this file (bandwidths per direction)");
  cmd->add_option("--json", o->json, "also write the counts as JSON to this file (- or /dev/stdout: to stdout, without the text)");
  cmd->callback([o, level_option] {
    PictureLevel level = PictureLevel::full;
    if (level_option->count() > 0) {
      if (o->dot.empty()) throw UserError("command line", 0, "--level", "expected --dot as well: it sets the level of the picture");
      const auto parsed = parse_picture_level(o->level);
      if (!parsed) throw UserError("command line", 0, "--level", "expected node, leaf or spine, got '" + o->level + "'");
      level = *parsed;
    }
    const ClusterSpec spec = load_cluster_spec(o->cluster, "cluster");
    if (!o->dot.empty()) check_output_path(o->dot, "--dot");
    if (!o->graphml.empty()) check_output_path(o->graphml, "--graphml");
    if (!o->json.empty()) check_json_path(o->json);
    const Cluster cluster = build_cluster(spec);
    const TopologyReport report = report_topology(cluster);
    const std::vector<TierOversubscription> tiers = tier_oversubscription(cluster);
    if (table_to_stdout(o->json, "")) print_report(cluster, report, tiers);
    if (!o->dot.empty()) write_file(o->dot, cluster_dot(cluster, level), "--dot");
    if (!o->graphml.empty()) write_file(o->graphml, cluster_graphml(cluster), "--graphml");
    if (!o->json.empty()) write_json(o->json, to_json(cluster, o->cluster, report, tiers));
  });
}

}  // namespace clustersim::cli
