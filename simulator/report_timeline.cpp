#include "simulator/report_timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "simulator/svg_draw.hpp"

namespace clustersim {

namespace {

constexpr double kLabelPx = 110, kPlotPx = 1100, kRightPx = 30;
constexpr double kComputeRowPx = 14, kStreamRowPx = 8, kTitlePx = 22, kGapPx = 10, kAxisPx = 18, kLegendPx = 44;

// Okabe and Ito's colour-blind-safe palette (Color Universal Design, 2008) for the pass kinds.
const char* kind_fill(PassKind kind) {
  switch (kind) {
    case PassKind::forward: return "#0072B2";
    case PassKind::backward: return "#D55E00";
    case PassKind::backward_input: return "#E69F00";
    case PassKind::backward_weight: return "#009E73";
  }
  return "#999999";
}

const char* kind_letter(PassKind kind) {
  switch (kind) {
    case PassKind::forward: return "F";
    case PassKind::backward: return "B";
    case PassKind::backward_input: return "B input";
    case PassKind::backward_weight: return "W";
  }
  return "?";
}

const std::vector<std::string>& known_streams() {
  static const std::vector<std::string> order{"tp", "cp", "ep", "pp", "dp"};
  return order;
}

/// Streams take the palette's other hues (and Tol's wine and teal), so no row reads as a pass kind.
const char* stream_fill(const std::string& stream) {
  if (stream == "tp") return "#F0E442";
  if (stream == "cp") return "#882255";
  if (stream == "ep") return "#44AA99";
  if (stream == "pp") return "#CC79A7";
  if (stream == "dp") return "#56B4E9";
  return "#999999";
}

std::string stream_label(const std::string& stream) {
  if (stream == "pp") return "pp send";
  if (stream == "dp") return "dp grads";
  return stream;
}

/// Chunk 0 is plain; later chunks lay a pattern over the kind's colour.
constexpr int kChunkPatterns = 3;
std::string chunk_patterns() {
  return "<defs>\n"
         "<pattern id=\"chunk1\" patternUnits=\"userSpaceOnUse\" width=\"5\" height=\"5\" patternTransform=\"rotate(45)\">"
         "<rect width=\"2\" height=\"5\" fill=\"white\" fill-opacity=\"0.6\"/></pattern>\n"
         "<pattern id=\"chunk2\" patternUnits=\"userSpaceOnUse\" width=\"4\" height=\"4\">"
         "<circle cx=\"2\" cy=\"2\" r=\"1\" fill=\"white\" fill-opacity=\"0.75\"/></pattern>\n"
         "<pattern id=\"chunk3\" patternUnits=\"userSpaceOnUse\" width=\"5\" height=\"5\">"
         "<path d=\"M0 0L5 5M5 0L0 5\" stroke=\"black\" stroke-opacity=\"0.45\" stroke-width=\"1\"/></pattern>\n"
         "</defs>\n";
}
std::string chunk_overlay(int chunk) { return fmt::format("url(#chunk{})", std::min(chunk, kChunkPatterns)); }

std::string axis(const std::vector<TimeTick>& ticks, double px_per_s, double y) {
  std::string out;
  for (const TimeTick& t : ticks) {
    const double x = kLabelPx + t.at_s * px_per_s;
    out += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(x),
                       px(y + 12), xml_escape(t.label));
  }
  return out;
}

}  // namespace

std::vector<int> pass_chunks(const std::vector<PassSpan>& passes) {
  std::map<int, std::set<int>> held;  // rank -> model stages
  for (const PassSpan& p : passes) held[p.rank].insert(p.stage);
  std::vector<int> out;
  out.reserve(passes.size());
  for (const PassSpan& p : passes) {
    const std::set<int>& s = held[p.rank];
    out.push_back(static_cast<int>(std::distance(s.begin(), s.find(p.stage))));
  }
  return out;
}

std::vector<std::string> stream_order(const std::vector<ReportSpan>& spans) {
  std::set<std::string> present;
  for (const ReportSpan& s : spans) present.insert(s.stream);
  std::vector<std::string> out;
  for (const std::string& k : known_streams())
    if (present.erase(k)) out.push_back(k);
  out.insert(out.end(), present.begin(), present.end());  // std::set: by name
  return out;
}

