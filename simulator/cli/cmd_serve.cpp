// `clustersim serve`: an inference fleet under a request stream (a serving file,
// scenarios/serving/*.yaml): TTFT, TPOT and end-to-end latency percentiles, throughput, goodput
// under the SLO, KV cache and batch occupancy over time (simulator/serve_sim.hpp has the loop).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "simulator/cli/bench_clock.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/cli/serve_capacity_report.hpp"
#include "simulator/cli/serve_validate.hpp"
#include "simulator/cli/serve_vary.hpp"
#include "simulator/draw_summary.hpp"
#include "simulator/serve_cost.hpp"
#include "simulator/serve_report.hpp"
#include "simulator/trace_writer.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim::cli {

namespace {

struct ServeOptions {
  std::string serving;
  std::vector<std::string> overrides;
  std::string json, csv, trace, validate, prices, catalog, usd_per_kWh = "0.08", amortisation_years = "4";
  bool capacity = false;
  std::string attainment, rate_tolerance;
  std::vector<std::string> vary;
};

/// --capacity's search, from its options (each refused without --capacity).
CapacitySearch capacity_search(const ServeOptions& o) {
  CapacitySearch c;
  if (!o.attainment.empty()) c.attainment = parse_number(o.attainment, "--attainment", 0.01, 1);
  if (!o.rate_tolerance.empty()) c.tolerance = parse_number(o.rate_tolerance, "--rate-tolerance", 0.0001, 1);
  return c;
}

/// --capacity needs what a capacity means: an SLO (which a --vary combination may set).
void require_slo(const ServingSpec& s) {
  if (!s.slo.declared)
    throw UserError(s.file, s.serving_line, "serving.slo", "missing: --capacity finds the highest rate that meets the SLO, so the file needs slo: {ttft: ..., tpot: ...}");
}

struct CostInputs {
  std::string prices;
  Economics economics;
};

nlohmann::ordered_json cost_json(const ServeCost& c, const CostInputs& in) {
  nlohmann::ordered_json j = {{"priced", c.priced}};
  if (!c.priced) j["unpriced_reason"] = c.unpriced_reason;
  j["prices"] = in.prices;
  j["usd_per_kWh"] = in.economics.usd_per_kWh;
  j["amortisation_years"] = in.economics.amortisation_years;
  if (c.priced) {
    j["cluster_capital_usd"] = c.cluster_capital_usd;
    j["cluster_power_W"] = c.cluster_power_W;
    j["share"] = c.share;
    j["fleet_usd_per_year"] = c.fleet_usd_per_year;
    j["usd_per_million_output_tokens"] = c.usd_per_million_output_tokens;
    j["usd_per_million_tokens"] = c.usd_per_million_tokens;
  }
  return j;
}

const char* arrival_name(ArrivalKind a) {
  return a == ArrivalKind::poisson ? "poisson" : a == ArrivalKind::gamma ? "gamma" : "trace";
}

nlohmann::ordered_json config_json(const ServingSpec& s) {
  const RequestStreamSpec& q = s.requests;
  nlohmann::ordered_json requests = {{"arrival", arrival_name(q.arrival)}, {"seed", q.seed}};
  if (q.arrival == ArrivalKind::trace) {
    requests["trace"] = q.trace_file;
    requests["time_scale"] = q.time_scale;
  } else {
    requests["rate_per_s"] = q.rate_per_s;
    if (q.arrival == ArrivalKind::gamma) requests["cv"] = q.cv;
    requests["duration_s"] = q.duration_s;
    requests["prompt_tokens"] = {{"min", q.prompt_tokens.min}, {"max", q.prompt_tokens.max}};
    requests["output_tokens"] = {{"min", q.output_tokens.min}, {"max", q.output_tokens.max}};
    if (q.shared_prefix.tokens > 0) requests["shared_prefix"] = {{"tokens", q.shared_prefix.tokens}, {"count", q.shared_prefix.count}};
  }
  nlohmann::ordered_json replica_gpus = nlohmann::ordered_json::array();
  for (const ReplicaPlacement& p : s.placement) replica_gpus.push_back(p.gpu);
  nlohmann::ordered_json j = {
      {"file", s.file}, {"name", s.name}, {"cluster", s.cluster_file}, {"catalog", s.catalog_file}, {"gpu", s.gpu.name}, {"model", s.model.name},
      {"precision", s.precision}, {"replicas", s.replicas}, {"gpus", s.gpus()},
      {"replica_gpus", replica_gpus},
      {"parallel", {{"tp", s.parallel.tp}, {"pp", s.parallel.pp}, {"ep", s.parallel.ep}, {"dp_attention", s.parallel.dp_attention},
                    {"redundant_experts", s.parallel.redundant_experts},
                    {"dispatch", s.parallel.deepep ? "deepep" : "all_to_all"},
                    {"two_batch_overlap", s.parallel.two_batch_overlap}}},
      {"kv_cache", {{"dtype", s.kv.dtype}, {"block_tokens", s.kv.block_tokens}, {"memory_fraction", s.kv.memory_fraction},
                    {"swap_space_GiB", s.kv.swap_space_GiB}, {"prefix_caching", s.kv.prefix_caching}}},
      {"scheduler",
       {{"max_batch_tokens", s.scheduler.max_batch_tokens}, {"max_batch_requests", s.scheduler.max_batch_requests},
        {"chunked_prefill", s.scheduler.chunked_prefill},
        {"priority", s.scheduler.priority == SchedulePriority::decode ? "decode" : "prefill"},
        {"preemption", s.scheduler.preemption == PreemptionMode::swap ? "swap" : "recompute"},
        {"batches_in_flight", s.scheduler.batches_in_flight}}},
      {"router", to_string(s.router)}, {"requests", requests}};
  if (s.slo.declared) j["slo"] = {{"ttft_s", s.slo.ttft_s}, {"tpot_s", s.slo.tpot_s}};
  if (s.disaggregation.enabled)
    j["disaggregated"] = {{"prefill_replicas", s.disaggregation.prefill_replicas}, {"decode_replicas", s.disaggregation.decode_replicas}};
  if (s.host.declared)
    j["host"] = {{"iteration_s", s.host.iteration_s}, {"per_request_s", s.host.per_request_s}, {"overlap", s.host.overlapped}};
  if (s.speculative.method != SpeculativeMethod::none)
    j["speculative"] = {{"method", s.speculative.method == SpeculativeMethod::draft ? "draft" : "mtp"},
                        {"tokens", s.speculative.tokens}, {"acceptance_rate", s.speculative.acceptance_by_position.empty()
                                                                       ? nlohmann::ordered_json(s.speculative.acceptance_rate)
                                                                       : nlohmann::ordered_json(s.speculative.acceptance_by_position)},
                        {"draft_model", s.speculative.draft_model ? s.speculative.draft_model->name : ""}};
  return j;
}

nlohmann::ordered_json request_rows(const ServeResult& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const RequestState& q : r.requests) {
    const Seconds tpot = q.generated > 1 ? (q.finish_s - q.first_token_s) / double(q.generated - 1) : 0;
    rows.push_back({{"id", q.request.id}, {"arrival_s", q.request.arrival_s}, {"prompt_tokens", q.request.prompt_tokens},
                    {"output_tokens", q.request.output_tokens}, {"replica", q.replica},
                    {"ttft_s", q.first_token_s - q.request.arrival_s}, {"tpot_s", tpot},
                    {"e2e_s", q.finish_s - q.request.arrival_s}, {"preemptions", q.preemptions}});
  }
  return rows;
}

