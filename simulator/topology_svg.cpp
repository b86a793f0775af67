#include "simulator/topology_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "simulator/svg_draw.hpp"

namespace clustersim {

namespace {

constexpr double kBoxW = 170, kSlotW = 190, kLinePx = 12, kRowGapPx = 90, kTopPx = 34, kMarginPx = 20;
constexpr double kArcRoomPx = 50;  // above a row whose boxes are joined to each other (a torus's, a dragonfly's)
constexpr std::size_t kMaxRow = 12, kKeptEachSide = 5;
constexpr std::size_t kMaxLabelledEdges = 24;  // beyond this, edge labels go to the legend only
constexpr int kMaxBoxes = 40;                  // default_picture_level's bound

std::vector<std::string> lines_of(const std::string& label) {
  std::vector<std::string> out;
  std::istringstream in(label);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// Layer of a box: nodes, units, pods and GPUs at the bottom, NVSwitches and NICs above them,
/// then each switch tier.
int rank_of(const PictureBox& b, PictureLevel level) {
  if (b.holds_nodes || b.kind == VertexKind::gpu) return 0;
  if (b.kind != VertexKind::fabric_switch) return 1;
  return b.tier + (level == PictureLevel::full ? 1 : 0);
}

struct Placed {
  double x = 0, y = 0, h = 0;  // centre x, top y, height
  bool shown = false;
};

}  // namespace

const char* to_string(PictureLevel level) {
  switch (level) {
    case PictureLevel::full: return "full";
    case PictureLevel::node: return "node";
    case PictureLevel::leaf: return "leaf";
    case PictureLevel::spine: return "spine";
  }
  return "?";
}

PictureLevel default_picture_level(const Cluster& cluster) {
  for (PictureLevel level : {PictureLevel::node, PictureLevel::leaf})
    if (cluster_picture(cluster, level).boxes.size() <= static_cast<std::size_t>(kMaxBoxes)) return level;
  return PictureLevel::spine;
}

std::string topology_svg(const Cluster& cluster, PictureLevel level) {
  const ClusterPicture picture = cluster_picture(cluster, level);
  const std::size_t n = picture.boxes.size();
  // Rows, bottom (rank 0) first; each row's boxes in picture order.
  std::map<int, std::vector<int>> by_rank;
  for (std::size_t i = 0; i < n; ++i) by_rank[rank_of(picture.boxes[i], level)].push_back(static_cast<int>(i));
  std::vector<std::vector<int>> rows;
  for (auto& [rank, boxes] : by_rank) rows.push_back(boxes);

  // A long row keeps its first and last boxes; the rest are elided into one box. They are "like
  // these" when their label (numbers aside) and their edges (to the same shown boxes, of the same
  // type and count) match the first box's.
  std::vector<char> elided(n, 0);
  struct Ellipsis {
    std::size_t row = 0;
    int count = 0;
    bool alike = true;
    std::string plural;
  };
  std::vector<Ellipsis> ellipses;
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (rows[r].size() > kMaxRow)
      for (std::size_t k = kKeptEachSide; k + kKeptEachSide < rows[r].size(); ++k) elided[static_cast<std::size_t>(rows[r][k])] = 1;
  // A box's label with every number as #, and its edges by the far box's such label: boxes alike
  // but for their index and their neighbours' index have the same signature.
  auto shape = [&](int box) {
    std::string out;
    for (char c : picture.boxes[static_cast<std::size_t>(box)].label) {
      const bool digit = c >= '0' && c <= '9';
      if (!digit) out += c;
      else if (out.empty() || out.back() != '#') out += '#';
    }
    return out;
  };
  auto signature = [&](int box) {
    std::multiset<std::string> ends;
    for (const PictureEdge& e : picture.edges)
      if (e.a == box || e.b == box) ends.insert(shape(e.a == box ? e.b : e.a) + "|" + e.label);
    std::string out = shape(box);
    for (const std::string& s : ends) out += "\n" + s;
    return out;
  };
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() <= kMaxRow) continue;
    Ellipsis e;
    e.row = r;
    e.count = static_cast<int>(rows[r].size() - 2 * kKeptEachSide);
    e.plural = picture.boxes[static_cast<std::size_t>(rows[r][0])].plural;
    const std::string first = signature(rows[r][0]);
    for (int box : rows[r]) e.alike = e.alike && signature(box) == first;
    ellipses.push_back(e);
  }

