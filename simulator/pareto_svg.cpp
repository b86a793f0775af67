#include "simulator/pareto_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simulator/svg_draw.hpp"

namespace clustersim {
namespace {

constexpr double kWidth = 720, kHeight = 480;
constexpr double kLeft = 80, kRight = 200, kTop = 40, kBottom = 60;  // the right margin holds labels

std::string tick_text(double v) { return fmt::format("{:g}", v); }

/// Round ticks covering [lo, hi] (not from 0: a sweep's points differ by a few percent, which an
/// axis from 0 would flatten), in the units of the labels.
std::vector<double> covering_ticks(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = lo != 0 ? std::abs(lo) * 0.05 : 1;
    lo -= pad, hi += pad;
  }
  const std::vector<double> steps = round_ticks(hi - lo);
  const double step = steps.size() > 1 ? steps[1] : hi - lo;
  std::vector<double> ticks;
  for (long k = static_cast<long>(std::floor(lo / step + 1e-9)); k * step < hi + step * (1 - 1e-9); ++k) ticks.push_back(k * step);
  return ticks;
}

}  // namespace

std::string pareto_svg(const std::vector<ScatterPoint>& points, const std::string& title, const std::string& x_label,
                       double x_scale, const std::string& y_label, double y_scale) {
  double x_lo = points.empty() ? 0 : points[0].x / x_scale, x_hi = x_lo;
  double y_lo = points.empty() ? 0 : points[0].y / y_scale, y_hi = y_lo;
  for (const ScatterPoint& p : points) {
    x_lo = std::min(x_lo, p.x / x_scale), x_hi = std::max(x_hi, p.x / x_scale);
    y_lo = std::min(y_lo, p.y / y_scale), y_hi = std::max(y_hi, p.y / y_scale);
  }
  const std::vector<double> xt = covering_ticks(x_lo, x_hi), yt = covering_ticks(y_lo, y_hi);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto X = [&](double v) { return kLeft + (v / x_scale - xt.front()) / (xt.back() - xt.front()) * plot_w; };
  auto Y = [&](double v) { return kTop + plot_h - (v / y_scale - yt.front()) / (yt.back() - yt.front()) * plot_h; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      px(kWidth), px(kHeight), px(kWidth), px(kHeight));
  svg += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", px(kWidth), px(kHeight));
  svg += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n", px(kLeft), xml_escape(title));
  for (double t : xt) {
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#ddd\"/>\n", px(X(t * x_scale)), px(kTop),
                       px(kTop + plot_h));
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(X(t * x_scale)),
                       px(kTop + plot_h + 16), tick_text(t));
  }
  for (double t : yt) {
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#ddd\"/>\n", px(kLeft), px(Y(t * y_scale)),
                       px(kLeft + plot_w));
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(kLeft - 6), px(Y(t * y_scale) + 4),
                       tick_text(t));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(kLeft + plot_w / 2), px(kHeight - 16),
                     xml_escape(x_label));
  svg += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n",
                     px(kTop + plot_h / 2), px(kTop + plot_h / 2), xml_escape(y_label));
  // The front as a line, cheapest first, under the dots.
  std::vector<const ScatterPoint*> front;
  for (const ScatterPoint& p : points)
    if (p.on_front) front.push_back(&p);
  std::sort(front.begin(), front.end(), [](const ScatterPoint* a, const ScatterPoint* b) { return a->x < b->x; });
  if (front.size() > 1) {
    std::string pts;
    for (const ScatterPoint* p : front) pts += (pts.empty() ? "" : " ") + px(X(p->x)) + "," + px(Y(p->y));
    svg += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"#0072B2\" stroke-width=\"2\"/>\n";
  }
  for (const ScatterPoint& p : points) {
    svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"><title>{}</title></circle>\n", px(X(p.x)), px(Y(p.y)),
                       p.on_front ? "#0072B2" : "#999", xml_escape(p.label));
    if (p.on_front)
      svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\">{}</text>\n", px(X(p.x) + 8), px(Y(p.y) + 4),
                         xml_escape(p.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace clustersim