nlohmann::ordered_json serve_json(const ServingSpec& s, const ServeResult& r, const ServeSummary& m, const ServeCost& c,
                                  const CostInputs& in) {
  nlohmann::ordered_json j = json_document("serve", config_json(s));
  const auto memory = [](const ReplicaMemory& mem) -> nlohmann::ordered_json {
    return {{"usable_bytes", mem.usable_bytes}, {"weight_bytes", mem.weight_bytes}, {"workspace_bytes", mem.workspace_bytes},
            {"kv_bytes", mem.kv_bytes}, {"kv_bytes_per_token", mem.kv_bytes_per_token}, {"block_bytes", mem.block_bytes},
            {"blocks", mem.blocks}, {"stage_layers", mem.stage_layers}};
  };
  j["memory"] = memory(r.memory);
  nlohmann::ordered_json by_gpu = nlohmann::ordered_json::object();
  for (const auto& [gpu, mem] : r.memory_by_gpu) by_gpu[gpu] = memory(mem);
  j["memory_by_gpu"] = by_gpu;
  nlohmann::ordered_json summary = {
      {"requests", m.requests}, {"duration_s", m.duration_s}, {"ttft", latency_json(m.ttft)}, {"tpot", latency_json(m.tpot)},
      {"e2e", latency_json(m.e2e)}, {"requests_per_s", m.requests_per_s}, {"output_tokens_per_s", m.output_tokens_per_s},
      {"prompt_tokens_per_s", m.prompt_tokens_per_s}, {"kv_utilization_mean", m.kv_utilization_mean},
      {"kv_utilization_peak", m.kv_utilization_peak}, {"batch_requests_mean", m.batch_requests_mean},
      {"batch_tokens_mean", m.batch_tokens_mean}, {"batch_requests_max", m.batch_requests_max},
      {"iterations", m.iterations}, {"preemptions", m.preemptions}, {"swaps", m.swaps}, {"swap_s", m.swap_s},
      {"prefix_hit_rate", m.prefix_hit_rate}, {"prefix_evictions", m.prefix_evictions}};
  if (s.slo.declared) {
    summary["slo_met"] = m.slo_met;
    summary["slo_met_fraction"] = m.slo_met_fraction;
    summary["goodput_requests_per_s"] = m.goodput_requests_per_s;
  }
  if (s.disaggregation.enabled) {
    summary["kv_transfer_mean_s"] = m.kv_transfer_mean_s;
    summary["kv_transfer_alone_mean_s"] = m.kv_transfer_alone_mean_s;
  }
  if (s.speculative.method != SpeculativeMethod::none) summary["tokens_per_decode_step"] = m.tokens_per_decode_step;
  j["summary"] = summary;
  j["cost"] = cost_json(c, in);
  nlohmann::ordered_json series = nlohmann::ordered_json::array();
  for (const ServeSample& x : r.series)
    series.push_back({{"time_s", x.time_s}, {"kv_utilization", x.kv_utilization}, {"running", x.running}, {"waiting", x.waiting}});
  j["series"] = series;
  j["requests"] = request_rows(r);
  return j;
}

