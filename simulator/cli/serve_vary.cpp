#include "simulator/cli/serve_vary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>

#include "simulator/cli/commands.hpp"

namespace clustersim::cli {

namespace {

/// --vary's product is simulated whole, each point a run (or a capacity search) of its own.
constexpr std::size_t kMaxVariants = 256;

std::string ms(Seconds s) { return fmt::format("{:.1f}", s * 1e3); }

}  // namespace

std::vector<std::vector<std::string>> vary_product(const std::vector<std::string>& vary) {
  std::vector<std::vector<std::string>> product = {{}};
  for (const std::string& v : vary) {
    const auto eq = v.find('=');
    std::vector<std::string> values;
    if (eq != std::string::npos && eq > 0)
      for (std::size_t at = eq + 1;;) {
        const std::size_t comma = v.find(',', at);
        values.push_back(v.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
    if (values.empty() || std::find(values.begin(), values.end(), "") != values.end())
      throw UserError("command line", 0, "--vary", "expected KEY=V1,V2,... (a field as --set names it, then its values), got '" + v + "'");
    std::vector<std::vector<std::string>> next;
    for (const std::vector<std::string>& base : product)
      for (const std::string& value : values) {
        next.push_back(base);
        next.back().push_back(v.substr(0, eq) + "=" + value);
      }
    product = std::move(next);
    if (product.size() > kMaxVariants)
      throw UserError("command line", 0, "--vary", fmt::format("expected at most {} combinations, got more", kMaxVariants));
  }
  return product;
}

std::vector<VariantRun> run_variants(const std::string& file, const std::vector<std::string>& overrides,
                                     const std::vector<std::string>& vary,
                                     const std::function<void(const ServingSpec&, VariantRun&)>& run) {
  std::vector<VariantRun> out;
  std::optional<UserError> first_error;
  for (std::vector<std::string>& settings : vary_product(vary)) {
    VariantRun v;
    std::vector<std::string> all = overrides;
    all.insert(all.end(), settings.begin(), settings.end());
    v.settings = std::move(settings);
    try {
      const ServingSpec s = load_serving(file, all);
      v.gpus = s.gpus();
      v.slo_declared = s.slo.declared;
      run(s, v);
    } catch (const UserError& e) {
      // The caller loaded the file and --set alone first, so a command-line field here is --vary's.
      const bool vary_field = e.file() == "command line" && e.field_path() == "--set";
      if (!first_error) first_error = vary_field ? UserError(e.file(), 0, "--vary", e.expected()) : e;
      v.error = (vary_field ? std::string("--vary") : e.field_path()) + ": " + e.expected();
    }
    out.push_back(std::move(v));
  }
  if (std::none_of(out.begin(), out.end(), [](const VariantRun& v) { return v.error.empty(); })) throw *first_error;
  return out;
}

nlohmann::ordered_json latency_json(const LatencySummary& l) {
  return {{"count", l.count}, {"mean_s", l.mean_s}, {"p50_s", l.p50_s}, {"p90_s", l.p90_s}, {"p99_s", l.p99_s}, {"max_s", l.max_s}};
}

nlohmann::ordered_json variant_cost_json(const ServeCost& cost, const std::string& prices) {
  nlohmann::ordered_json c = {{"priced", cost.priced}, {"prices", prices}};
  if (!cost.priced) c["unpriced_reason"] = cost.unpriced_reason;
  if (cost.priced) {
    c["usd_per_million_output_tokens"] = cost.usd_per_million_output_tokens;
    c["usd_per_million_tokens"] = cost.usd_per_million_tokens;
  }
  return c;
}

void report_serve_variants(const ServingSpec& base, const std::vector<VariantRun>& variants, const std::string& prices,
                           nlohmann::ordered_json config, const std::string& json_path) {
  if (!json_path.empty()) {
    nlohmann::ordered_json j = json_document("serve", std::move(config));
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const VariantRun& v : variants) {
      nlohmann::ordered_json row = {{"settings", v.settings}};
      if (!v.error.empty()) {
        row["error"] = v.error;
        rows.push_back(row);
        continue;
      }
      const ServeSummary& m = v.summary;
      row["gpus"] = v.gpus;
      row["summary"] = {{"requests", m.requests}, {"requests_per_s", m.requests_per_s}, {"output_tokens_per_s", m.output_tokens_per_s},
                        {"ttft", latency_json(m.ttft)}, {"tpot", latency_json(m.tpot)}, {"e2e", latency_json(m.e2e)}};
      if (v.slo_declared) row["summary"]["slo_met_fraction"] = m.slo_met_fraction;
      if (v.cost) row["cost"] = variant_cost_json(*v.cost, prices);
      rows.push_back(row);
    }
    j["variants"] = rows;
    write_json(json_path, j);
    if (!table_to_stdout(json_path, "")) return;
  }
  std::cout << fmt::format("# clustersim serve --vary: {} ({} x {}), {} variants\n", base.name, base.model.name, base.precision,
                           variants.size());
  std::size_t width = 8;
  for (const VariantRun& v : variants) width = std::max(width, fmt::format("{}", fmt::join(v.settings, " ")).size());
  std::cout << fmt::format("{:<{}}{:>6}{:>10}{:>13}{:>10}{:>10}{:>10}{:>10}{:>9}{:>13}\n", "settings", width, "GPUs", "served/s",
                           "output tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "SLO met", "$/M out tok");
  for (const VariantRun& v : variants) {
    const std::string settings = fmt::format("{}", fmt::join(v.settings, " "));
    if (!v.error.empty()) {
      std::cout << fmt::format("{:<{}}  does not run: {}\n", settings, width, v.error);
      continue;
    }
    const ServeSummary& m = v.summary;
    std::cout << fmt::format("{:<{}}{:>6}{:>10.4g}{:>13.0f}{:>10}{:>10}{:>10}{:>10}{:>9}{:>13}\n", settings, width, v.gpus,
                             m.requests_per_s, m.output_tokens_per_s, ms(m.ttft.p50_s), ms(m.ttft.p99_s), ms(m.tpot.p50_s),
                             ms(m.tpot.p99_s), v.slo_declared ? fmt::format("{:.1f}%", 100 * m.slo_met_fraction) : "-",
                             v.cost && v.cost->priced ? fmt::format("{:.3g}", v.cost->usd_per_million_output_tokens) : "-");
  }
  std::cout << "(latencies in ms)\n";
}

}  // namespace clustersim::cli
