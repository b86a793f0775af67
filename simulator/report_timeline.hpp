#pragma once
// The report's timeline: every run's pipeline ranks on one time scale, each rank a compute row
// (passes coloured by kind, their chunk drawn as a pattern over the colour) followed by one row per
// communication stream it used, and a run that could not run as one row saying why.
#include <string>
#include <vector>

#include "simulator/report_html.hpp"

namespace clustersim {

/// The SVG (with its legend and a time axis above and below), styled by the report page's sheet.
std::string report_timeline_svg(const std::vector<ReportRun>& runs);
/// The same picture as a file of its own (`compare --svg`): its styles inside it and a white ground.
std::string report_timeline_svg_file(const std::vector<ReportRun>& runs);

/// Each pass's chunk: its model stage's place among the stages its rank holds, lowest first (an
/// interleaved rank r holds r, r + p, ...; a V-shaped one r and 2p - 1 - r).
std::vector<int> pass_chunks(const std::vector<PassSpan>& passes);

/// The communication streams of a run in drawing order: tp, cp, ep, pp, dp, then any other by name.
std::vector<std::string> stream_order(const std::vector<ReportSpan>& spans);

}  // namespace clustersim
