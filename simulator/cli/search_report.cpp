#include "simulator/cli/search_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/cli/commands.hpp"
#include "simulator/pareto_svg.hpp"
#include "simulator/svg_draw.hpp"
#include "simulator/training_run.hpp"

namespace clustersim::cli {

namespace {

double gib(double bytes) { return bytes / (1ULL << 30); }

std::string search_section(const SearchReport& r) {
  std::string out = "<section id=\"search\">\n<h2>Search</h2>\n<table>\n";
  for (const auto& [label, value] : r.page.facts)
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(label), xml_escape(value));
  out += fmt::format("<tr><th>screened</th><td>{} configurations, {} valid</td></tr>\n", r.screen.candidates, r.screen.valid.size());
  for (const ScreenRemoval& rm : r.screen.removed)
    if (rm.count > 0)
      out += fmt::format("<tr><th>removed by {}</th><td>{} (e.g. {})</td></tr>\n", xml_escape(rm.rule), rm.count, xml_escape(rm.example));
  out += fmt::format("<tr><th>verified</th><td>the best {} by the screen, each an iteration on the engine</td></tr>\n", r.rows.size());
  return out + "</table>\n</section>\n";
}

std::string pareto_section(const SearchReport& r) {
  std::vector<ScatterPoint> points;
  for (const Verified& v : r.rows)
    if (v.ok)
      points.push_back({gib(v.memory_bytes), v.tokens_per_s, v.screen.config.text(),
                        std::find(r.pareto.begin(), r.pareto.end(), v.screen.config.text()) != r.pareto.end()});
  std::string out = "<section id=\"pareto\">\n<h2>Throughput against memory</h2>\n<p class=\"note\">Each verified "
                    "configuration as the engine ran it; the line joins the Pareto front (no other is faster in less memory).</p>\n";
  if (points.empty()) return out + "<p class=\"why\">No configuration ran on the engine.</p>\n</section>\n";
  return out + pareto_svg(points, "tokens/s against memory per GPU", "memory per GPU (GiB)", 1, "tokens/s (thousands)", 1e3) +
         "</section>\n";
}

}  // namespace

std::string verified_table_html(const std::vector<Verified>& rows, const std::vector<std::string>& pareto, Bytes hbm_bytes) {
  std::string out =
      "<table class=\"verified\">\n<tr><th class=\"num\">rank</th><th>configuration</th><th class=\"num\">screen (s)</th>"
      "<th class=\"num\">engine (s)</th><th class=\"num\">error</th><th class=\"num\">tokens/s</th><th class=\"num\">MFU</th>"
      "<th class=\"num\">GiB/GPU</th><th>of HBM</th><th class=\"num\">exposed comm (s)</th><th class=\"num\">bubble (s)</th>"
      "<th>front</th></tr>\n";
  int rank = 0;
  for (const Verified& v : rows) {
    ++rank;
    const std::string config = xml_escape(v.screen.config.text());
    if (!v.ok) {
      out += fmt::format("<tr data-config=\"{0}\"><td class=\"num\">{1}</td><td>{0}</td><td class=\"num\">{2:.3f}</td>"
                         "<td colspan=\"9\" class=\"why\">not run: {3}</td></tr>\n",
                         config, rank, v.screen.iteration_s, xml_escape(v.why));
      continue;
    }
    const bool front = std::find(pareto.begin(), pareto.end(), v.screen.config.text()) != pareto.end();
    const std::string meter =
        hbm_bytes > 0 ? fmt::format("<span class=\"meter\"><span style=\"width:{:.1f}%\"></span></span>",
                                    std::min(100.0, 100 * v.memory_bytes / static_cast<double>(hbm_bytes)))
                      : "";
    out += fmt::format("<tr data-config=\"{0}\"><td class=\"num\">{1}</td><td>{0}</td><td class=\"num\">{2:.3f}</td>"
                       "<td class=\"num\">{3:.3f}</td><td class=\"num\">{4:+.1f}%</td><td class=\"num\">{5:.0f}</td>"
                       "<td class=\"num\">{6:.1f}%</td><td class=\"num\">{7:.1f}</td><td>{8}</td><td class=\"num\">{9:.3f}</td><td class=\"num\">{10:.3f}</td>"
                       "<td>{11}</td></tr>\n",
                       config, rank, v.screen.iteration_s, v.iteration_s, 100 * (v.screen.iteration_s - v.iteration_s) / v.iteration_s,
                       v.tokens_per_s, 100 * v.mfu, gib(v.memory_bytes), meter, v.exposed_comm_s, v.bubble_s,
                       front ? "front" : "");
  }
  return out + "</table>\n";
}

std::string search_report_html(const SearchReport& r) {
  std::string sections = search_section(r);
  sections += "<section id=\"configurations\">\n<h2>Verified configurations</h2>\n<p class=\"note\">Ranked by the engine's "
              "tokens/s; the screen's iteration beside the engine's, and the error of the screen against it. Memory is the "
              "fullest pipeline stage's, per GPU, against the " + xml_escape(r.page.gpu) +
              fmt::format("'s {:.0f} GiB.</p>\n", gib(static_cast<double>(r.page.hbm_bytes))) +
              verified_table_html(r.rows, r.pareto, r.page.hbm_bytes) + "</section>\n";
  sections += pareto_section(r);
  if (r.fastest) {
    ReportPage best = r.page;
    best.facts = {{"configuration", r.fastest->name}};
    best.runs = {*r.fastest};
    sections += "<h2 class=\"fastest\">The fastest configuration, " + xml_escape(r.fastest->name) + "</h2>\n" + report_sections(best);
  }
  return report_document(r.page.title, sections);
}

std::string search_report_page(const std::string& scenario, const std::vector<std::string>& overrides, const ScenarioSpec& base,
                               const ScreenResult& screen, const std::vector<Verified>& rows, const std::vector<std::string>& pareto) {
  SearchReport r;
  r.page = report_page(base, "search");
  // The scenario's own layout and microbatch are what the search varies: left out of the facts.
  std::erase_if(r.page.facts, [](const auto& fact) { return fact.first == "layout" || fact.first == "batch"; });
  r.page.facts.push_back({"global batch", fmt::format("{} sequences of {} tokens, {}", base.global_batch, base.model.seq_len, base.precision)});
  add_topology_picture(r.page, base.cluster, std::nullopt, base.gpus());
  r.screen = screen;
  r.rows = rows;
  r.pareto = pareto;
  const auto fastest = std::find_if(rows.begin(), rows.end(), [](const Verified& v) { return v.ok; });
  if (fastest != rows.end()) {
    const Configuration& c = fastest->screen.config;
    const std::string text = run_in_child([&] {
      try {
        const ScenarioSpec s = load_scenario(scenario, configuration_overrides(overrides, c));
        const RunReport run = run_training(s, false, nullptr, FoldMode::assume, Solver::fluid, Placements{}, true);
        return report_run_json(report_run(run, c.text())).dump();
      } catch (const std::exception&) {
        return std::string();  // it ran once already; if not again, the page goes without its timeline
      }
    });
    if (!text.empty()) r.fastest = report_run_from_json(nlohmann::ordered_json::parse(text));
  }
  return search_report_html(r);
}

}  // namespace clustersim::cli
