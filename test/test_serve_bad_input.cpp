// `clustersim serve`'s bad input: one line `file:line: field: what was expected`, exit status 2,
// nothing on stdout (test/one_line_error.hpp), for each case issue 19 names and every new range.
#include <catch2/catch.hpp>

#include "one_line_error.hpp"
#include "support.hpp"

using namespace clustersim;
using test::require_one_line_error;
using test::source_path;

namespace {

/// A serving file with `serving` as its section (and `top` before it), absolute paths to the
/// shipped cluster and model.
std::string serving_file(const std::string& serving, const std::string& top = "") {
  return test::temp_file("name: bad\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + "\nmodel: " +
                         source_path("scenarios/models/llama3-70b.yaml") + "\n" + top + "serving:\n" + serving);
}

const std::string kRequests = "  requests: {arrival: poisson, rate_per_s: 1, duration_s: 1, prompt_tokens: 100, output_tokens: 10}\n";

}  // namespace

TEST_CASE("serve: a model that does not fit its replica says by how many GiB, at serving.parallel", "[serve]") {
  const std::string file = serving_file("  parallel: {tp: 1}\n" + kRequests);
  require_one_line_error(test::run_cli("serve " + file), "error: " + file + ":5: serving.parallel:", "GiB over the 72.00 GiB it may use");
}

TEST_CASE("serve: a malformed trace line is named by its line and column", "[serve]") {
  const std::string trace = test::temp_file("arrival_s,prompt_tokens,output_tokens\n0.1,100,10\n0.2,lots,10\n", ".csv");
  const std::string file = serving_file("  parallel: {tp: 8}\n  requests: {arrival: trace, trace: " + trace + "}\n");
  require_one_line_error(test::run_cli("serve " + file), "error: " + trace + ":3: prompt_tokens:", "expected an integer from 1 to 16777216 tokens, got 'lots'");
  const std::string jsonl = test::temp_file("{\"arrival_s\": 0, \"prompt_tokens\": 5, \"output_tokens\": 2}\n{\"arrival_s\": 1,\n", ".jsonl");
  const std::string file2 = serving_file("  parallel: {tp: 8}\n  requests: {arrival: trace, trace: " + jsonl + "}\n");
  require_one_line_error(test::run_cli("serve " + file2), "error: " + jsonl + ":2: line:", "expected one JSON object per line");
  const std::string short_row = test::temp_file("arrival_s,prompt_tokens,output_tokens\n0.1,100\n", ".csv");
  const std::string file3 = serving_file("  parallel: {tp: 8}\n  requests: {arrival: trace, trace: " + short_row + "}\n");
  require_one_line_error(test::run_cli("serve " + file3), "error: " + short_row + ":2: output_tokens:", "expected 3 fields as the header, got 2");
}

TEST_CASE("serve: a host time without a unit, an empty host or an unknown host key is refused at its field", "[serve]") {
  const std::string file = serving_file("  parallel: {tp: 8}\n" + kRequests + "  host: {iteration: 4, per_request: 0.4ms}\n");
  require_one_line_error(test::run_cli("serve " + file), "error: " + file + ":7: serving.host.iteration:",
                         "expected a duration with its unit (s, ms or us)");
  const std::string empty = serving_file("  parallel: {tp: 8}\n" + kRequests + "  host: {overlap: true}\n");
  require_one_line_error(test::run_cli("serve " + empty), "error: " + empty + ":7: serving.host:", "expected an iteration or per_request time");
  const std::string unknown = serving_file("  parallel: {tp: 8}\n" + kRequests + "  host: {iteration: 4ms, launch: 5us}\n");
  require_one_line_error(test::run_cli("serve " + unknown), "error: " + unknown + ":7: serving.host.launch:", "");
}

TEST_CASE("serve: a trace's prefix columns: both or neither, no longer than the prompt, one length a prefix", "[serve]") {
  const auto with_trace = [&](const std::string& rows) {
    const std::string trace = test::temp_file(rows, ".csv");
    return std::make_pair(trace, serving_file("  parallel: {tp: 8}\n  requests: {arrival: trace, trace: " + trace + "}\n"));
  };
  const auto [t1, f1] = with_trace("arrival_s,prompt_tokens,output_tokens,prefix_id\n0,100,10,3\n");
  require_one_line_error(test::run_cli("serve " + f1), "error: " + t1 + ":1: header:", "expected prefix_id and prefix_tokens together, or neither");
  const auto [t2, f2] = with_trace("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,100,10,3,\n");
  require_one_line_error(test::run_cli("serve " + f2), "error: " + t2 + ":2: prefix_tokens:", "expected prefix_id and prefix_tokens together, or neither");
  const auto [t3, f3] = with_trace("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,100,10,3,200\n");
  require_one_line_error(test::run_cli("serve " + f3), "error: " + t3 + ":2: prefix_tokens:",
                         "expected an integer from 1 to the prompt's 100 tokens, got '200'");
  const auto [t4, f4] = with_trace("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,100,10,3,50\n1,100,10,3,60\n");
  require_one_line_error(test::run_cli("serve " + f4), "error: " + t4 + ":3: prefix_tokens:",
                         "expected prefix 3's 50 tokens, as line 2 gives it; got 60");
  const auto [t5, f5] = with_trace("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,100,10,-1,50\n");
  require_one_line_error(test::run_cli("serve " + f5), "error: " + t5 + ":2: prefix_id:", "expected an integer from 0 to 1e9, got '-1'");
}

