// `clustersim topology`: what a cluster file builds into, before any simulation: counts, the
// bisection bandwidth, and optionally the graph for drawing (DOT, GraphML) or a JSON summary.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "simulator/cli/commands.hpp"
#include "simulator/svg_draw.hpp"
#include "topologies/report.hpp"
#include "topologies/tier_oversubscription.hpp"
#include "topologies/topology_picture.hpp"

namespace clustersim::cli {

namespace {

struct Options {
  std::string cluster;
  std::vector<std::string> sets;  // --set cluster.PATH=VALUE
  std::string dot, graphml, json, csv, level, svg, report;
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

nlohmann::ordered_json to_json(const Cluster& c, const Options& o, const TopologyReport& r,
                               const std::vector<TierOversubscription>& tiers) {
  nlohmann::ordered_json j =
      json_document("topology", {{"cluster", c.spec.name}, {"cluster_file", o.cluster}, {"cluster_overrides", o.sets}});
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

/// --csv: the document's figures as one row (clusters side by side make a table); the tiers become
/// columns named by tier (oversubscription.leaf.ratio).
nlohmann::ordered_json csv_row(const nlohmann::ordered_json& j) {
  nlohmann::ordered_json row = nlohmann::ordered_json::object();
  for (const auto& [key, value] : j.items())
    if (key != "schema_version" && key != "clustersim_version" && key != "command" && key != "config" &&
        key != "oversubscription_per_tier")
      row[key] = value;
  for (const auto& t : j["oversubscription_per_tier"]) {
    nlohmann::ordered_json tier = t;
    tier.erase("name");
    tier.erase("tier");
    row["oversubscription"][t["name"].get<std::string>()] = tier;
  }
  return row;
}

/// --report: the counts, the picture and the tiers' oversubscription as one self-contained page.
std::string topology_page(const Cluster& c, const Options& o, const TopologyReport& r, const std::vector<TierOversubscription>& tiers,
                          PictureLevel level) {
  std::string summary = "<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n";
  auto row = [&](const std::string& label, const std::string& value) {
    summary += "<tr><th>" + xml_escape(label) + "</th><td>" + xml_escape(value) + "</td></tr>\n";
  };
  row("cluster file", o.cluster);
  for (const std::string& set : o.sets) row("--set", set);
  row("fabric", c.spec.fabric.type);
  row("GPUs", fmt::format("{} ({}), {} nodes, {} NICs", r.gpus, c.spec.gpu, r.nodes, r.nics));
  std::string switches;
  for (const auto& [tier, count] : r.switches_per_tier) switches += fmt::format("{}{} {}", switches.empty() ? "" : ", ", count, tier_name(tier));
  row("switches", switches.empty() ? "none" : switches);
  row("bisection", fmt::format("{:.1f} GB/s ({:.2f} GB/s per GPU), max flow from nodes [0, {}) to the rest", r.bisection_Bps / kGBps,
                               r.bisection_per_gpu_Bps / kGBps, r.bisection_half_nodes));
  summary += "</table>\n</section>\n";
  std::string over = "<section id=\"oversubscription\">\n<h2>Oversubscription per tier</h2>\n<p class=\"note\">Line rate down "
                     "(NICs or the tier below) : up, per direction, and the worst switch's.</p>\n<table>\n<tr><th>tier</th>"
                     "<th class=\"num\">down (GB/s)</th><th class=\"num\">up (GB/s)</th><th>ratio</th></tr>\n";
  for (const TierOversubscription& t : tiers)
    over += fmt::format("<tr><td>{} ({})</td><td class=\"num\">{:.1f}</td><td class=\"num\">{:.1f}</td><td>{}</td></tr>\n", t.tier,
                        tier_name(t.tier), t.down_Bps / kGBps, t.up_Bps / kGBps,
                        t.up_Bps > 0 ? fmt::format("{:.2f}:1 (worst switch {:.2f}:1)", t.ratio(), t.worst_switch_ratio) : "top tier");
  over += "</table>\n</section>\n";
  const std::string note = fmt::format("{} at the {} level; --level node|leaf|spine picks another.", c.spec.name, to_string(level));
  return report_document("clustersim topology: " + c.spec.name, summary + topology_section(topology_svg(c, level), note) + over);
}

}  // namespace

void add_topology_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("topology", "print a cluster's counts and bisection bandwidth");
  cmd->add_option("cluster,--cluster", o->cluster, "cluster YAML file (positional, or --cluster as the other commands take it)")->required();
  cmd->add_option("--set", o->sets, "change a field of the cluster file: --set cluster.fabric.tiers.0.oversubscription=2 (repeatable)");
  cmd->add_option("--dot", o->dot, "also write the graph as Graphviz DOT to this file (styled, parallel links as one edge)");
  CLI::Option* level_option = cmd->add_option("--level", o->level,
                  "draw --dot, --svg and --report with one box per node, per leaf group (scalable unit) or per spine group (pod): "
                  "node, leaf, spine (default: --dot every GPU, NIC and switch; --svg and --report the finest level with at most 40 boxes)");
  cmd->add_option("--svg", o->svg, "also draw the cluster as SVG to this file (at --level, default: the finest with at most 40 boxes)");
  cmd->add_option("--report", o->report, "also write a self-contained HTML page: the counts, the picture, oversubscription per tier");
  cmd->add_option("--graphml", o->graphml, "also write the graph as GraphML to this file (bandwidths per direction)");
  cmd->add_option("--json", o->json, "also write the counts as JSON to this file (- or /dev/stdout: to stdout, without the text)");
  cmd->add_option("--csv", o->csv, "also write the counts as one CSV row, JSON's field names (- or /dev/stdout: to stdout, without the text)");
  cmd->callback([o, level_option] {
    std::optional<PictureLevel> asked;
    if (level_option->count() > 0) {
      if (o->dot.empty() && o->svg.empty() && o->report.empty())
        throw UserError("command line", 0, "--level", "expected --dot, --svg or --report as well: it sets the level of the picture");
      asked = parse_topology_level(o->level, "--level");
      if (!asked) throw UserError("command line", 0, "--level", "expected node, leaf or spine, got ''");
    }
    const ClusterSpec spec = load_cluster_with_sets(o->cluster, "cluster", o->sets);
    if (!o->dot.empty()) check_output_path(o->dot, "--dot");
    if (!o->graphml.empty()) check_output_path(o->graphml, "--graphml");
    if (!o->svg.empty()) check_output_path(o->svg, "--svg");
    if (!o->report.empty()) check_output_path(o->report, "--report");
    if (!o->json.empty()) check_json_path(o->json);
    check_csv_path(o->csv, o->json);
    const Cluster cluster = build_cluster(spec);
    const TopologyReport report = report_topology(cluster);
    const std::vector<TierOversubscription> tiers = tier_oversubscription(cluster);
    if (table_to_stdout(o->json, o->csv)) print_report(cluster, report, tiers);
    write_csv(o->csv, nlohmann::ordered_json::array({csv_row(to_json(cluster, *o, report, tiers))}));
    // DOT draws every vertex unless asked (Graphviz lays out what it is given); SVG and the report
    // pick a readable level themselves.
    if (!o->dot.empty()) write_file(o->dot, cluster_dot(cluster, asked.value_or(PictureLevel::full)), "--dot");
    const PictureLevel drawn = asked ? *asked : o->svg.empty() && o->report.empty() ? PictureLevel::spine : default_picture_level(cluster);
    if (!o->svg.empty()) write_file(o->svg, topology_svg(cluster, drawn), "--svg");
    if (!o->report.empty()) write_file(o->report, topology_page(cluster, *o, report, tiers, drawn), "--report");
    if (!o->graphml.empty()) write_file(o->graphml, cluster_graphml(cluster), "--graphml");
    if (!o->json.empty()) write_json(o->json, to_json(cluster, *o, report, tiers));
  });
}

}  // namespace clustersim::cli