  // Geometry: rows from the top (highest tier) down, slots centred.
  std::size_t widest = 1;
  for (const auto& row : rows) widest = std::max(widest, std::min(row.size(), 2 * kKeptEachSide + 1));
  const double width = std::max(640.0, static_cast<double>(widest) * kSlotW + 2 * kMarginPx);
  std::vector<Placed> at(n);
  std::vector<Placed> ellipsis_at(rows.size());
  // Rows with an edge inside them (direct networks: router to router) get room above for its arcs.
  std::vector<int> row_of(n, 0);
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int box : rows[r]) row_of[static_cast<std::size_t>(box)] = static_cast<int>(r);
  std::set<int> arced_rows;
  for (const PictureEdge& e : picture.edges)
    if (row_of[static_cast<std::size_t>(e.a)] == row_of[static_cast<std::size_t>(e.b)] && !elided[static_cast<std::size_t>(e.a)] &&
        !elided[static_cast<std::size_t>(e.b)])
      arced_rows.insert(row_of[static_cast<std::size_t>(e.a)]);
  double y = kTopPx;
  for (std::size_t r = rows.size(); r-- > 0;) {
    const auto& row = rows[r];
    if (arced_rows.count(static_cast<int>(r))) y += kArcRoomPx;
    const bool long_row = row.size() > kMaxRow;
    const std::size_t slots = long_row ? 2 * kKeptEachSide + 1 : row.size();
    double row_h = 2 * kLinePx + 8;
    for (int box : row)
      row_h = std::max(row_h, static_cast<double>(lines_of(picture.boxes[static_cast<std::size_t>(box)].label).size()) * kLinePx + 10);
    auto slot_x = [&](std::size_t k) { return width / 2 + (static_cast<double>(k) - (static_cast<double>(slots) - 1) / 2) * kSlotW; };
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (elided[static_cast<std::size_t>(row[k])]) continue;
      const std::size_t slot = long_row && k >= kKeptEachSide ? k - row.size() + slots : k;
      at[static_cast<std::size_t>(row[k])] = {slot_x(slot), y, row_h, true};
    }
    if (long_row) ellipsis_at[r] = {slot_x(kKeptEachSide), y, row_h, true};
    y += row_h + kRowGapPx;
  }
  // The legend below the picture: one line per distinct edge label.
  std::vector<std::pair<std::string, std::string>> legend;  // (colour, label)
  for (const PictureEdge& e : picture.edges)
    if (std::find(legend.begin(), legend.end(), std::make_pair(e.colour, e.label)) == legend.end()) legend.push_back({e.colour, e.label});
  const double legend_y = y - kRowGapPx + 30;
  const double height = legend_y + static_cast<double>(legend.size()) * 14 + 10;

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"topology\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"10\">\n",
      px(width), px(height));
  out += fmt::format("<text class=\"run-title\" x=\"{}\" y=\"16\" font-weight=\"bold\" font-size=\"12\">{}: {} level, {} boxes{}</text>\n",
                     px(kMarginPx), xml_escape(cluster.spec.name), to_string(level), n,
                     ellipses.empty() ? "" : " (long rows shortened)");
  out += fmt::format("<text class=\"note\" x=\"{}\" y=\"28\" fill=\"#555\" font-size=\"9\">Bandwidths per direction of each "
                     "full-duplex link (line rate); one line stands for every link of a type between two boxes.</text>\n",
                     px(kMarginPx));
  // Edges first, boxes over them.
  std::size_t drawn = 0;
  for (const PictureEdge& e : picture.edges) drawn += at[static_cast<std::size_t>(e.a)].shown && at[static_cast<std::size_t>(e.b)].shown;
  const bool labelled = drawn <= kMaxLabelledEdges;
  out += "<g class=\"edges\">\n";
  std::set<std::pair<std::size_t, int>> elided_ends;  // (row of an ellipsis, shown box it reaches)
  for (const PictureEdge& e : picture.edges) {
    const Placed &a = at[static_cast<std::size_t>(e.a)], &b = at[static_cast<std::size_t>(e.b)];
    if (!a.shown || !b.shown) {
      // An edge of elided boxes: one dashed line from their ellipsis box to each shown box they reach.
      const int hidden = a.shown ? e.b : e.a, other = a.shown ? e.a : e.b;
      if (!at[static_cast<std::size_t>(other)].shown) continue;
      for (const Ellipsis& el : ellipses)
        if (std::find(rows[el.row].begin(), rows[el.row].end(), hidden) != rows[el.row].end()) elided_ends.insert({el.row, other});
      continue;
    }
    const double width_px = std::min(6.0, 1 + std::log2(static_cast<double>(e.count)));
    const Placed& low = a.y > b.y ? a : b;
    const Placed& high = a.y > b.y ? b : a;
    double lx = 0, ly = 0;
    if (low.y == high.y) {  // same row: an arc above, higher the farther apart, within the room left for it
      const double top = low.y, mid = (low.x + high.x) / 2;
      const double rise = std::min(2 * (kArcRoomPx - 8), 24 + 0.1 * std::abs(high.x - low.x));  // the curve peaks at half
      out += fmt::format("<path d=\"M {} {} Q {} {} {} {}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"><title>{}</title></path>\n",
                         px(low.x), px(top), px(mid), px(top - rise), px(high.x), px(top), e.colour, px(width_px), xml_escape(e.label));
      lx = mid, ly = top - rise / 2 - 2;
    } else {
      const double x1 = low.x, y1 = low.y, x2 = high.x, y2 = high.y + high.h;
      out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"><title>{}</title></line>\n",
                         px(x1), px(y1), px(x2), px(y2), e.colour, px(width_px), xml_escape(e.label));
      lx = x1 + (x2 - x1) * 0.35, ly = y1 + (y2 - y1) * 0.35;
    }
    if (labelled)
      out += fmt::format("<text class=\"edge-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"9\" fill=\"#222\" "
                         "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">{}</text>\n",
                         px(lx), px(ly), xml_escape(e.label));
  }
  for (const auto& [row, other] : elided_ends) {
    const Placed &from = ellipsis_at[row], &to = at[static_cast<std::size_t>(other)];
    const bool up = to.y < from.y;
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n", px(from.x),
                       px(up ? from.y : from.y + from.h), px(to.x), px(up ? to.y + to.h : to.y));
  }
  out += "</g>\n<g class=\"boxes\">\n";
  auto draw_box = [&](const Placed& p, const std::vector<std::string>& lines, const char* fill, bool white, const std::string& cls,
                      const std::string& tooltip) {
    out += fmt::format("<g class=\"{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"{}\" "
                       "stroke=\"#333\" stroke-width=\"0.8\"/>\n",
                       cls, xml_escape(tooltip), px(p.x - kBoxW / 2), px(p.y), px(kBoxW), px(p.h), fill);
    const double first = p.y + p.h / 2 - (static_cast<double>(lines.size()) - 1) * kLinePx / 2 + 3.5;
    for (std::size_t i = 0; i < lines.size(); ++i)
      out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\"{}>{}</text>\n", px(p.x),
                         px(first + static_cast<double>(i) * kLinePx), white ? "white" : "#111", i == 0 ? " font-weight=\"bold\"" : "",
                         xml_escape(lines[i]));
    out += "</g>\n";
  };
  for (std::size_t i = 0; i < n; ++i)
    if (at[i].shown) {
      const PictureBox& b = picture.boxes[i];
      draw_box(at[i], lines_of(b.label), box_fill(b), box_text_white(b), "box", b.label);
    }
  for (const Ellipsis& el : ellipses) {
    const std::string head = fmt::format("... {} more {}", el.count, el.plural);
    const std::string tail = el.alike ? "like these" : "not all alike (--dot draws each)";
    draw_box(ellipsis_at[el.row], {head, tail}, "#f4f4f4", false, "box elided", head + " " + tail);
  }
  out += "</g>\n<g class=\"legend\">\n";
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const double ly = legend_y + static_cast<double>(i) * 14;
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                       px(kMarginPx), px(ly - 3), px(kMarginPx + 24), px(ly - 3), legend[i].first, px(kMarginPx + 30), px(ly),
                       xml_escape(legend[i].second));
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace clustersim
