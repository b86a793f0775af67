#include "simulator/cli/serve_capacity_report.hpp"

#include <fmt/format.h>

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

std::string verdict(const ServingSpec& s, const CapacitySearch& search, const CapacityResult& r) {
  const std::string runs = fmt::format("{} rate{} simulated", r.probes.size(), r.probes.size() == 1 ? "" : "s");
  if (r.saturated)
    return fmt::format("capacity: not bounded by this SLO: at {:.4g} requests/s the fleet served {:.4g} and still met it, so its queue "
                       "grows unseen (add a TTFT target); {}",
                       r.held_per_s, r.probes.back().summary.requests_per_s, runs);
  if (r.held_per_s == 0)
    return fmt::format("capacity: none: the SLO is not met by {:.0f}% of requests even at {:.4g} requests/s; {}", 100 * search.attainment,
                       r.probes.back().rate_per_s, runs);
  if (r.failed_per_s == 0)
    return fmt::format("capacity: over {:.4g} requests/s, the highest rate tried (the search stops after {} doublings); {}", r.held_per_s,
                       search.max_steps, runs);
  return fmt::format("capacity: {:.4g} requests/s ({:.4g} a GPU): {:.4g} held, {:.4g} did not; {}", r.held_per_s,
                     r.held_per_s / double(s.gpus()), r.held_per_s, r.failed_per_s, runs);
}

}  // namespace

void report_capacity(const ServingSpec& s, const CapacitySearch& search, const CapacityResult& r, const ServeCost* cost,
                     const std::string& prices, nlohmann::ordered_json config, const std::string& json_path) {
  const std::vector<CapacityProbe> curve = probes_by_rate(r);
  if (!json_path.empty()) {
    nlohmann::ordered_json j = json_document("serve", std::move(config));
    nlohmann::ordered_json probes = nlohmann::ordered_json::array();
    for (const CapacityProbe& p : curve) probes.push_back(probe_json(p));
    j["capacity"] = {{"attainment", search.attainment}, {"tolerance", search.tolerance}, {"held_per_s", r.held_per_s},
                     {"failed_per_s", r.failed_per_s}, {"saturated", r.saturated}, {"held_per_gpu_per_s", r.held_per_s / double(s.gpus())},
                     {"probes", probes}};
    if (cost) {
      nlohmann::ordered_json c = {{"priced", cost->priced}, {"prices", prices}};
      if (!cost->priced) c["unpriced_reason"] = cost->unpriced_reason;
      if (cost->priced) {
        c["usd_per_million_output_tokens"] = cost->usd_per_million_output_tokens;
        c["usd_per_million_tokens"] = cost->usd_per_million_tokens;
      }
      j["capacity"]["cost_at_capacity"] = c;
    }
    write_json(json_path, j);
    if (!table_to_stdout(json_path, "")) return;
  }
  std::cout << fmt::format("# clustersim serve --capacity: {} ({} x {}, {} replica{}, {} GPUs)\n", s.name, s.model.name, s.precision,
                           s.replicas, s.replicas == 1 ? "" : "s", s.gpus());
  std::cout << fmt::format("SLO: TTFT {}, TPOT {}, met by at least {:.4g}% of the requests that arrive in {:.4g} s at each rate\n",
                           s.slo.ttft_s > 0 ? ms(s.slo.ttft_s) + " ms" : "-", s.slo.tpot_s > 0 ? ms(s.slo.tpot_s) + " ms" : "-",
                           100 * search.attainment, s.requests.duration_s);
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

}  // namespace clustersim::cli
