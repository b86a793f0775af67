#include "simulator/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "simulator/report_timeline.hpp"
#include "simulator/svg_draw.hpp"

namespace clustersim {

namespace {

constexpr double kLabelPx = 110, kPlotPx = 1100, kBarPx = 14, kBarGapPx = 4, kTitlePx = 22;

// Okabe and Ito's colour-blind-safe palette, then Tol's wine and greys for waiting.
const std::map<std::string, const char*>& part_fill() {
  static const std::map<std::string, const char*> fills{
      {"compute", "#0072B2"},  {"recompute", "#56B4E9"}, {"tp", "#E69F00"},     {"cp", "#F0E442"},
      {"ep", "#CC79A7"},       {"imbalance", "#882255"}, {"pp", "#D55E00"},     {"dp", "#009E73"},
      {"optimizer", "#332288"}, {"bubble", "#999999"},   {"idle", "#dddddd"},   {"weights", "#0072B2"},
      {"gradients", "#56B4E9"}, {"optimizer_state", "#009E73"}, {"activations", "#E69F00"}, {"workspace", "#CC79A7"}};
  return fills;
}

const char* fill_of(const std::string& key) {
  const auto it = part_fill().find(key);
  return it == part_fill().end() ? "#999999" : it->second;
}

double gib(double bytes) { return bytes / (1ULL << 30); }

const char* kStyle = R"(<style>
body { font-family: sans-serif; font-size: 13px; margin: 16px 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 24px 0 6px; border-bottom: 1px solid #ccc; }
h3 { font-size: 13px; margin: 12px 0 4px; }
table { border-collapse: collapse; margin: 4px 0 8px; }
td, th { padding: 2px 10px 2px 0; text-align: left; vertical-align: top; }
td:first-child, th:first-child { white-space: nowrap; }
td.num, th.num { text-align: right; }
.why { color: #a02020; }
.note { color: #666; font-size: 12px; }
.meter { display: inline-block; width: 160px; height: 10px; background: #eee; vertical-align: middle; }
.meter span { display: block; height: 10px; background: #0072B2; }
svg { font-family: sans-serif; font-size: 10px; display: block; }
svg .run-title { font-size: 12px; font-weight: bold; }
svg .mb { fill: white; font-size: 8px; text-anchor: middle; }
svg .stream, svg .note { fill: #555; font-size: 9px; }
svg .tick { fill: #444; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px; vertical-align: middle; }
</style>
)";

std::string legend(const std::vector<std::pair<std::string, std::string>>& parts, const std::vector<std::string>& used) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [key, label] : parts)
    if (std::find(used.begin(), used.end(), key) != used.end())
      out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", fill_of(key), xml_escape(label));
  return out + "</div>\n";
}

std::string summary_section(const ReportPage& page) {
  std::string out = "<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n";
  for (const auto& [label, value] : page.facts)
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(label), xml_escape(value));
  out += "</table>\n";
  if (page.runs.size() > 1) {
    out += "<table>\n<tr><th>run</th><th class=\"num\">iteration</th><th class=\"num\">bubble</th></tr>\n";
    for (const ReportRun& r : page.runs) {
      if (!r.why.empty()) {
        out += fmt::format("<tr><td>{}</td><td colspan=\"2\" class=\"why\">could not run: {}</td></tr>\n", xml_escape(r.name),
                           xml_escape(r.why));
        continue;
      }
      double bubble = 0;
      for (const ReportStage& st : r.stages)
        for (const auto& [key, s] : st.time_s)
          if (key == "bubble") bubble += s / r.iteration_s / static_cast<double>(r.stages.size());
      out += fmt::format("<tr><td>{}</td><td class=\"num\">{:.3f} s</td><td class=\"num\">{:.1f}%</td></tr>\n",
                         xml_escape(r.name), r.iteration_s, 100 * bubble);
    }
    out += "</table>\n";
  }
  return out + "</section>\n";
}

std::string timeline_section(const ReportPage& page) {
  return "<section id=\"timeline\">\n<h2>Timeline</h2>\n<p class=\"note\">Each pipeline rank's compute stream "
         "(F forward, B backward, B input / W the split backward's input and weight gradients; a pattern marks a "
         "pass's model chunk), then a row per communication stream it used. Every run on one time scale. Hover a "
         "box for its times.</p>\n" +
         report_timeline_svg(page.runs) + "</section>\n";
}

/// One horizontal stacked bar per stage and run. Each part carries its value (data-value) so a
/// reader can check that the parts add up.
template <typename Parts>
std::string stacked_bars(const ReportPage& page, const std::vector<std::pair<std::string, std::string>>& order,
                         Parts parts_of, double scale, const std::string& unit, double (*shown)(double),
                         double marker, const std::string& marker_label) {
  double height = 0;
  for (const ReportRun& r : page.runs) height += kTitlePx + (r.why.empty() ? r.stages.size() * (kBarPx + kBarGapPx) : 0);
  height += 20;
  const double px_per_unit = scale > 0 ? kPlotPx / scale : 0;
  std::string svg = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">\n",
                                px(kLabelPx + kPlotPx + 80), px(height));
  double y = 0;
  for (const ReportRun& r : page.runs) {
    svg += fmt::format("<text class=\"run-title\" x=\"4\" y=\"{}\">{}{}</text>\n", px(y + 15), xml_escape(r.name),
                       r.why.empty() ? "" : ": could not run");
    y += kTitlePx;
    if (!r.why.empty()) continue;
    for (const ReportStage& st : r.stages) {
      const std::vector<std::pair<std::string, double>> parts = parts_of(st);
      double total = 0;
      for (const auto& p : parts) total += p.second;
      svg += fmt::format("<g class=\"bar\" data-run=\"{}\" data-stage=\"{}\" data-total=\"{}\"><text x=\"4\" y=\"{}\">stage {}</text>\n",
                         xml_escape(r.name), st.rank, total, px(y + 11), st.rank);
      double x = kLabelPx;
      for (const auto& [key, label] : order)
        for (const auto& [k, value] : parts) {
          if (k != key || value <= 0) continue;
          const double w = value * px_per_unit;
          svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-part=\"{}\" data-value=\"{}\">"
                             "<title>stage {} {}: {:.4g} {}</title></rect>\n",
                             px(x), px(y), px(w), px(kBarPx), fill_of(key), key, value, st.rank, xml_escape(label),
                             shown(value), unit);
          x += w;
        }
      svg += fmt::format("<text x=\"{}\" y=\"{}\">{:.3g} {}</text></g>\n", px(x + 4), px(y + 11), shown(total), unit);
      y += kBarPx + kBarGapPx;
    }
  }
  if (marker > 0) {
    const double mx = kLabelPx + marker * px_per_unit;
    svg += fmt::format("<line class=\"capacity\" x1=\"{0}\" x2=\"{0}\" y1=\"0\" y2=\"{1}\" stroke=\"#a02020\" "
                       "stroke-dasharray=\"4 3\"/><text x=\"{0}\" y=\"{2}\" text-anchor=\"middle\" fill=\"#a02020\">{3}</text>\n",
                       px(mx), px(height - 16), px(height - 4), xml_escape(marker_label));
  }
  return svg + "</svg>\n";
}

double as_is(double v) { return v; }
double to_gib(double v) { return gib(v); }

std::string breakdown_section(const ReportPage& page) {
  Seconds longest = 0;
  std::vector<std::string> used;
  for (const ReportRun& r : page.runs) {
    longest = std::max(longest, r.iteration_s);
    for (const ReportStage& st : r.stages)
      for (const auto& [k, v] : st.time_s)
        if (v > 0 && std::find(used.begin(), used.end(), k) == used.end()) used.push_back(k);
  }
  return "<section id=\"breakdown\">\n<h2>Where each stage's time went</h2>\n<p class=\"note\">Per pipeline stage of "
         "the slowest replica: compute, exposed communication, bubble and idle add up to the iteration (the bar's "
         "length).</p>\n" +
         legend(report_time_parts(), used) +
         stacked_bars(page, report_time_parts(), [](const ReportStage& st) { return st.time_s; }, longest, "s", as_is, 0, "") +
         "</section>\n";
}

std::string memory_section(const ReportPage& page) {
  double largest = static_cast<double>(page.hbm_bytes);
  std::vector<std::string> used;
  for (const ReportRun& r : page.runs)
    for (const ReportStage& st : r.stages) {
      double total = 0;
      for (const auto& [k, v] : st.memory_bytes) {
        total += v;
        if (v > 0 && std::find(used.begin(), used.end(), k) == used.end()) used.push_back(k);
      }
      largest = std::max(largest, total);
    }
  return "<section id=\"memory\">\n<h2>Memory per stage</h2>\n<p class=\"note\">GiB per GPU; the dashed line is the " +
         xml_escape(page.gpu) + fmt::format("'s HBM ({:.0f} GiB).</p>\n", gib(static_cast<double>(page.hbm_bytes))) +
         legend(report_memory_parts(), used) +
         stacked_bars(page, report_memory_parts(), [](const ReportStage& st) { return st.memory_bytes; }, largest * 1.02,
                      "GiB", to_gib, static_cast<double>(page.hbm_bytes),
                      fmt::format("HBM {:.0f} GiB", gib(static_cast<double>(page.hbm_bytes)))) +
         "</section>\n";
}

std::string links_section(const ReportPage& page) {
  std::string out = "<section id=\"links\">\n<h2>Link utilization per tier</h2>\n";
  for (const ReportRun& r : page.runs) {
    if (page.runs.size() > 1) out += "<h3>" + xml_escape(r.name) + "</h3>\n";
    if (!r.why.empty()) {
      out += "<p class=\"why\">could not run: " + xml_escape(r.why) + "</p>\n";
      continue;
    }
    out += link_tiers_table(r.link_tiers, r.link_note);
  }
  return out + "</section>\n";
}

/// What ran each collective: where a user sees NCCL's choices, and what a pinned algorithm changed.
std::string collectives_section(const ReportPage& page) {
  std::string out = "<section id=\"collectives\">\n<h2>Collectives and what ran them</h2>\n<p class=\"note\">Each distinct "
                    "collective of the iteration once (what, op, size, group), with the algorithm, protocol and channels that "
                    "ran it: NCCL's tuner's pick for its size unless the scenario's collectives.algorithm pins one or asks for "
                    "the fastest simulated.</p>\n";
  for (const ReportRun& r : page.runs) {
    if (page.runs.size() > 1) out += "<h3>" + xml_escape(r.name) + "</h3>\n";
    if (!r.why.empty()) {
      out += "<p class=\"why\">could not run: " + xml_escape(r.why) + "</p>\n";
      continue;
    }
    out += "<table class=\"collectives\">\n<tr><th>what</th><th>op</th><th class=\"num\">MiB</th><th class=\"num\">ranks"
           "</th><th class=\"num\">nodes</th><th>algorithm</th><th>protocol</th><th class=\"num\">channels</th></tr>\n";
    for (const CollectiveRun& c : r.collectives)
      out += fmt::format("<tr data-what=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{}</td>"
                         "<td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                         xml_escape(c.what), xml_escape(c.what), to_string(c.op), static_cast<double>(c.bytes) / (1 << 20),
                         c.ranks, c.nodes, xml_escape(c.algorithm), xml_escape(c.protocol), c.channels);
    out += "</table>\n";
  }
  return out + "</section>\n";
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& report_time_parts() {
  static const std::vector<std::pair<std::string, std::string>> parts{
      {"compute", "compute"},     {"recompute", "recompute"}, {"tp", "TP exposed"},    {"cp", "CP exposed"},
      {"ep", "EP exposed"},       {"imbalance", "expert imbalance"}, {"pp", "PP exposed"}, {"dp", "DP exposed"},
      {"optimizer", "optimizer"}, {"bubble", "bubble"},       {"idle", "idle"}};
  return parts;
}

const std::vector<std::pair<std::string, std::string>>& report_memory_parts() {
  static const std::vector<std::pair<std::string, std::string>> parts{{"weights", "weights"},
                                                                      {"gradients", "gradients"},
                                                                      {"optimizer_state", "optimizer state"},
                                                                      {"activations", "activations"},
                                                                      {"workspace", "recompute workspace"}};
  return parts;
}

ReportRun report_run(const RunReport& r, const std::string& name) {
  ReportRun out;
  out.name = name;
  out.iteration_s = r.iteration_s;
  out.ranks = static_cast<int>(r.stages.size());
  out.passes = r.iteration.passes;
  out.collectives = r.iteration.collectives;
  std::map<int, int> rank_of_gpu;
  for (std::size_t k = 0; k < r.rank_gpus.size(); ++k) rank_of_gpu[r.rank_gpus[k]] = static_cast<int>(k);
  for (const TraceEvent& e : r.iteration.events) {
    if (e.stream == "compute") continue;  // the passes draw it
    const auto it = rank_of_gpu.find(e.gpu);
    if (it != rank_of_gpu.end()) out.streams.push_back({it->second, e.stream, e.name, e.start_s, e.end_s});
  }
  for (const StageReport& st : r.stages) {
    const RankBreakdown& b = st.time;
    out.stages.push_back({st.pipeline_rank,
                          {{"compute", b.compute_s},
                           {"recompute", b.recompute_s},
                           {"tp", b.tp_s},
                           {"cp", b.cp_s},
                           {"ep", b.ep_s},
                           {"imbalance", b.imbalance_s},
                           {"pp", b.pp_exposed_s},
                           {"dp", b.dp_exposed_s},
                           {"optimizer", b.optimizer_s},
                           {"bubble", b.bubble_s},
                           {"idle", b.other_idle_s}},
                          {{"weights", static_cast<double>(st.memory.weights)},
                           {"gradients", static_cast<double>(st.memory.gradients)},
                           {"optimizer_state", static_cast<double>(st.memory.optimizer)},
                           {"activations", static_cast<double>(st.memory.activations)},
                           {"workspace", static_cast<double>(st.memory.recompute_workspace)}}});
  }
  out.link_tiers = r.link_tiers;
  const IterationResult& it = r.iteration;
  out.link_note = fmt::format(
      "Bytes each tier carried in the engine's replay of the iteration, over what its links could carry in {:.3f} s "
      "(both directions). {} of {} data-parallel replicas replayed{}; TP collectives {}.",
      r.iteration_s, it.simulated_replicas, it.replicas,
      it.fold == FoldMode::assume ? ", the first GPU of each rank sending for it (--fold exact replays every GPU)" : "",
      it.tp_collectives.rfind("in place", 0) == 0 ? "ran in place and are counted" : "were timed alone and are not counted");
  return out;
}

std::string link_tiers_table(const std::vector<LinkTierLoad>& tiers, const std::string& note) {
  std::string out;
  if (!note.empty()) out += "<p class=\"note\">" + xml_escape(note) + "</p>\n";
  out += "<table class=\"tiers\">\n<tr><th>tier</th><th>link type</th><th class=\"num\">links</th><th class=\"num\">"
         "carried (GB)</th><th>mean utilization</th><th class=\"num\"></th><th class=\"num\">busiest link</th></tr>\n";
  for (const LinkTierLoad& t : tiers)
    out += fmt::format("<tr data-tier=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1f}</td>"
                       "<td><span class=\"meter\"><span style=\"width:{:.1f}%\"></span></span></td>"
                       "<td class=\"num\">{:.1f}%</td><td class=\"num\">{:.1f}%</td></tr>\n",
                       xml_escape(t.tier), xml_escape(t.tier), xml_escape(t.link_type), t.links, t.bytes / 1e9,
                       std::min(100.0, 100 * t.mean_utilization), 100 * t.mean_utilization, 100 * t.busiest_utilization);
  return out + "</table>\n";
}

std::string report_document(const std::string& title, const std::string& sections) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + xml_escape(title) +
         "</title>\n" + kStyle + "</head>\n<body>\n<h1>" + xml_escape(title) + "</h1>\n" + sections +
         "<p class=\"note\">Written by clustersim. Self-contained: no script, nothing fetched.</p>\n</body>\n</html>\n";
}

std::string topology_section(const std::string& svg, const std::string& note) {
  return "<section id=\"topology\">\n<h2>Cluster</h2>\n<p class=\"note\">" + xml_escape(note) + "</p>\n" + svg + "</section>\n";
}

std::string report_sections(const ReportPage& page) {
  return summary_section(page) + timeline_section(page) + breakdown_section(page) + memory_section(page) + links_section(page) +
         collectives_section(page) + (page.topology_svg.empty() ? "" : topology_section(page.topology_svg, page.topology_note));
}

std::string report_html(const ReportPage& page) { return report_document(page.title, report_sections(page)); }

}  // namespace clustersim
