#pragma once
// The small pieces every SVG chart of the HTML report is made of: text escaped for XML, a time axis
// with round ticks labelled in ms or s, and coordinates printed the same way on every run (the
// report is byte-identical when rerun).
#include <string>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

/// `&`, `<`, `>` and `"` escaped, for text and attribute values alike.
std::string xml_escape(const std::string& text);

/// A pixel coordinate or length, to 0.01 px.
std::string px(double value);

struct TimeTick {
  Seconds at_s = 0;
  std::string label;  // "0 ms", "250 ms", "1.5 s"
};

/// Ticks from 0 to at least `span_s`, 1, 2 or 5 times a power of ten apart, about `target` of them;
/// labelled in ms when they are less than a second apart, else in s.
std::vector<TimeTick> time_ticks(Seconds span_s, int target = 8);

/// The same steps for any quantity: 0, step, ... up to at least `span`.
std::vector<double> round_ticks(double span, int target = 6);

/// A duration as the report prints it: "850 us", "12.3 ms", "4.52 s" (three significant figures).
std::string duration_text(Seconds s);

}  // namespace clustersim
