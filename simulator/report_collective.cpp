#include "simulator/report_collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simulator/report_html.hpp"
#include "simulator/svg_draw.hpp"

namespace clustersim {

namespace {

constexpr double kLeftPx = 60, kPlotWidthPx = 900, kPlotHeightPx = 320, kTopPx = 30, kBottomPx = 40;

std::string summary_section(const CollectiveReport& r) {
  std::string out = "<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n";
  for (const auto& [label, value] : r.facts)
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(label), xml_escape(value));
  return out + "</table>\n</section>\n";
}

/// The nccl-tests table, with what --algo auto chose per size.
std::string rows_table(const CollectiveReport& r) {
  std::string out;
  out += "<table class=\"rows\">\n<tr><th>size</th><th class=\"num\">time (us)</th><th class=\"num\">algbw (GB/s)</th>"
         "<th class=\"num\">busbw (GB/s)</th><th>algorithm / protocol</th></tr>\n";
  for (const SweepRow& row : r.rows)
    out += fmt::format("<tr><td>{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{:.2f}</td>"
                       "<td>{}/{}</td></tr>\n",
                       size_text(row.size_bytes), row.time_s * 1e6, row.algbw_GBps, row.busbw_GBps,
                       xml_escape(row.algorithm), xml_escape(row.protocol));
  return out + "</table>\n";
}

/// Bus (solid) and algorithm (dashed) bandwidth against log2 of the size.
std::string bandwidth_section(const CollectiveReport& r) {
  std::string out = "<section id=\"bandwidth\">\n<h2>Bandwidth against size</h2>\n<p class=\"note\">GB/s (1e9) as "
                    "nccl-tests reports them: busbw (solid) and algbw (dashed); sizes on a log scale.</p>\n";
  double top = 0;
  for (const SweepRow& row : r.rows) top = std::max({top, row.busbw_GBps, row.algbw_GBps});
  const std::vector<double> y_ticks = round_ticks(top > 0 ? top : 1);
  const double y_max = y_ticks.back();
  const double lo = r.rows.empty() ? 0 : std::log2(static_cast<double>(std::max<Bytes>(1, r.rows.front().size_bytes)));
  const double hi = r.rows.empty() ? 1 : std::log2(static_cast<double>(std::max<Bytes>(1, r.rows.back().size_bytes)));
  const double span = hi > lo ? hi - lo : 1;
  auto x_of = [&](Bytes b) { return kLeftPx + (std::log2(static_cast<double>(std::max<Bytes>(1, b))) - lo) / span * kPlotWidthPx; };
  auto y_of = [&](double v) { return kTopPx + kPlotHeightPx - v / y_max * kPlotHeightPx; };
  const double width = kLeftPx + kPlotWidthPx + 40, height = kTopPx + kPlotHeightPx + kBottomPx;
  out += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">\n", px(width),
                     px(height));
  for (double v : y_ticks)
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#e0e0e0\"/><text class=\"tick\" x=\"{3}\" "
                       "y=\"{4}\" text-anchor=\"end\">{5:g}</text>\n",
                       px(kLeftPx), px(kLeftPx + kPlotWidthPx), px(y_of(v)), px(kLeftPx - 4), px(y_of(v) + 3), v);
  // A size label at most every ~70 px, on the rows' own sizes.
  double last_label_x = -1e9;
  for (const SweepRow& row : r.rows) {
    const double x = x_of(row.size_bytes);
    if (x - last_label_x < 70) continue;
    last_label_x = x;
    out += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(x),
                       px(kTopPx + kPlotHeightPx + 14), size_text(row.size_bytes));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">message size</text>\n", px(kLeftPx + kPlotWidthPx / 2),
                     px(height - 6));
  out += fmt::format("<text x=\"12\" y=\"{0}\" transform=\"rotate(-90 12 {0})\" text-anchor=\"middle\">GB/s</text>\n",
                     px(kTopPx + kPlotHeightPx / 2));
  std::string bus, alg;
  for (const SweepRow& row : r.rows) {
    bus += fmt::format("{}{},{}", bus.empty() ? "" : " ", px(x_of(row.size_bytes)), px(y_of(row.busbw_GBps)));
    alg += fmt::format("{}{},{}", alg.empty() ? "" : " ", px(x_of(row.size_bytes)), px(y_of(row.algbw_GBps)));
  }
  out += "<polyline points=\"" + alg + "\" fill=\"none\" stroke=\"#E69F00\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n";
  out += "<polyline points=\"" + bus + "\" fill=\"none\" stroke=\"#0072B2\" stroke-width=\"2\"/>\n";
  for (const SweepRow& row : r.rows)
    out += fmt::format("<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"#0072B2\" data-size=\"{}\" data-busbw=\"{}\">"
                       "<title>{}: busbw {:.2f} GB/s, algbw {:.2f} GB/s, {:.2f} us, {}/{}</title></circle>\n",
                       px(x_of(row.size_bytes)), px(y_of(row.busbw_GBps)), row.size_bytes, row.busbw_GBps,
                       size_text(row.size_bytes), row.busbw_GBps, row.algbw_GBps, row.time_s * 1e6,
                       xml_escape(row.algorithm), xml_escape(row.protocol));
  out += fmt::format("<rect x=\"{}\" y=\"8\" width=\"14\" height=\"3\" fill=\"#0072B2\"/><text x=\"{}\" y=\"13\">busbw</text>"
                     "<rect x=\"{}\" y=\"8\" width=\"14\" height=\"3\" fill=\"#E69F00\"/><text x=\"{}\" y=\"13\">algbw</text>\n",
                     px(kLeftPx), px(kLeftPx + 18), px(kLeftPx + 80), px(kLeftPx + 98));
  return out + "</svg>\n" + rows_table(r) + "</section>\n";
}

}  // namespace

std::string size_text(Bytes bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (u < 4 && v >= 1024 && std::fmod(v, 1024) == 0) v /= 1024, ++u;
  return fmt::format("{} {}", static_cast<unsigned long long>(v), units[u]);  // whole: only exact multiples are scaled
}

std::string collective_report_html(const CollectiveReport& r) {
  return report_document(r.title, summary_section(r) + bandwidth_section(r) +
                                       "<section id=\"links\">\n<h2>Link utilization per tier, largest size</h2>\n" +
                                       link_tiers_table(r.largest_link_tiers, r.link_note) + "</section>\n");
}

}  // namespace clustersim
