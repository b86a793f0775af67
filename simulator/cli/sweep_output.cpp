#include "simulator/cli/sweep_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "simulator/pareto_svg.hpp"

namespace clustersim::cli {

void mark_pareto_front(std::vector<SweepRow>& rows) {
  std::vector<SweepRow*> ran;
  for (SweepRow& r : rows)
    if (r.best()) ran.push_back(&r);
  std::stable_sort(ran.begin(), ran.end(), [](const SweepRow* a, const SweepRow* b) {
    return a->cost.capital_usd != b->cost.capital_usd ? a->cost.capital_usd < b->cost.capital_usd
                                                      : a->tokens_per_s() > b->tokens_per_s();
  });
  double best = -1;
  for (SweepRow* r : ran)
    if (r->tokens_per_s() > best) {
      r->on_front = true;
      best = r->tokens_per_s();
    }
}

nlohmann::ordered_json sweep_point_json(const SweepRow& r, const Economics& e) {
  nlohmann::ordered_json j;
  j["point"] = r.point.text();
  j["cluster"] = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.point.values) j["cluster"][name] = value;
  j["cluster_name"] = r.cluster_name;
  j["gpus"] = r.gpus;
  j["nodes"] = r.bom.nodes;
  nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
  for (const auto& [tier, t] : r.bom.tiers)
    tiers.push_back({{"tier", tier}, {"switches", t.switches}, {"radix", t.radix}, {"cables", t.cables},
                     {"port_Gbps", t.port_Bps * 8 / 1e9}});
  j["bill_of_materials"] = {{"switches", r.bom.switches()}, {"cables", r.bom.cables()}, {"optics", r.bom.optics()},
                            {"tiers", tiers}};
  nlohmann::ordered_json lines = nlohmann::ordered_json::array();
  for (const CostLine& l : r.cost.lines)
    lines.push_back({{"item", l.item}, {"name", l.name}, {"count", l.count}, {"unit_price_usd", l.unit_price_usd},
                     {"unit_power_W", l.unit_power_W}});
  j["cost"] = {{"capital_usd", r.cost.capital_usd}, {"power_MW", r.cost.power_W / 1e6}, {"usd_per_year", usd_per_year(r.cost, e)},
               {"lines", lines}};
  j["candidates"] = r.candidates;
  j["valid"] = r.valid;
  j["verified"] = r.verified.size();
  j["tokens_per_s"] = r.tokens_per_s();
  j["tokens_per_usd"] = tokens_per_usd(r.tokens_per_s(), r.cost, e);
  j["tokens_per_MWh"] = tokens_per_MWh(r.tokens_per_s(), r.cost);
  j["pareto"] = r.on_front;
  if (r.best())
    j["best"] = row_json(*r.best());
  else
    j["best"] = {{"why", r.verified.empty() ? "nothing verified" : r.verified.front().why}};
  return j;
}

void print_sweep_table(const std::string& title, const std::vector<SweepRow>& rows, const Economics& e) {
  std::cout << title << "\n";
  std::cout << fmt::format("electricity {:g} USD/kWh, capital amortised over {:g} years\n\n", e.usd_per_kWh, e.amortisation_years);
  std::cout << fmt::format("# {:<30} {:>6} {:>8} {:>7} {:>12} {:>8} {:>12} {:>14} {:>12}  {}\n", "point", "GPUs", "switches",
                           "optics", "capital ($M)", "MW", "tokens/s", "tokens/$ (yr)", "tokens/MWh", "best configuration");
  for (const SweepRow& r : rows) {
    const std::string config = r.best() ? r.best()->screen.config.text() : "none ran: " + r.verified.front().why;
    std::cout << fmt::format("  {:<30} {:>6} {:>8} {:>7} {:>12.2f} {:>8.3f} {:>12.0f} {:>14.0f} {:>12.3g}  {}{}\n",
                             r.point.text(), r.gpus, r.bom.switches(), r.bom.optics(), r.cost.capital_usd / 1e6,
                             r.cost.power_W / 1e6, r.tokens_per_s(), tokens_per_usd(r.tokens_per_s(), r.cost, e),
                             tokens_per_MWh(r.tokens_per_s(), r.cost), config, r.on_front ? "  (front)" : "");
  }
  std::cout << "\n# Pareto front of tokens/s against capital cost: no cheaper point is as fast\n";
  std::vector<const SweepRow*> front;
  for (const SweepRow& r : rows)
    if (r.on_front) front.push_back(&r);
  std::stable_sort(front.begin(), front.end(),
                   [](const SweepRow* a, const SweepRow* b) { return a->cost.capital_usd < b->cost.capital_usd; });
  for (const SweepRow* r : front)
    std::cout << fmt::format("  {:<30} {:>10.2f} $M {:>12.0f} tokens/s\n", r->point.text(), r->cost.capital_usd / 1e6,
                             r->tokens_per_s());
}

std::string sweep_svg(const std::string& title, const std::vector<SweepRow>& rows) {
  std::vector<ScatterPoint> points;
  for (const SweepRow& r : rows)
    if (r.best()) points.push_back({r.cost.capital_usd, r.tokens_per_s(), r.point.text(), r.on_front});
  return pareto_svg(points, title, "capital cost (million USD)", 1e6, "tokens/s (thousands)", 1e3);
}

}  // namespace clustersim::cli
