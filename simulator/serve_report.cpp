#include "simulator/serve_report.hpp"

#include <algorithm>

#include "simulator/draw_summary.hpp"

namespace clustersim {

LatencySummary summarize_latencies(std::vector<Seconds> values) {
  LatencySummary out;
  out.count = long(values.size());
  if (values.empty()) return out;
  double sum = 0;
  for (Seconds v : values) sum += v;
  out.mean_s = sum / double(values.size());
  out.max_s = *std::max_element(values.begin(), values.end());
  out.p50_s = nearest_rank(values, 50);
  out.p90_s = nearest_rank(values, 90);
  out.p99_s = nearest_rank(std::move(values), 99);
  return out;
}

ServeSummary summarize_serving(const ServingSpec& s, const ServeResult& r) {
  ServeSummary out;
  std::vector<Seconds> ttft, tpot, e2e;
  double prompt_tokens = 0, output_tokens = 0;
  for (const RequestState& q : r.requests) {
    const Seconds first = q.first_token_s - q.request.arrival_s;
    ttft.push_back(first);
    e2e.push_back(q.finish_s - q.request.arrival_s);
    double per_token = 0;
    if (q.generated > 1) {
      per_token = (q.finish_s - q.first_token_s) / double(q.generated - 1);
      tpot.push_back(per_token);
    }
    prompt_tokens += double(q.request.prompt_tokens);
    output_tokens += double(q.generated);
    const bool met = (s.slo.ttft_s == 0 || first <= s.slo.ttft_s) && (s.slo.tpot_s == 0 || per_token <= s.slo.tpot_s);
    if (s.slo.declared && met) ++out.slo_met;
  }
  out.requests = long(r.requests.size());
  out.duration_s = r.end_s;
  out.ttft = summarize_latencies(std::move(ttft));
  out.tpot = summarize_latencies(std::move(tpot));
  out.e2e = summarize_latencies(std::move(e2e));
  if (r.end_s > 0) {
    out.requests_per_s = double(out.requests) / r.end_s;
    out.output_tokens_per_s = output_tokens / r.end_s;
    out.prompt_tokens_per_s = prompt_tokens / r.end_s;
    out.goodput_requests_per_s = double(out.slo_met) / r.end_s;
    out.kv_utilization_mean = r.kv_utilization_time_integral / (r.end_s * r.replicas);
  }
  out.slo_met_fraction = out.requests > 0 ? double(out.slo_met) / double(out.requests) : 0;
  for (const ServeSample& x : r.series) out.kv_utilization_peak = std::max(out.kv_utilization_peak, x.kv_utilization);
  if (r.iterations > 0) {
    out.batch_requests_mean = r.batch_requests_sum / double(r.iterations);
    out.batch_tokens_mean = r.batch_tokens_sum / double(r.iterations);
  }
  out.batch_requests_max = r.max_batch_requests;
  out.iterations = r.iterations;
  out.preemptions = r.preemptions;
  out.swaps = r.swaps;
  out.swap_s = r.swap_s_sum;
  if (r.prefix_hit_tokens + r.prefill_tokens > 0)
    out.prefix_hit_rate = double(r.prefix_hit_tokens) / double(r.prefix_hit_tokens + r.prefill_tokens);
  out.prefix_evictions = r.prefix_evictions;
  if (r.kv_transfers > 0) {
    out.kv_transfer_mean_s = r.kv_transfer_s_sum / double(r.kv_transfers);
    out.kv_transfer_alone_mean_s = r.kv_transfer_alone_s_sum / double(r.kv_transfers);
  }
  if (r.decode_steps > 0) out.tokens_per_decode_step = r.accepted_tokens_sum / double(r.decode_steps);
  return out;
}

}  // namespace clustersim
