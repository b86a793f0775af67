#pragma once
// Per-rank pipeline timelines as one SVG: pipeline ranks as rows, passes as boxes coloured by kind
// (forward, backward, input gradient, weight gradient), one panel per simulated schedule, all on
// one time scale so their lengths compare. This is the picture schedule papers draw by hand.
#include <string>
#include <vector>

#include "simulator/iteration.hpp"

namespace clustersim {

struct Timeline {
  std::string title;  // e.g. "zb-v: 12.4 s"
  int ranks = 1;
  Seconds iteration_s = 0;
  std::vector<PassSpan> passes;
};

/// The panels stacked top to bottom. Two passes of one rank that start together (an overlapped F&B
/// unit) share the row, one in each half.
std::string timeline_svg(const std::vector<Timeline>& timelines);

}  // namespace clustersim
