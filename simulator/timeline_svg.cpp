#include "simulator/timeline_svg.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace clustersim {

namespace {

constexpr double kPlotWidthPx = 1100, kLabelPx = 70, kRowPx = 14, kTitlePx = 22, kGapPx = 14, kLegendPx = 26;

const char* fill(PassKind kind) {
  switch (kind) {
    case PassKind::forward: return "#4c78a8";
    case PassKind::backward: return "#2e8b57";
    case PassKind::backward_input: return "#54a24b";
    case PassKind::backward_weight: return "#f58518";
  }
  return "#999999";
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string timeline_svg(const std::vector<Timeline>& timelines) {
  Seconds longest = 0;
  double height = kLegendPx;
  for (const Timeline& t : timelines) {
    longest = std::max(longest, t.iteration_s);
    height += kTitlePx + t.ranks * kRowPx + kGapPx;
  }
  const double px_per_s = longest > 0 ? kPlotWidthPx / longest : 0;
  const double width = kLabelPx + kPlotWidthPx + 10;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  double x = kLabelPx;
  for (PassKind k : {PassKind::forward, PassKind::backward, PassKind::backward_input, PassKind::backward_weight}) {
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"8\" width=\"12\" height=\"10\" fill=\"{}\"/><text x=\"{:.1f}\" y=\"17\">{}</text>\n",
                       x, fill(k), x + 16, to_string(k));
    x += 130;
  }
  double y = kLegendPx;
  for (const Timeline& t : timelines) {
    svg += fmt::format("<text x=\"4\" y=\"{:.1f}\" font-size=\"12\" font-weight=\"bold\">{}</text>\n", y + 15, escape(t.title));
    const double top = y + kTitlePx;
    for (int r = 0; r < t.ranks; ++r)
      svg += fmt::format("<text x=\"4\" y=\"{:.1f}\">rank {}</text>\n", top + r * kRowPx + 10, r);
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#ccc\"/>\n",
                       kLabelPx, top, t.iteration_s * px_per_s, t.ranks * kRowPx);
    for (std::size_t i = 0; i < t.passes.size(); ++i) {
      const PassSpan& p = t.passes[i];
      const bool shares_with_next = i + 1 < t.passes.size() && t.passes[i + 1].rank == p.rank && t.passes[i + 1].start_s == p.start_s;
      const bool shares_with_prev = i > 0 && t.passes[i - 1].rank == p.rank && t.passes[i - 1].start_s == p.start_s;
      const double h = (shares_with_next || shares_with_prev) ? (kRowPx - 2) / 2 : kRowPx - 2;
      const double bx = kLabelPx + p.start_s * px_per_s, bw = std::max(0.5, (p.end_s - p.start_s) * px_per_s);
      const double by = top + p.rank * kRowPx + 1 + (shares_with_prev ? h : 0);
      svg += fmt::format("<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\" stroke=\"white\" "
                         "stroke-width=\"0.3\"><title>{} mb {} stage {}: {:.6f}-{:.6f} s</title></rect>\n",
                         bx, by, bw, h, fill(p.kind), to_string(p.kind), p.microbatch, p.stage, p.start_s, p.end_s);
      if (bw >= 12 && h >= 8)
        svg += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" fill=\"white\" font-size=\"8\" text-anchor=\"middle\">{}</text>\n",
                           bx + bw / 2, by + h - 3, p.microbatch);
    }
    y = top + t.ranks * kRowPx + kGapPx;
  }
  return svg + "</svg>\n";
}

}  // namespace clustersim
