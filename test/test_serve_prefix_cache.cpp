// serve's prefix caching (workloads/serving/scheduler.hpp): a shared prefix's full blocks computed
// once and reused, its hit rate in closed form, eviction when blocks run out.
#include <catch2/catch.hpp>

#include <map>

#include "simulator/serve_report.hpp"
#include "simulator/serve_sim.hpp"
#include "support.hpp"
#include "workloads/serving/serving_spec.hpp"

using namespace clustersim;
using test::source_path;

namespace {

ServingSpec tp8(std::vector<std::string> sets) {
  return load_serving(source_path("scenarios/serving/llama3-70b-h100-tp8.yaml"), sets);
}

/// One 8-GPU Llama 3 70B replica with prefix caching, serving the trace file `trace`.
ServingSpec cached_on_trace(const std::string& trace) {
  return load_serving(test::temp_file("name: prefixed\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                                      "\nmodel: " + source_path("scenarios/models/llama3-70b.yaml") +
                                      "\nserving:\n  parallel: {tp: 8}\n  kv_cache: {prefix_caching: true}\n"
                                      "  requests: {arrival: trace, trace: " + trace + "}\n"));
}

}  // namespace

TEST_CASE("prefix caching: every request after the first finds its 1,024-token prefix, hit rate (n - 1) 1024 / prompts", "[serve]") {
  // One prefix of 64 full 16-token blocks; arrivals 5 s apart on average, so the first request has
  // cached it before the second comes (a prefill takes a fraction of a second).
  const std::vector<std::string> sets = {"serving.requests.shared_prefix.tokens=1024", "serving.requests.rate_per_s=0.2",
                                         "serving.requests.duration_s=200"};
  std::vector<std::string> cached = sets;
  cached.push_back("serving.kv_cache.prefix_caching=true");
  const ServingSpec s = tp8(cached);
  const ServeResult r = simulate_serving(s);
  const ServeSummary m = summarize_serving(s, r);
  const long n = long(r.requests.size());
  REQUIRE(n > 20);
  double prompts = 0;
  for (const RequestState& q : r.requests) {
    CHECK(q.request.prompt_tokens >= 1024 + 256);  // the prefix and the drawn 256..2048
    prompts += double(q.request.prompt_tokens);
  }
  CHECK(r.prefix_hit_tokens == (n - 1) * 1024);
  CHECK(m.prefix_hit_rate == Approx(double(n - 1) * 1024 / prompts));
  CHECK(r.prefill_tokens == long(prompts) - r.prefix_hit_tokens);
  // Without the cache every prompt is computed whole: TTFT falls with the tokens skipped.
  const ServingSpec plain = tp8(sets);
  const ServeSummary without = summarize_serving(plain, simulate_serving(plain));
  CHECK(without.prefix_hit_rate == 0);
  CHECK(m.ttft.mean_s < 0.75 * without.ttft.mean_s);
}

TEST_CASE("prefix caching from a trace: rows naming one prefix reuse its blocks, rows without one compute all", "[serve]") {
  // Three prompts of 3,000 tokens starting with prefix 7 (1,000 tokens: 62 full blocks of 16, 992
  // tokens), one with prefix 9 of 500 (31 blocks, 496), and one without, 10 s apart.
  const std::string csv = test::temp_file(
      "arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,3000,4,7,1000\n10,3000,4,7,1000\n20,3000,4,,\n"
      "30,3000,4,7,1000\n40,2000,4,9,500\n",
      ".csv");
  const ServeResult r = simulate_serving(cached_on_trace(csv));
  REQUIRE(r.requests.size() == 5);
  CHECK(r.requests[0].request.prefix_id == 7);
  CHECK(r.requests[2].request.prefix_id == -1);
  CHECK(r.requests[4].request.prefix_tokens == 500);
  // The second and fourth rows find prefix 7's full blocks; prefix 9 is read once, so never hit.
  CHECK(r.prefix_hit_tokens == 2 * 992);
  CHECK(r.prefill_tokens == 4 * 3000 + 2000 - 2 * 992);
  // The first two rows as JSON Lines: the second hits prefix 7 as in the CSV.
  const std::string jsonl = test::temp_file(
      "{\"arrival_s\": 0, \"prompt_tokens\": 3000, \"output_tokens\": 4, \"prefix_id\": 7, \"prefix_tokens\": 1000}\n"
      "{\"arrival_s\": 10, \"prompt_tokens\": 3000, \"output_tokens\": 4, \"prefix_id\": 7, \"prefix_tokens\": 1000}\n",
      ".jsonl");
  CHECK(simulate_serving(cached_on_trace(jsonl)).prefix_hit_tokens == 992);
}

TEST_CASE("prefix caching: cached prefixes nobody reads are evicted when blocks run out, and every request finishes", "[serve]") {
  // About 1,780 blocks a GPU (test_serve's squeeze) against prefixes of 64 blocks, nearly all distinct.
  const ServingSpec s = tp8({"serving.kv_cache.memory_fraction=0.22", "serving.requests.rate_per_s=10", "serving.requests.duration_s=30",
                             "serving.requests.shared_prefix.tokens=1024", "serving.requests.shared_prefix.count=100000",
                             "serving.kv_cache.prefix_caching=true"});
  const ServeResult r = simulate_serving(s);
  const ServeSummary m = summarize_serving(s, r);
  CHECK(m.prefix_evictions > 0);
  CHECK(m.kv_utilization_peak <= 1.0);
  for (const RequestState& q : r.requests) {
    CHECK(q.finished());
    CHECK(q.blocks == 0);
    CHECK(q.shared_blocks == 0);
  }
}

TEST_CASE("prefix caching: kv_aware routing sends a prefix to the replica that holds it", "[serve]") {
  const ServingSpec s = tp8({"serving.replicas=4", "serving.router=kv_aware", "serving.kv_cache.prefix_caching=true",
                             "serving.requests.shared_prefix.tokens=1024", "serving.requests.shared_prefix.count=2",
                             "serving.requests.rate_per_s=0.5", "serving.requests.duration_s=120"});
  const ServeResult r = simulate_serving(s);
  // Once a prefix is cached somewhere its later requests all go there, so each prefix misses once
  // (arrivals 2 s apart: the first has cached it before the next comes).
  std::map<int, int> home;
  for (const RequestState& q : r.requests) {
    auto [it, first] = home.emplace(q.request.prefix_id, q.replica);
    if (!first) CHECK(q.replica == it->second);
  }
  CHECK(home.size() == 2);
  CHECK(r.prefix_hit_tokens == (long(r.requests.size()) - 2) * 1024);
}
