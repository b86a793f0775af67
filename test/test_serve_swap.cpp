// serve's preemption by swap (workloads/serving/scheduler.hpp): a preempted request's KV blocks go
// to host memory and come back instead of being recomputed, the copies priced over PCIe.
#include <catch2/catch.hpp>

#include "simulator/serve_report.hpp"
#include "simulator/serve_sim.hpp"
#include "support.hpp"
#include "workloads/serving/serving_spec.hpp"

using namespace clustersim;
using test::source_path;

namespace {

/// The recompute test's squeeze (test_serve.cpp): about 1 GiB a GPU of KV cache under 10 requests/s.
ServingSpec squeezed(std::vector<std::string> sets) {
  sets.insert(sets.end(), {"serving.kv_cache.memory_fraction=0.22", "serving.requests.rate_per_s=10", "serving.requests.duration_s=30"});
  return load_serving(source_path("scenarios/serving/llama3-70b-h100-tp8.yaml"), sets);
}

}  // namespace

TEST_CASE("swap preemption: nothing is recomputed, and the copies take tokens x KV bytes over PCIe", "[serve]") {
  const ServingSpec s = squeezed({"serving.scheduler.preemption=swap", "serving.kv_cache.swap_space_GiB=64"});
  const ServeResult r = simulate_serving(s);
  const ServeSummary m = summarize_serving(s, r);
  REQUIRE(m.preemptions > 0);
  CHECK(m.swaps == m.preemptions);  // 64 GiB of host memory a GPU holds every swapped request
  for (const RequestState& q : r.requests) {
    CHECK(q.finished());
    CHECK(q.swapped_blocks == 0);
    CHECK(q.target_tokens == q.request.prompt_tokens);  // recompute would have added its generated tokens
  }
  // Llama 3 70B on tp 8: 80 layers x 2 (K, V) x 1 KV head x 128 x 2 B a token on each GPU, each over
  // its own PCIe 5 x16 link, 64 GB/s at efficiency 1 (dgx-h100-superpod.yaml).
  const double bytes_per_token = 80 * 2 * 128 * 2;
  REQUIRE(r.swapped_tokens > 0);
  CHECK(r.swap_s_sum == Approx(double(r.swapped_tokens) * bytes_per_token / 64e9).epsilon(1e-12));
  // Every token swapped out comes back in: the copies are an even count of a request's tokens.
  CHECK(r.swapped_tokens % 2 == 0);
}

TEST_CASE("swap preemption with no swap space falls back to recompute", "[serve]") {
  const ServingSpec s = squeezed({"serving.scheduler.preemption=swap", "serving.kv_cache.swap_space_GiB=0"});
  const ServeResult r = simulate_serving(s);
  CHECK(r.preemptions > 0);
  CHECK(r.swaps == 0);
  CHECK(r.swap_s_sum == 0);
  // Identical to recompute, request for request.
  const ServeResult recompute = simulate_serving(squeezed({}));
  REQUIRE(recompute.requests.size() == r.requests.size());
  for (std::size_t i = 0; i < r.requests.size(); ++i) CHECK(recompute.requests[i].finish_s == r.requests[i].finish_s);
}