TEST_CASE("serve: more batches in flight than pipeline stages is refused at its field", "[serve]") {
  const std::string file = serving_file("  parallel: {tp: 4, pp: 2}\n" + kRequests + "  scheduler: {batches_in_flight: 3}\n");
  require_one_line_error(test::run_cli("serve " + file), "error: " + file + ":7: serving.scheduler.batches_in_flight:",
                         "expected an integer from 1 to 2 batches, at most one a pipeline stage (pp 2), got '3'");
}

TEST_CASE("serve: an SLO without a unit is refused at its field", "[serve]") {
  const std::string file = serving_file("  parallel: {tp: 8}\n" + kRequests + "  slo: {ttft: 500, tpot: 50ms}\n");
  require_one_line_error(test::run_cli("serve " + file), "error: " + file + ":7: serving.slo.ttft:", "expected a duration with its unit (s, ms or us)");
}

TEST_CASE("serve: a speculative acceptance rate outside [0, 1] is refused", "[serve]") {
  const std::string file = serving_file("  parallel: {tp: 8}\n" + kRequests + "  speculative: {method: mtp, tokens: 2, acceptance_rate: 1.5}\n");
  require_one_line_error(test::run_cli("serve " + file), "error: " + file + ":7: serving.speculative.acceptance_rate:", "expected a number from 0 to 1");
  const std::string listed = serving_file("  parallel: {tp: 8}\n" + kRequests + "  speculative: {method: mtp, tokens: 2, acceptance_rate: [0.9, 1.2]}\n");
  require_one_line_error(test::run_cli("serve " + listed), "error: " + listed + ":7: serving.speculative.acceptance_rate[1]:", "expected a number from 0 to 1");
  const std::string short_list = serving_file("  parallel: {tp: 8}\n" + kRequests + "  speculative: {method: mtp, tokens: 2, acceptance_rate: [0.9]}\n");
  require_one_line_error(test::run_cli("serve " + short_list), "error: " + short_list + ":7: serving.speculative.acceptance_rate:",
                         "expected one acceptance rate per proposed token (2), got 1");
}

TEST_CASE("serve: every numeric field is range-checked at its line", "[serve]") {
  const struct {
    const char* set;
    const char* field;
    const char* expected;
  } cases[] = {
      {"serving.requests.rate_per_s=0", "serving.requests.rate_per_s", "expected a number from"},
      {"serving.requests.duration_s=-1", "serving.requests.duration_s", "expected a number from"},
      {"serving.requests.prompt_tokens=0", "serving.requests.prompt_tokens", "expected an integer from 1 to"},
      {"serving.requests.seed=-3", "serving.requests.seed", "expected an integer from 0"},
      {"serving.replicas=0", "serving.replicas", "expected an integer from 1 to 100000"},
      {"serving.replicas=1000", "serving.replicas", "expected at most the 1016 GPUs"},
      {"serving.parallel.tp=3", "serving.parallel.tp", "expected tp to divide the model's 64 heads"},
      {"serving.parallel.ep=2", "serving.parallel.ep", "expected ep 1: the model has no experts"},
      {"serving.parallel.pp=81", "serving.parallel.pp", "expected at most one pipeline stage per layer"},
      {"serving.kv_cache.block_tokens=0", "serving.kv_cache.block_tokens", "expected an integer from 1 to 1024"},
      {"serving.kv_cache.memory_fraction=2", "serving.kv_cache.memory_fraction", "expected a number from 0.01 to 1"},
      {"serving.kv_cache.dtype=int4", "serving.kv_cache.dtype", "expected one of: bf16, fp16, fp8"},
      {"serving.scheduler.max_batch_tokens=0", "serving.scheduler.max_batch_tokens", "expected an integer from 1"},
      {"serving.scheduler.max_batch_requests=100000", "serving.scheduler.max_batch_requests", "expected an integer from 1 to 65536"},
      {"serving.series_interval_s=0", "serving.series_interval_s", "expected a number from"},
      {"serving.speculative.tokens=17", "serving.speculative.tokens", "expected an integer from 1 to 16"},
      {"serving.scheduler.preemption=evict", "serving.scheduler.preemption", "expected one of: recompute, swap"},
      {"serving.kv_cache.swap_space_GiB=-1", "serving.kv_cache.swap_space_GiB", "expected a number from 0 to 100000 GiB"},
      {"serving.parallel.dp_attention=0", "serving.parallel.dp_attention", "expected an integer from 1 to 1024 attention ranks"},
      {"serving.parallel.dp_attention=2000", "serving.parallel.dp_attention", "expected an integer from 1 to 1024 attention ranks"},
      {"serving.parallel.redundant_experts=-1", "serving.parallel.redundant_experts", "expected an integer from 0 to 1048576 experts"},
      {"serving.parallel.two_batch_overlap=maybe", "serving.parallel.two_batch_overlap", "expected true or false"},
  };
  const std::string file = serving_file("  parallel: {tp: 8}\n" + kRequests + "  speculative: {method: mtp, tokens: 2, acceptance_rate: 0.5}\n");
  for (const auto& c : cases) {
    INFO(c.set);
    const auto r = test::run_cli(std::string("serve ") + file + " --set " + c.set);
    require_one_line_error(r, "error: " + file + ":", std::string(c.field) + ": " + c.expected);
  }
}

