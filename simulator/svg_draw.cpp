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

namespace {

/// The smallest step of 1, 2 or 5 x 10^exponent at least `raw`.
struct Step {
  int mantissa = 1;
  int exponent = 0;
  double value() const { return mantissa * std::pow(10.0, exponent); }
};
Step round_step(double raw) {
  Step s{1, static_cast<int>(std::floor(std::log10(raw)))};
  while (s.value() < raw * (1 - 1e-12)) {
    if (s.mantissa == 1) s.mantissa = 2;
    else if (s.mantissa == 2) s.mantissa = 5;
    else s.mantissa = 1, ++s.exponent;
  }
  return s;
}

}  // namespace

std::vector<TimeTick> time_ticks(Seconds span_s, int target) {
  if (!(span_s > 0)) return {{0, "0 s"}};
  const Step step = round_step(span_s / std::max(1, target));
  const bool in_ms = step.exponent < 0;  // steps under a second: label in ms
  const int unit_exponent = step.exponent + (in_ms ? 3 : 0);
  const int decimals = std::max(0, -unit_exponent);
  const int count = static_cast<int>(std::ceil(span_s / step.value() - 1e-9));
  std::vector<TimeTick> ticks;
  for (int i = 0; i <= count; ++i) {
    // The label from integers, so 3 x 0.1 prints as 0.3.
    const double in_unit = static_cast<double>(i) * step.mantissa * std::pow(10.0, unit_exponent);
    ticks.push_back({i * step.value(), fmt::format("{:.{}f} {}", in_unit, decimals, in_ms ? "ms" : "s")});
  }
  return ticks;
}

std::vector<double> round_ticks(double span, int target) {
  if (!(span > 0)) return {0};
  const Step step = round_step(span / std::max(1, target));
  const int count = static_cast<int>(std::ceil(span / step.value() - 1e-9));
  std::vector<double> ticks;
  for (int i = 0; i <= count; ++i) ticks.push_back(i * step.value());
  return ticks;
}

std::string duration_text(Seconds s) {
  const double a = std::abs(s);
  if (a >= 1) return fmt::format("{:.3g} s", s);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

}  // namespace clustersim
