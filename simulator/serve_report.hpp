#pragma once
// What `clustersim serve` reports of a run: per-request latencies as nearest-rank percentiles
// (every figure is one some request had), throughput over the run (first arrival at 0 to the last
// token), goodput under the SLO (requests meeting every target the SLO states, per second), and KV
// cache and batch occupancy.
//   TTFT: arrival to the first token. TPOT: a request's mean time between output tokens after the
//   first, (finish - first token) / (output tokens - 1); requests of one output token have none.
//   End-to-end: arrival to the last token.
#include "simulator/serve_sim.hpp"

namespace clustersim {

struct LatencySummary {
  Seconds mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
  long count = 0;
};
LatencySummary summarize_latencies(std::vector<Seconds> values);

struct ServeSummary {
  long requests = 0;
  Seconds duration_s = 0;
  LatencySummary ttft, tpot, e2e;
  double requests_per_s = 0, output_tokens_per_s = 0, prompt_tokens_per_s = 0;
  long slo_met = 0;
  double slo_met_fraction = 0, goodput_requests_per_s = 0;
  double kv_utilization_mean = 0, kv_utilization_peak = 0;
  double batch_requests_mean = 0, batch_tokens_mean = 0;
  long batch_requests_max = 0;
  long iterations = 0, preemptions = 0;
  long swaps = 0;            // preemptions by swap
  Seconds swap_s = 0;        // iteration time spent copying KV blocks to and from host memory
  double prefix_hit_rate = 0;  // prompt tokens found cached over prompt tokens the KV cache needed
  long prefix_evictions = 0;
  Seconds kv_transfer_mean_s = 0;
  Seconds kv_transfer_alone_mean_s = 0;  // what they would take each alone: the gap is contention
  double tokens_per_decode_step = 0;  // speculative: mean tokens a decode step emits
};

ServeSummary summarize_serving(const ServingSpec& s, const ServeResult& r);

}  // namespace clustersim