TEST_CASE("serve: a request longer than a replica's KV cache is refused, an unknown --set names the fields", "[serve]") {
  const std::string file = serving_file("  parallel: {tp: 8}\n" + kRequests);
  require_one_line_error(test::run_cli("serve " + file + " --set serving.requests.prompt_tokens=16000000"), "error: " + file + ":6: serving.requests.prompt_tokens:",
                         "expected every request to fit a replica's KV cache");
  require_one_line_error(test::run_cli("serve " + file + " --set serving.nope=1"), "error: command line: --set:", "unknown serving field 'serving.nope'");
}

TEST_CASE("serve: the cost's options and catalog are checked, one line each", "[serve]") {
  const std::string file = serving_file("  parallel: {tp: 8}\n" + kRequests);
  require_one_line_error(test::run_cli("serve " + file + " --usd-per-kWh lots"), "error: command line: --usd-per-kWh:", "expected a number");
  require_one_line_error(test::run_cli("serve " + file + " --amortisation-years 0"), "error: command line: --amortisation-years:",
                         "expected a number from 0.1 to 100");
  require_one_line_error(test::run_cli("serve " + file + " --prices /no/such/prices.yaml"), "error: /no/such/prices.yaml: --prices:", "cannot open file");
  const std::string prices = test::temp_file("servers:\n  - {name: s, gpu: H100-SXM, gpus: 8, nics: 8, price: 5, power_W: 1, source: x, date: 2024-01}\n"
                                             "nics: []\nswitches: []\noptics: []\ncables: []\n");
  require_one_line_error(test::run_cli("serve " + file + " --prices " + prices), "error: " + prices + ":2: servers[0]", "price");
}

TEST_CASE("serve --validate: a bad row is named at its line in the rows file", "[serve]") {
  const std::string serving = serving_file("  parallel: {tp: 8}\n" + kRequests);
  const auto rows = [&](const std::string& row) {
    return test::temp_file("set: s\nrows:\n  - {name: r, serving: " + serving + ", " + row + ", published: 1, source: test}\n");
  };
  const std::string metric = rows("metric: ttft_p42_s");
  require_one_line_error(test::run_cli("serve --validate " + metric), "error: " + metric + ":3: rows[0].metric:", "expected one of ttft_p50_s");
  const std::string no_batch = rows("metric: decode_iteration_s");
  require_one_line_error(test::run_cli("serve --validate " + no_batch), "error: " + no_batch + ":3: rows[0]:", "expected decode_batch");
  const std::string stray = rows("metric: ttft_p50_s, decode_batch: {requests: 1, context_tokens: 5}");
  require_one_line_error(test::run_cli("serve --validate " + stray), "error: " + stray + ":3: rows[0].decode_batch:",
                         "expected decode_batch only with metric decode_iteration_s");
  const std::string unknown = rows("metric: ttft_p50_s, settings: [serving.nope=1]");
  require_one_line_error(test::run_cli("serve --validate " + unknown), "error: " + unknown + ":3: rows[0].settings:", "unknown serving field 'serving.nope'");
  const std::string no_eq = rows("metric: ttft_p50_s, settings: [fast]");
  require_one_line_error(test::run_cli("serve --validate " + no_eq), "error: " + no_eq + ":3: rows[0].settings[0]:", "expected FIELD=VALUE");
  require_one_line_error(test::run_cli("serve " + serving + " --validate " + metric), "error: command line: --validate:",
                         "expected no serving file beside --validate FILE");
  require_one_line_error(test::run_cli("serve --validate " + metric + " --set serving.parallel.tp=4"), "error: command line: --set:",
                         "expected a serving file: --validate rows set their own fields");
  require_one_line_error(test::run_cli("serve"), "error: command line: serving:", "missing: expected this argument");
}