std::string report_timeline_svg(const std::vector<ReportRun>& runs) {
  Seconds longest = 0;
  double height = kLegendPx + kAxisPx;
  int most_chunks = 1;
  std::vector<std::string> all_streams;
  for (const ReportRun& r : runs) {
    longest = std::max(longest, r.iteration_s);
    height += kTitlePx + kGapPx;
    if (!r.why.empty()) {
      height += kComputeRowPx + 4;
      continue;
    }
    const std::vector<std::string> streams = stream_order(r.streams);
    for (const std::string& s : streams)
      if (std::find(all_streams.begin(), all_streams.end(), s) == all_streams.end()) all_streams.push_back(s);
    height += r.ranks * (kComputeRowPx + static_cast<double>(streams.size()) * kStreamRowPx);
    for (int c : pass_chunks(r.passes)) most_chunks = std::max(most_chunks, c + 1);
  }
  height += kAxisPx;
  const std::vector<TimeTick> ticks = time_ticks(longest);
  const Seconds scale_s = std::max(longest, ticks.back().at_s);
  const double px_per_s = scale_s > 0 ? kPlotPx / scale_s : 0;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"per-rank timeline\">\n",
      px(kLabelPx + kPlotPx + kRightPx), px(height), px(kLabelPx + kPlotPx + kRightPx), px(height));
  svg += chunk_patterns();

  // Legend: kinds, chunks (when any run has more than one), streams.
  double x = kLabelPx;
  for (PassKind k : {PassKind::forward, PassKind::backward, PassKind::backward_input, PassKind::backward_weight}) {
    svg += fmt::format("<rect x=\"{}\" y=\"6\" width=\"14\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"15\">{}</text>\n",
                       px(x), kind_fill(k), px(x + 18), kind_letter(k));
    x += 90;
  }
  for (int c = 1; c < std::min(most_chunks, kChunkPatterns + 1); ++c) {
    svg += fmt::format("<rect x=\"{0}\" y=\"6\" width=\"14\" height=\"10\" fill=\"#666666\"/>"
                       "<rect x=\"{0}\" y=\"6\" width=\"14\" height=\"10\" fill=\"{1}\"/><text x=\"{2}\" y=\"15\">chunk {3}{4}</text>\n",
                       px(x), chunk_overlay(c), px(x + 18), c, c == kChunkPatterns && most_chunks > c + 1 ? "+" : "");
    x += 90;
  }
  if (most_chunks > 1) svg += fmt::format("<text x=\"{}\" y=\"15\" class=\"note\">(chunk 0 plain)</text>\n", px(x));
  x = kLabelPx;
  for (const std::string& s : all_streams) {
    svg += fmt::format("<rect x=\"{}\" y=\"24\" width=\"14\" height=\"8\" fill=\"{}\"/><text x=\"{}\" y=\"32\">{}</text>\n",
                       px(x), stream_fill(s), px(x + 18), xml_escape(stream_label(s)));
    x += 90;
  }

  // Grid and both axes.
  double y = kLegendPx;
  const double plot_top = y + kAxisPx, plot_bottom = height - kAxisPx;
  svg += "<g class=\"axis\">\n" + axis(ticks, px_per_s, y);
  for (const TimeTick& t : ticks)
    svg += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#e0e0e0\"/>\n",
                       px(kLabelPx + t.at_s * px_per_s), px(plot_top), px(plot_bottom));
  svg += axis(ticks, px_per_s, plot_bottom) + "</g>\n";

  y = plot_top;
  for (const ReportRun& r : runs) {
    svg += fmt::format("<text class=\"run-title\" x=\"4\" y=\"{}\">{}</text>\n", px(y + 15),
                       xml_escape(r.name + (r.why.empty() ? ": " + duration_text(r.iteration_s) : "")));
    y += kTitlePx;
    if (!r.why.empty()) {
      svg += fmt::format("<g class=\"infeasible\" data-run=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                         "fill=\"#fbeaea\"/><text x=\"{}\" y=\"{}\">could not run: {}</text></g>\n",
                         xml_escape(r.name), px(kLabelPx), px(y), px(kPlotPx), px(kComputeRowPx + 4), px(kLabelPx + 6),
                         px(y + 13), xml_escape(r.why));
      y += kComputeRowPx + 4 + kGapPx;
      continue;
    }
    const std::vector<std::string> streams = stream_order(r.streams);
    const double rank_px = kComputeRowPx + static_cast<double>(streams.size()) * kStreamRowPx;
    const std::vector<int> chunks = pass_chunks(r.passes);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#bbbbbb\"/>\n",
                       px(kLabelPx), px(y), px(r.iteration_s * px_per_s), px(r.ranks * rank_px));
    // Rows: labels first, then the boxes of each row in one group.
    std::vector<std::string> rows(static_cast<std::size_t>(r.ranks) * (1 + streams.size()));
    auto row_of = [&](int rank, std::size_t stream) -> std::string& {
      return rows[static_cast<std::size_t>(rank) * (1 + streams.size()) + stream];
    };
    for (std::size_t i = 0; i < r.passes.size(); ++i) {
      const PassSpan& p = r.passes[i];
      if (p.rank < 0 || p.rank >= r.ranks) continue;
      // Two passes of a rank that start together are an overlapped F&B unit: one in each half.
      const bool with_next = i + 1 < r.passes.size() && r.passes[i + 1].rank == p.rank && r.passes[i + 1].start_s == p.start_s;
      const bool with_prev = i > 0 && r.passes[i - 1].rank == p.rank && r.passes[i - 1].start_s == p.start_s;
      const double h = (with_next || with_prev) ? (kComputeRowPx - 2) / 2 : kComputeRowPx - 2;
      const double bx = kLabelPx + p.start_s * px_per_s, bw = std::max(0.5, (p.end_s - p.start_s) * px_per_s);
      const double by = y + p.rank * rank_px + 1 + (with_prev ? h : 0);
      const int chunk = chunks[i];
      std::string& row = row_of(p.rank, 0);
      row += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} microbatch {} chunk {} "
                         "(stage {}): {:.6f} to {:.6f} s</title></rect>\n",
                         px(bx), px(by), px(bw), px(h), kind_fill(p.kind), kind_letter(p.kind), p.microbatch, chunk,
                         p.stage, p.start_s, p.end_s);
      if (chunk > 0)
        row += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" pointer-events=\"none\"/>\n",
                           px(bx), px(by), px(bw), px(h), chunk_overlay(chunk));
      if (bw >= 14 && h >= 8)
        row += fmt::format("<text x=\"{}\" y=\"{}\" class=\"mb\">{}</text>\n", px(bx + bw / 2), px(by + h - 3), p.microbatch);
    }
    for (const ReportSpan& s : r.streams) {
      if (s.rank < 0 || s.rank >= r.ranks) continue;
      const std::size_t k = static_cast<std::size_t>(std::find(streams.begin(), streams.end(), s.stream) - streams.begin());
      const double bx = kLabelPx + s.start_s * px_per_s, bw = std::max(0.5, (s.end_s - s.start_s) * px_per_s);
      const double by = y + s.rank * rank_px + kComputeRowPx + static_cast<double>(k) * kStreamRowPx + 1;
      row_of(s.rank, k + 1) += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {:.6f} to {:.6f} s</title></rect>\n",
          px(bx), px(by), px(bw), px(kStreamRowPx - 2), stream_fill(s.stream), xml_escape(s.name), s.start_s, s.end_s);
    }
    for (int rank = 0; rank < r.ranks; ++rank) {
      const double top = y + rank * rank_px;
      svg += fmt::format("<g class=\"row\" data-run=\"{}\" data-rank=\"{}\" data-stream=\"compute\"><text x=\"4\" y=\"{}\">rank {}</text>\n",
                         xml_escape(r.name), rank, px(top + 10), rank);
      svg += row_of(rank, 0) + "</g>\n";
      for (std::size_t k = 0; k < streams.size(); ++k) {
        svg += fmt::format("<g class=\"row\" data-run=\"{}\" data-rank=\"{}\" data-stream=\"{}\"><text x=\"14\" y=\"{}\" "
                           "class=\"stream\">{}</text>\n",
                           xml_escape(r.name), rank, xml_escape(streams[k]), px(top + kComputeRowPx + k * kStreamRowPx + 7),
                           xml_escape(stream_label(streams[k])));
        svg += row_of(rank, k + 1) + "</g>\n";
      }
    }
    y += r.ranks * rank_px + kGapPx;
  }
  return svg + "</svg>\n";
}

std::string report_timeline_svg_file(const std::vector<ReportRun>& runs) {
  std::string svg = report_timeline_svg(runs);
  // The page's rules for the classes the timeline uses, so a viewer shows the file as the page does.
  const std::string style =
      "<style>\nsvg { font-family: sans-serif; font-size: 10px; }\n.run-title { font-size: 12px; font-weight: bold; }\n"
      ".mb { fill: white; font-size: 8px; text-anchor: middle; }\n.stream, .note { fill: #555; font-size: 9px; }\n"
      ".tick { fill: #444; }\n</style>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg.insert(svg.find(">\n") + 2, style);
  return svg;
}

}  // namespace clustersim
