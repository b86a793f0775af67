#pragma once
// A scatter of points with their Pareto front drawn over them (the points no cheaper one beats),
// as a stand-alone SVG: `clustersim sweep --svg`'s tokens/s against capital cost. Axes span the
// points with round ticks (svg_draw.hpp), not from 0; the same input gives the same bytes.
#include <string>
#include <vector>

namespace clustersim {

struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;
  bool on_front = false;
};

/// `x_label` and `y_label` name the axes with their units; `x_scale`/`y_scale` divide the values
/// for the tick labels (1e6 for millions).
std::string pareto_svg(const std::vector<ScatterPoint>& points, const std::string& title, const std::string& x_label,
                       double x_scale, const std::string& y_label, double y_scale);

}  // namespace clustersim