TEST_CASE("serve: a shared prefix is checked at its fields, and refused beside a trace", "[serve]") {
  const std::string zero = serving_file("  parallel: {tp: 8}\n  requests: {arrival: poisson, rate_per_s: 1, duration_s: 1, prompt_tokens: 100, "
                                        "output_tokens: 10, shared_prefix: {tokens: 64, count: 0}}\n");
  require_one_line_error(test::run_cli("serve " + zero), "error: " + zero + ":6: serving.requests.shared_prefix.count:",
                         "expected an integer from 1 to 1000000 prefixes");
  const std::string trace = test::temp_file("arrival_s,prompt_tokens,output_tokens\n0.1,100,10\n", ".csv");
  const std::string beside = serving_file("  parallel: {tp: 8}\n  requests: {arrival: trace, trace: " + trace + ", shared_prefix: {tokens: 64}}\n");
  require_one_line_error(test::run_cli("serve " + beside), "error: " + beside + ":6: serving.requests.shared_prefix:",
                         "expected no shared_prefix with arrival: trace");
}

TEST_CASE("serve: data-parallel attention needs experts, one stage and ep a multiple of its ranks, and redundant experts need ep", "[serve]") {
  const std::string dense = serving_file("  parallel: {tp: 1, dp_attention: 8}\n" + kRequests);
  require_one_line_error(test::run_cli("serve " + dense), "error: " + dense + ":5: serving.parallel.dp_attention:",
                         "expected dp_attention 1: the model has no experts");
  const std::string mixtral = source_path("scenarios/models/mixtral-8x7b.yaml");
  const auto moe_file = [&](const std::string& parallel) {
    return test::temp_file("name: bad\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") + "\nmodel: " + mixtral +
                           "\nserving:\n  parallel: " + parallel + "\n" + kRequests);
  };
  const std::string staged = moe_file("{tp: 1, pp: 2, dp_attention: 4, ep: 4}");
  require_one_line_error(test::run_cli("serve " + staged), "error: " + staged + ":5: serving.parallel.dp_attention:",
                         "expected dp_attention 1 with pp 2 (attention ranks step together through one stage)");
  const std::string few = moe_file("{tp: 2, dp_attention: 4, ep: 2}");
  require_one_line_error(test::run_cli("serve " + few), "error: " + few + ":5: serving.parallel.ep:",
                         "expected ep to be a multiple of dp_attention (4) that divides dp_attention x tp (8)");
  const std::string uneven = moe_file("{tp: 1, dp_attention: 8, ep: 8, redundant_experts: 4}");
  require_one_line_error(test::run_cli("serve " + uneven), "error: " + uneven + ":5: serving.parallel.ep:",
                         "expected ep to divide the 8 routed experts and 4 redundant ones (12)");
  const std::string lone = moe_file("{tp: 8, dispatch: deepep}");
  require_one_line_error(test::run_cli("serve " + lone), "error: " + lone + ":5: serving.parallel.dispatch:",
                         "expected dispatch only with ep > 1 (there is no expert all-to-all)");
  const std::string overlap = moe_file("{tp: 8, ep: 8, two_batch_overlap: true}");
  require_one_line_error(test::run_cli("serve " + overlap), "error: " + overlap + ":5: serving.parallel.two_batch_overlap:",
                         "expected two_batch_overlap only with dp_attention > 1");
  const std::string alone = moe_file("{tp: 8, redundant_experts: 8}");
  require_one_line_error(test::run_cli("serve " + alone), "error: " + alone + ":5: serving.parallel.redundant_experts:",
                         "expected redundant_experts 0 with ep 1");
}

TEST_CASE("serve: a named choice outside the table list prints is refused with the table's names", "[serve]") {
  // workloads/serving/serving_choices.hpp is what both `clustersim list` prints and the reader takes.
  const std::string router = serving_file("  parallel: {tp: 8}\n" + kRequests + "  router: fastest\n");
  require_one_line_error(test::run_cli("serve " + router), "error: " + router + ":7: serving.router:",
                         "expected one of: round_robin, least_loaded, kv_aware; got 'fastest'");
  const std::string dispatch = serving_file("  parallel: {tp: 8, ep: 1, dispatch: nvshmem}\n" + kRequests);
  require_one_line_error(test::run_cli("serve " + dispatch), "error: " + dispatch + ":5: serving.parallel.dispatch:",
                         "expected one of: all_to_all, deepep; got 'nvshmem'");
  const auto listed = test::run_cli("list");
  for (const char* name : {"router: kv_aware", "parallel.dispatch: deepep", "scheduler.preemption: swap", "requests.arrival: gamma"})
    CHECK(listed.stdout_text.find(name) != std::string::npos);
}