std::string ms(Seconds s) { return fmt::format("{:.1f} ms", s * 1e3); }

void print_report(const ServingSpec& s, const ServeResult& r, const ServeSummary& m, const ServeCost& c, const CostInputs& in) {
  const double gib = 1024.0 * 1024 * 1024;
  const bool one_model = r.memory_by_gpu.size() == 1;
  std::cout << fmt::format("# clustersim serve: {} ({} x {} on {} replica{} of tp {} pp {}{}{}{}, {})\n", s.name, s.model.name,
                           s.precision, s.replicas, s.replicas == 1 ? "" : "s", s.parallel.tp, s.parallel.pp,
                           s.parallel.ep > 1 ? fmt::format(" ep {}{}", s.parallel.ep,
                                                           s.parallel.redundant_experts > 0 ? fmt::format(" (+{} redundant experts)", s.parallel.redundant_experts) : "")
                                             : "",
                           s.parallel.dp_attention > 1 ? fmt::format(" dp_attention {}{}{}", s.parallel.dp_attention,
                                                                     s.parallel.deepep ? ", DeepEP" : "",
                                                                     s.parallel.two_batch_overlap ? ", two-batch overlap" : "")
                                                       : "",
                           s.parallel.pp > 1 ? fmt::format(" ({} batch{} in flight)", s.scheduler.batches_in_flight, s.scheduler.batches_in_flight > 1 ? "es" : "") : "",
                           one_model ? fmt::format("{} GPUs of {}", s.gpus(), r.memory_by_gpu.front().first) : s.gpus_text());
  if (s.disaggregation.enabled) {
    const DisaggregationSpec& d = s.disaggregation;
    if (one_model)
      std::cout << fmt::format("disaggregated: {} prefill and {} decode replicas; KV transfer {} on average ({} alone)\n",
                               d.prefill_replicas, d.decode_replicas, ms(m.kv_transfer_mean_s), ms(m.kv_transfer_alone_mean_s));
    else
      std::cout << fmt::format("disaggregated: prefill on {} x {}, decode on {} x {}; KV transfer {} on average ({} alone)\n",
                               d.prefill_replicas, s.placement.front().gpu, d.decode_replicas, s.placement.back().gpu,
                               ms(m.kv_transfer_mean_s), ms(m.kv_transfer_alone_mean_s));
  }
  for (const auto& [gpu, mem] : r.memory_by_gpu)
    std::cout << fmt::format("memory per GPU{}: {:.2f} GiB usable, weights {:.2f}, activations {:.2f}, KV cache {:.2f} GiB = {} blocks of {} tokens ({} tokens{})\n",
                             one_model ? "" : " on " + gpu, double(mem.usable_bytes) / gib, double(mem.weight_bytes) / gib,
                             double(mem.workspace_bytes) / gib, double(mem.kv_bytes) / gib, mem.blocks, s.kv.block_tokens,
                             mem.blocks * s.kv.block_tokens, s.parallel.dp_attention > 1 ? " on each attention rank" : "");
  if (s.host.declared)
    std::cout << fmt::format("host per iteration: {:.3g} ms + {:.3g} ms a request, {} the GPU's forward\n", s.host.iteration_s * 1e3,
                             s.host.per_request_s * 1e3, s.host.overlapped ? "overlapped with" : "after");
  else
    std::cout << "host per iteration: none declared (the GPU's forward alone)\n";
  std::cout << fmt::format("{} requests over {:.1f} s: {:.2f} requests/s, {:.0f} output tokens/s, {:.0f} prompt tokens/s\n",
                           m.requests, m.duration_s, m.requests_per_s, m.output_tokens_per_s, m.prompt_tokens_per_s);
  std::cout << fmt::format("{:<10}{:>12}{:>12}{:>12}{:>12}{:>12}\n", "", "mean", "p50", "p90", "p99", "max");
  for (auto [name, l] : {std::pair{"TTFT", m.ttft}, std::pair{"TPOT", m.tpot}, std::pair{"E2E", m.e2e}})
    std::cout << fmt::format("{:<10}{:>12}{:>12}{:>12}{:>12}{:>12}\n", name, ms(l.mean_s), ms(l.p50_s), ms(l.p90_s),
                             ms(l.p99_s), ms(l.max_s));
  if (s.slo.declared)
    std::cout << fmt::format("SLO (TTFT {}, TPOT {}): {} of {} requests met it ({:.1f}%), goodput {:.2f} requests/s\n",
                             s.slo.ttft_s > 0 ? ms(s.slo.ttft_s) : "-", s.slo.tpot_s > 0 ? ms(s.slo.tpot_s) : "-", m.slo_met,
                             m.requests, 100 * m.slo_met_fraction, m.goodput_requests_per_s);
  std::cout << fmt::format("KV cache use: mean {:.1f}%, peak {:.1f}%; batch: mean {:.1f} requests and {:.0f} tokens, max {} requests; {} iterations, {} preemptions\n",
                           100 * m.kv_utilization_mean, 100 * m.kv_utilization_peak, m.batch_requests_mean, m.batch_tokens_mean,
                           m.batch_requests_max, m.iterations, m.preemptions);
  if (s.kv.prefix_caching)
    std::cout << fmt::format("prefix cache: {:.1f}% of prompt tokens found cached, {} prefixes evicted\n", 100 * m.prefix_hit_rate,
                             m.prefix_evictions);
  if (m.swaps > 0)
    std::cout << fmt::format("swap: {} of the {} preemptions swapped to host memory, {} of copies over PCIe\n", m.swaps,
                             m.preemptions, ms(m.swap_s));
  if (s.speculative.method != SpeculativeMethod::none)
    std::cout << fmt::format("speculative: {:.2f} tokens per decode step\n", m.tokens_per_decode_step);
  if (!c.priced) {
    std::cout << "cost per million tokens: not priced (" << c.unpriced_reason << ")\n";
    return;
  }
  std::cout << fmt::format("cost: ${:.2f} per million output tokens, ${:.2f} per million tokens (prompt and output); the fleet is "
                           "{:.4g} of the cluster's ${:.3g}M and {:.3g} kW, ${:.0f} a year ({} years, ${}/kWh; prices: {})\n",
                           c.usd_per_million_output_tokens, c.usd_per_million_tokens, c.share, c.cluster_capital_usd / 1e6,
                           c.cluster_power_W / 1e3, c.fleet_usd_per_year, in.economics.amortisation_years,
                           in.economics.usd_per_kWh, in.prices);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "simulate inference serving of a request stream on a fleet of replicas "
                                              "(a serving file, scenarios/serving/*.yaml): latency percentiles, throughput, goodput");
  cmd->add_option("serving", o->serving, "serving YAML (scenarios/serving/)");
  cmd->add_option("--validate", o->validate,
                  "instead of one file, predict every row of a serving validation file (scenarios/validation/serving/) "
                  "against its published figure");
  cmd->add_option("--set", o->overrides, "override a field: --set serving.requests.rate_per_s=20 (repeatable)");
  cmd->add_option("--json", o->json, "write the summary, series and per-request rows as JSON (- or /dev/stdout: to stdout, without the text report)");
  cmd->add_option("--csv", o->csv, "write the per-request rows as CSV, JSON's field names (- or /dev/stdout: to stdout)");
  cmd->add_option("--catalog", o->catalog, "the GPU catalog to read the cluster's GPU from (default: gpus.yaml beside the cluster file or above it)");
  cmd->add_option("--prices", o->prices, "price and power catalog for the cost per million tokens (default scenarios/prices.yaml)");
  cmd->add_option("--usd-per-kWh", o->usd_per_kWh, "electricity price for the cost per million tokens (default 0.08)");
  cmd->add_option("--amortisation-years", o->amortisation_years, "years the cluster's price is spread over (default 4)");
  cmd->add_option("--trace", o->trace, "write each replica's iterations as a Chrome/Perfetto trace (gzip when FILE ends .json.gz)");
  cmd->add_flag("--capacity", o->capacity,
                "find the highest arrival rate that still meets the file's SLO (the knee of the latency-throughput curve): "
                "run the stream at rate after rate, doubling or halving from the file's rate_per_s, then bisecting");
  cmd->add_option("--attainment", o->attainment, "with --capacity: the fraction of requests that must meet the SLO for a rate to hold (default 0.9)");
  cmd->add_option("--rate-tolerance", o->rate_tolerance, "with --capacity: stop once the bracket is this fraction wide (default 0.01)");
  cmd->add_option("--vary", o->vary,
                  "run each combination of these settings, one summary row each (with --capacity: search each and rank them by "
                  "capacity per GPU), e.g. --vary serving.requests.rate_per_s=2,4,8 (repeatable; a field as --set names it, then its values)");
  cmd->callback([o] {
    if (!o->validate.empty()) {
      if (!o->serving.empty()) throw UserError("command line", 0, "--validate", "expected no serving file beside --validate FILE");
      // Each validation row names its own published setup, the GPU entry included.
      if (!o->catalog.empty()) throw UserError("command line", 0, "--catalog", "expected a serving file: --validate rows read the shipped catalog");
      // Each row's `settings:` are the measurement's; an override beside them would go unread.
      if (!o->overrides.empty()) throw UserError("command line", 0, "--set", "expected a serving file: --validate rows set their own fields (a row's settings:)");
      if (!o->vary.empty()) throw UserError("command line", 0, "--vary", "expected a serving file: --validate rows set their own fields (a row's settings:)");
      if (o->capacity) throw UserError("command line", 0, "--capacity", "expected a serving file: --validate predicts each row's own metric");
      check_input_path(o->validate, "--validate");
      print_serve_validation(o->validate);
      return;
    }
    if (o->serving.empty()) throw UserError("command line", 0, "serving", "missing: expected this argument or --validate FILE (see clustersim serve --help)");
    if (!o->capacity) {
      if (!o->attainment.empty()) throw UserError("command line", 0, "--attainment", "expected only with --capacity");
      if (!o->rate_tolerance.empty()) throw UserError("command line", 0, "--rate-tolerance", "expected only with --capacity");
    }
    if (o->capacity || !o->vary.empty()) {
      // One run's rows and trace: these run many, so neither names one.
      const std::string many = o->capacity ? "--capacity (it runs many rates" : "--vary (it runs many settings";
      if (!o->csv.empty()) throw UserError("command line", 0, "--csv", "expected no --csv with " + many + "; --json has each one's summary)");
      if (!o->trace.empty()) throw UserError("command line", 0, "--trace", "expected no --trace with " + many + "; trace one with --set)");
    }
    check_input_path(o->serving, "serving");
    if (!o->catalog.empty()) o->overrides.push_back(catalog_override(o->catalog));
    CostInputs cost_in{o->prices.empty() ? shipped_file("scenarios/prices.yaml") : o->prices, {}};
    cost_in.economics.usd_per_kWh = parse_number(o->usd_per_kWh, "--usd-per-kWh", 0, 10);
    cost_in.economics.amortisation_years = parse_number(o->amortisation_years, "--amortisation-years", 0.1, 100);
    check_input_path(cost_in.prices, "--prices");
    const PriceCatalog catalog = named_by("--prices", cost_in.prices, [&] { return load_price_catalog(cost_in.prices, "--prices"); });
    const ServingSpec s = named_by("serving", o->serving, [&] { return load_serving(o->serving, o->overrides); });
    if (!o->json.empty()) check_json_path(o->json);
    if (o->capacity) {
      const CapacitySearch search = capacity_search(*o);
      const auto cost_at_capacity = [&](const ServingSpec& at, const CapacityResult& r) -> std::optional<ServeCost> {
        if (const CapacityProbe* p = capacity_probe(r)) return serve_cost(at, p->summary, catalog, cost_in.economics);
        return std::nullopt;
      };
      if (o->vary.empty()) {
        require_slo(s);
        const CapacityResult r = find_capacity(s, search);
        const std::optional<ServeCost> cost = cost_at_capacity(s, r);
        report_capacity(s, search, r, cost ? &*cost : nullptr, cost_in.prices, config_json(s), o->json);
        return;
      }
      const std::vector<VariantRun> variants =
          run_variants(o->serving, o->overrides, o->vary, [&](const ServingSpec& at, VariantRun& v) {
            require_slo(at);
            v.capacity = find_capacity(at, search);
            v.cost = cost_at_capacity(at, v.capacity);
          });
      report_capacity_variants(s, search, variants, cost_in.prices, config_json(s), o->json);
      return;
    }
    if (!o->vary.empty()) {
      const std::vector<VariantRun> variants =
          run_variants(o->serving, o->overrides, o->vary, [&](const ServingSpec& at, VariantRun& v) {
            v.summary = summarize_serving(at, simulate_serving(at));
            v.cost = serve_cost(at, v.summary, catalog, cost_in.economics);
          });
      report_serve_variants(s, variants, cost_in.prices, config_json(s), o->json);
      return;
    }
    check_csv_path(o->csv, o->json);
    if (!o->trace.empty()) check_output_path(o->trace, "--trace");
    std::optional<TraceWriter> trace;
    if (!o->trace.empty()) trace.emplace(o->trace, GpuSelection{}, "--trace");
    const ServeResult r = simulate_serving(s, trace ? &*trace : nullptr);
    if (trace) trace->finish();
    const ServeSummary m = summarize_serving(s, r);
    const ServeCost cost = serve_cost(s, m, catalog, cost_in.economics);
    if (!o->json.empty()) write_json(o->json, serve_json(s, r, m, cost, cost_in));
    if (!o->csv.empty()) write_csv(o->csv, request_rows(r));
    if (table_to_stdout(o->json, o->csv)) print_report(s, r, m, cost, cost_in);
  });
}

}  // namespace clustersim::cli
