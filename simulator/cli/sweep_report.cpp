// `sweep --report FILE.html` (search_report.hpp says what the page holds).
#include <fmt/format.h>

#include "simulator/cli/search_report.hpp"
#include "simulator/svg_draw.hpp"

namespace clustersim::cli {

std::string sweep_report_html(const std::string& title, const std::vector<std::pair<std::string, std::string>>& facts,
                              const std::vector<SweepRow>& rows, const Economics& e) {
  std::string out = "<section id=\"sweep\">\n<h2>Sweep</h2>\n<table>\n";
  for (const auto& [label, value] : facts) out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(label), xml_escape(value));
  out += fmt::format("<tr><th>economics</th><td>electricity {:g} USD/kWh, capital amortised over {:g} years</td></tr>\n", e.usd_per_kWh,
                     e.amortisation_years);
  out += "</table>\n</section>\n";

  out += "<section id=\"points\">\n<h2>Cluster points</h2>\n<p class=\"note\">Each point's fabric priced from its bill of "
         "materials, and the fastest configuration the search found on it (the engine's figure).</p>\n"
         "<table class=\"points\">\n<tr><th>point</th><th class=\"num\">GPUs</th><th class=\"num\">switches</th><th class=\"num\">"
         "optics</th><th class=\"num\">capital ($M)</th><th class=\"num\">power (MW)</th><th class=\"num\">tokens/s</th>"
         "<th class=\"num\">tokens/$ (year)</th><th class=\"num\">tokens/MWh</th><th>best configuration</th><th>front</th></tr>\n";
  for (const SweepRow& r : rows) {
    const std::string best = r.best() ? xml_escape(r.best()->screen.config.text())
                                      : "<span class=\"why\">none ran: " + xml_escape(r.verified.empty() ? "nothing verified" : r.verified.front().why) + "</span>";
    out += fmt::format("<tr data-point=\"{0}\"><td>{0}</td><td class=\"num\">{1}</td><td class=\"num\">{2}</td><td class=\"num\">{3}</td>"
                       "<td class=\"num\">{4:.2f}</td><td class=\"num\">{5:.3f}</td><td class=\"num\">{6:.0f}</td><td class=\"num\">{7:.0f}</td>"
                       "<td class=\"num\">{8:.3g}</td><td>{9}</td><td>{10}</td></tr>\n",
                       xml_escape(r.point.text()), r.gpus, r.bom.switches(), r.bom.optics(), r.cost.capital_usd / 1e6, r.cost.power_W / 1e6,
                       r.tokens_per_s(), tokens_per_usd(r.tokens_per_s(), r.cost, e), tokens_per_MWh(r.tokens_per_s(), r.cost), best,
                       r.on_front ? "front" : "");
  }
  out += "</table>\n</section>\n";

  bool any_ran = false;
  for (const SweepRow& r : rows) any_ran = any_ran || r.best();
  out += "<section id=\"pareto\">\n<h2>Throughput against capital cost</h2>\n<p class=\"note\">The line joins the Pareto front: "
         "no cheaper point is as fast.</p>\n" +
         (any_ran ? sweep_svg("tokens/s against capital cost", rows) : "<p class=\"why\">No point's configurations ran on the engine.</p>\n") +
         "</section>\n";

  out += "<section id=\"configurations\">\n<h2>Configurations verified at each point</h2>\n";
  for (const SweepRow& r : rows) {
    std::vector<std::string> fastest;
    if (r.best()) fastest.push_back(r.best()->screen.config.text());
    out += "<h3>" + xml_escape(r.point.text()) + fmt::format("</h3>\n<p class=\"note\">{} configurations screened, {} valid; "
                                                             "\"front\" marks the point's fastest.</p>\n", r.candidates, r.valid) +
           verified_table_html(r.verified, fastest, 0);
  }
  return report_document(title, out + "</section>\n");
}

std::string sweep_report_page(const ScenarioSpec& base, const std::vector<std::string>& vary_cluster, const std::vector<std::string>& vary,
                              const std::string& prices_file, const std::vector<SweepRow>& rows, const Economics& economics) {
  auto joined = [](const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const std::string& i : items) out += (out.empty() ? "" : sep) + i;
    return out;
  };
  const std::vector<std::pair<std::string, std::string>> facts{
      {"scenario", base.name + " (" + base.file + ")"},
      {"model", base.model.name},
      {"job", fmt::format("{} GPUs, global batch {}, {}", base.gpus(), base.global_batch, base.precision)},
      {"cluster dimensions", vary_cluster.empty() ? "none: the scenario's cluster" : joined(vary_cluster, "; ")},
      {"configuration dimensions", joined(vary, ", ")},
      {"prices", prices_file}};
  return sweep_report_html("clustersim sweep: " + base.name, facts, rows, economics);
}

}  // namespace clustersim::cli
