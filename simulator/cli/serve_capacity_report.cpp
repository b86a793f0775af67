#include "simulator/cli/serve_capacity_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>

#include "simulator/cli/commands.hpp"

namespace clustersim::cli {

namespace {

std::string ms(Seconds s) { return fmt::format("{:.1f}", s * 1e3); }

nlohmann::ordered_json probe_json(const CapacityProbe& p) {
  const ServeSummary& m = p.summary;
  return {{"rate_per_s", p.rate_per_s}, {"held", p.held}, {"requests", m.requests}, {"requests_per_s", m.requests_per_s},
          {"output_tokens_per_s", m.output_tokens_per_s}, {"ttft_p50_s", m.ttft.p50_s}, {"ttft_p99_s", m.ttft.p99_s},
          {"tpot_p50_s", m.tpot.p50_s}, {"tpot_p99_s", m.tpot.p99_s}, {"slo_met_fraction", m.slo_met_fraction}};
}

/// The bracket as JSON: where it stands, and the rates it ran by rate.
nlohmann::ordered_json result_json(const CapacityResult& r, int gpus) {
  nlohmann::ordered_json probes = nlohmann::ordered_json::array();
  for (const CapacityProbe& p : probes_by_rate(r)) probes.push_back(probe_json(p));
  return {{"held_per_s", r.held_per_s}, {"failed_per_s", r.failed_per_s}, {"saturated", r.saturated},
          {"held_per_gpu_per_s", r.held_per_s / double(gpus)}, {"probes", probes}};
}

/// `own_rate_per_s`: a trace's own rate, where one search ran on it (0: not shown).
std::string slo_line(const ServingSpec& s, const CapacitySearch& search, double own_rate_per_s) {
  const std::string which = s.requests.arrival != ArrivalKind::trace
                                ? fmt::format("the requests that arrive in {:.4g} s at each rate", s.requests.duration_s)
                            : own_rate_per_s > 0
                                ? fmt::format("the trace's requests, its arrival times scaled to each rate (its own: {:.4g} requests/s)",
                                              own_rate_per_s)
                                : std::string("the trace's requests, its arrival times scaled to each rate");
  const std::string targets = !s.slo.declared ? "each combination's own"
                                               : fmt::format("TTFT {}, TPOT {}", s.slo.ttft_s > 0 ? ms(s.slo.ttft_s) + " ms" : "-",
                                                             s.slo.tpot_s > 0 ? ms(s.slo.tpot_s) + " ms" : "-");
  return fmt::format("SLO: {}, met by at least {:.4g}% of {}\n", targets, 100 * search.attainment, which);
}

std::string verdict(const ServingSpec& s, const CapacitySearch& search, const CapacityResult& r) {
  const std::string runs = fmt::format("{} rate{} simulated", r.probes.size(), r.probes.size() == 1 ? "" : "s");
  if (r.saturated)
    return fmt::format("capacity: not bounded by this SLO: offered {:.4g} requests/s, the fleet served {:.4g}, hardly more than at "
                       "half that rate, and still met it, so its queue grows unseen (add a TTFT target); {}",
                       r.held_per_s, r.probes.back().summary.requests_per_s, runs);
  if (r.held_per_s == 0) {
    double lowest = 0;  // the lowest rate whose window held a request
    for (const CapacityProbe& p : r.probes)
      if (p.summary.requests > 0 && (lowest == 0 || p.rate_per_s < lowest)) lowest = p.rate_per_s;
    if (lowest == 0)
      return fmt::format("capacity: none: no request arrives in the {:.4g}-s window at any rate up to {:.4g} requests/s; {}",
                         s.requests.duration_s, r.probes.back().rate_per_s, runs);
    return fmt::format("capacity: none: the SLO is not met by {:.4g}% of requests at any rate tried, down to {:.4g} requests/s; {}",
                       100 * search.attainment, lowest, runs);
  }
  if (r.failed_per_s == 0)
    return fmt::format("capacity: over {:.4g} requests/s, the highest rate a serving file may state here ({}); {}", r.held_per_s,
                       s.requests.arrival == ArrivalKind::trace
                           ? fmt::format("time_scale down to {:.0e}", kMinTimeScale)
                           : fmt::format("{:.0e} requests/s, {:.0e} requests in the window", kMaxRatePerS, kMaxRequests),
                       runs);
  return fmt::format("capacity: {:.4g} requests/s ({:.4g} a GPU): {:.4g} held, {:.4g} did not; {}", r.held_per_s,
                     r.held_per_s / double(s.gpus()), r.held_per_s, r.failed_per_s, runs);
}

}  // namespace

void report_capacity(const ServingSpec& s, const CapacitySearch& search, const CapacityResult& r, const ServeCost* cost,
                     const std::string& prices, nlohmann::ordered_json config, const std::string& json_path) {
  const std::vector<CapacityProbe> curve = probes_by_rate(r);
  if (!json_path.empty()) {
    nlohmann::ordered_json j = json_document("serve", std::move(config));
    j["capacity"] = {{"attainment", search.attainment}, {"tolerance", search.tolerance}};
    j["capacity"].update(result_json(r, s.gpus()));
    if (cost) j["capacity"]["cost_at_capacity"] = variant_cost_json(*cost, prices);
    write_json(json_path, j);
    if (!table_to_stdout(json_path, "")) return;
  }
  std::cout << fmt::format("# clustersim serve --capacity: {} ({} x {}, {} replica{}, {} GPUs)\n", s.name, s.model.name, s.precision,
                           s.replicas, s.replicas == 1 ? "" : "s", s.gpus());
  std::cout << slo_line(s, search, r.own_rate_per_s);
  std::cout << fmt::format("{:>12}{:>10}{:>12}{:>14}{:>12}{:>12}{:>12}{:>12}{:>10}  {}\n", "rate (req/s)", "requests", "served/s",
                           "output tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "SLO met", "");
  for (const CapacityProbe& p : curve) {
    const ServeSummary& m = p.summary;
    std::cout << fmt::format("{:>12.4g}{:>10}{:>12.4g}{:>14.0f}{:>12}{:>12}{:>12}{:>12}{:>9.1f}%  {}\n", p.rate_per_s, m.requests,
                             m.requests_per_s, m.output_tokens_per_s, ms(m.ttft.p50_s), ms(m.ttft.p99_s), ms(m.tpot.p50_s),
                             ms(m.tpot.p99_s), 100 * m.slo_met_fraction, p.held ? "held" : "missed");
  }
  std::cout << "(latencies in ms)\n" << verdict(s, search, r) << "\n";
  if (!cost) return;
  // The fleet costs the same whatever its load, so its tokens are cheapest at the highest rate
  // that still meets the SLO.
  if (cost->priced)
    std::cout << fmt::format("cost at capacity: ${:.3g} per million output tokens, ${:.3g} per million tokens (prices: {})\n",
                             cost->usd_per_million_output_tokens, cost->usd_per_million_tokens, prices);
  else
    std::cout << "cost at capacity: not priced (" << cost->unpriced_reason << ")\n";
}

void report_capacity_variants(const ServingSpec& base, const CapacitySearch& search, const std::vector<VariantRun>& variants,
                              const std::string& prices, nlohmann::ordered_json config, const std::string& json_path) {
  std::vector<const VariantRun*> ranked;
  for (const VariantRun& v : variants) ranked.push_back(&v);
  const auto per_gpu = [](const VariantRun* v) { return v->error.empty() ? v->capacity.held_per_s / double(v->gpus) : -1.0; };
  std::stable_sort(ranked.begin(), ranked.end(), [&](auto* a, auto* b) { return per_gpu(a) > per_gpu(b); });
  if (!json_path.empty()) {
    nlohmann::ordered_json j = json_document("serve", std::move(config));
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const VariantRun* v : ranked) {
      nlohmann::ordered_json row = {{"settings", v->settings}};
      if (!v->error.empty()) {
        row["error"] = v->error;
      } else {
        row["gpus"] = v->gpus;
        row.update(result_json(v->capacity, v->gpus));
        if (v->cost) row["cost_at_capacity"] = variant_cost_json(*v->cost, prices);
      }
      rows.push_back(row);
    }
    j["capacity"] = {{"attainment", search.attainment}, {"tolerance", search.tolerance}, {"variants", rows}};
    write_json(json_path, j);
    if (!table_to_stdout(json_path, "")) return;
  }
  std::cout << fmt::format("# clustersim serve --capacity: {} ({} x {}), {} variants, best capacity per GPU first\n", base.name,
                           base.model.name, base.precision, variants.size());
  std::cout << slo_line(base, search, 0);
  std::size_t width = 8;
  for (const VariantRun& v : variants) width = std::max(width, fmt::format("{}", fmt::join(v.settings, " ")).size());
  std::cout << fmt::format("{:<{}}{:>6}{:>16}{:>10}{:>12}{:>12}{:>14}\n", "settings", width, "GPUs", "capacity req/s", "per GPU",
                           "TTFT p99", "TPOT p99", "$/M out tok");
  for (const VariantRun* v : ranked) {
    const std::string settings = fmt::format("{}", fmt::join(v->settings, " "));
    if (!v->error.empty()) {
      std::cout << fmt::format("{:<{}}  does not run: {}\n", settings, width, v->error);
      continue;
    }
    const CapacityProbe* p = capacity_probe(v->capacity);
    const std::string price = v->cost && v->cost->priced ? fmt::format("{:.3g}", v->cost->usd_per_million_output_tokens) : "-";
    if (!p) {
      std::cout << fmt::format("{:<{}}{:>6}{:>16}{:>10}{:>12}{:>12}{:>14}\n", settings, width, v->gpus, "none", "-", "-", "-", "-");
      continue;
    }
    std::cout << fmt::format("{:<{}}{:>6}{:>16}{:>10.4g}{:>12}{:>12}{:>14}\n", settings, width, v->gpus,
                             fmt::format("{:.4g}{}", v->capacity.held_per_s, v->capacity.saturated ? "+" : v->capacity.failed_per_s == 0 ? ">" : ""),
                             v->capacity.held_per_s / double(v->gpus), ms(p->summary.ttft.p99_s), ms(p->summary.tpot.p99_s), price);
  }
  std::cout << "(latencies in ms, at the capacity rate; + : not bounded by the SLO, > : over the highest rate tried)\n";
}

}  // namespace clustersim::cli
