#include "simulator/svg_draw.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace clustersim {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string px(double value) {
  const std::string s = fmt::format("{:.2f}", value);
  return s == "-0.00" ? "0.00" : s;
}

std::vector<TimeTick> time_ticks(Seconds span_s, int target) {
  if (!(span_s > 0)) return {{0, "0 s"}};
  // The step: the smallest 1, 2 or 5 x 10^k giving at most `target` intervals.
  const double raw = span_s / std::max(1, target);
  int exponent = static_cast<int>(std::floor(std::log10(raw)));
  int mantissa = 1;
  for (;; ) {
    const double step = mantissa * std::pow(10.0, exponent);
    if (step >= raw * (1 - 1e-12)) break;
    if (mantissa == 1) mantissa = 2;
    else if (mantissa == 2) mantissa = 5;
    else mantissa = 1, ++exponent;
  }
  const bool in_ms = exponent < 0;  // steps under a second: label in ms
  const int unit_exponent = exponent + (in_ms ? 3 : 0);
  const int decimals = std::max(0, -unit_exponent);
  const double step_s = mantissa * std::pow(10.0, exponent);
  const int count = static_cast<int>(std::ceil(span_s / step_s - 1e-9));
  std::vector<TimeTick> ticks;
  for (int i = 0; i <= count; ++i) {
    // The label from integers, so 3 x 0.1 prints as 0.3.
    const double in_unit = static_cast<double>(i) * mantissa * std::pow(10.0, unit_exponent);
    ticks.push_back({i * step_s, fmt::format("{:.{}f} {}", in_unit, decimals, in_ms ? "ms" : "s")});
  }
  return ticks;
}

std::string duration_text(Seconds s) {
  const double a = std::abs(s);
  if (a >= 1) return fmt::format("{:.3g} s", s);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

}  // namespace clustersim
