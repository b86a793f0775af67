// A report's run carried from compare's child process to the parent as JSON (each schedule is
// simulated in its own process, and the page needs them all): written and read back field by
// field, doubles in full (nlohmann prints them round-trip), so the page is the same as in-process.
#include <fmt/format.h>

#include <string>

#include "simulator/cli/commands.hpp"

namespace clustersim::cli {

ReportPage report_page(const ScenarioSpec& s, const std::string& command) {
  ReportPage page;
  page.title = "clustersim " + command + ": " + s.name;
  const ParallelLayout& l = s.layout;
  page.facts = {{"scenario", s.name + " (" + s.file + ")"},
                {"model", s.model.name},
                {"cluster", fmt::format("{} GPUs of {} ({})", s.gpus(), s.cluster.name, s.gpu.name)},
                {"layout", fmt::format("tp {} pp {} dp {}{}{}, {} chunk(s) per rank", l.tp, l.pp, l.dp,
                                       l.cp > 1 ? fmt::format(" cp {}", l.cp) : "", s.ep > 1 ? fmt::format(" ep {}", s.ep) : "",
                                       s.virtual_stages)},
                {"batch", fmt::format("{} microbatches of {} per pipeline, global batch {}, {}", s.microbatches(),
                                      s.microbatch, s.global_batch, s.precision)}};
  page.gpu = s.gpu.name;
  page.hbm_bytes = s.gpu.hbm_bytes;
  return page;
}

std::optional<PictureLevel> parse_topology_level(const std::string& text, const std::string& option) {
  if (text.empty()) return std::nullopt;
  const auto level = parse_picture_level(text);
  if (!level) throw UserError("command line", 0, option, "expected node, leaf or spine, got '" + text + "'");
  return level;
}

void add_topology_picture(ReportPage& page, const ClusterSpec& spec, std::optional<PictureLevel> level, int job_gpus,
                          const std::string& where) {
  const Cluster cluster = build_cluster(spec);
  const PictureLevel drawn = level ? *level : default_picture_level(cluster);
  page.topology_svg = topology_svg(cluster, drawn);
  page.topology_note = fmt::format("{} at the {} level{}; {}.", spec.name, to_string(drawn),
                                   level ? "" : " (the finest with at most 40 boxes; --topology-level node|leaf|spine picks another)",
                                   where.empty() ? fmt::format("the job runs on its first {} of {} GPUs", job_gpus, cluster.gpu_count())
                                                 : where);
}

nlohmann::ordered_json report_run_json(const ReportRun& r) {
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["why"] = r.why;
  j["iteration_s"] = r.iteration_s;
  j["ranks"] = r.ranks;
  j["link_note"] = r.link_note;
  auto& passes = j["passes"] = nlohmann::ordered_json::array();
  for (const PassSpan& p : r.passes) passes.push_back({p.rank, static_cast<int>(p.kind), p.microbatch, p.stage, p.start_s, p.end_s});
  auto& streams = j["streams"] = nlohmann::ordered_json::array();
  for (const ReportSpan& s : r.streams) streams.push_back({s.rank, s.stream, s.name, s.start_s, s.end_s});
  auto& stages = j["stages"] = nlohmann::ordered_json::array();
  for (const ReportStage& st : r.stages) stages.push_back({st.rank, st.time_s, st.memory_bytes});
  auto& tiers = j["link_tiers"] = nlohmann::ordered_json::array();
  for (const LinkTierLoad& t : r.link_tiers)
    tiers.push_back({t.tier, t.link_type, t.links, t.bytes, t.mean_utilization, t.busiest_utilization});
  auto& collectives = j["collectives"] = nlohmann::ordered_json::array();
  for (const CollectiveRun& c : r.collectives)
    collectives.push_back({c.what, static_cast<int>(c.op), c.bytes, c.ranks, c.nodes, c.algorithm, c.protocol, c.channels});
  return j;
}

ReportRun report_run_from_json(const nlohmann::ordered_json& j) {
  ReportRun r;
  r.name = j["name"].get<std::string>();
  r.why = j["why"].get<std::string>();
  r.iteration_s = j["iteration_s"].get<double>();
  r.ranks = j["ranks"].get<int>();
  r.link_note = j["link_note"].get<std::string>();
  for (const auto& p : j["passes"])
    r.passes.push_back({p[0].get<int>(), static_cast<PassKind>(p[1].get<int>()), p[2].get<int>(), p[3].get<int>(),
                        p[4].get<double>(), p[5].get<double>()});
  for (const auto& s : j["streams"])
    r.streams.push_back({s[0].get<int>(), s[1].get<std::string>(), s[2].get<std::string>(), s[3].get<double>(), s[4].get<double>()});
  for (const auto& st : j["stages"])
    r.stages.push_back({st[0].get<int>(), st[1].get<std::vector<std::pair<std::string, Seconds>>>(),
                        st[2].get<std::vector<std::pair<std::string, double>>>()});
  for (const auto& t : j["link_tiers"])
    r.link_tiers.push_back({t[0].get<std::string>(), t[1].get<std::string>(), t[2].get<int>(), t[3].get<double>(),
                            t[4].get<double>(), t[5].get<double>()});
  for (const auto& c : j["collectives"])
    r.collectives.push_back({c[0].get<std::string>(), static_cast<Op>(c[1].get<int>()), c[2].get<Bytes>(), c[3].get<int>(),
                             c[4].get<int>(), c[5].get<std::string>(), c[6].get<std::string>(), c[7].get<int>()});
  return r;
}

}  // namespace clustersim::cli
