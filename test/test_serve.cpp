// Inference serving (workloads/serving, simulator/serve_sim.hpp): the KV cache's size, an
// iteration's time and the loop's latencies against closed forms written here, and the stream,
// scheduler, router, speculation and disaggregation against what they promise.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "collectives/tuner_nccl.hpp"
#include "simulator/serve_report.hpp"
#include "simulator/serve_sim.hpp"
#include "support.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model_math.hpp"
#include "workloads/serving/comm_cost.hpp"
#include "workloads/serving/iteration_cost.hpp"
#include "workloads/serving/replica_memory.hpp"
#include "workloads/serving/request_stream.hpp"

using namespace clustersim;
using test::source_path;

namespace {

const std::string kTp8 = source_path("scenarios/serving/llama3-70b-h100-tp8.yaml");

/// The shipped one-replica file with `sets` applied.
ServingSpec tp8(std::vector<std::string> sets = {}) { return load_serving(kTp8, sets); }

/// One 8-GPU Llama 3 70B replica (vLLM's defaults) serving the requests of a CSV trace written here.
ServingSpec with_trace(const std::string& rows, std::vector<std::string> sets = {}) {
  const std::string trace = test::temp_file("arrival_s,prompt_tokens,output_tokens\n" + rows, ".csv");
  const std::string file = test::temp_file("name: trace\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                                           "\nmodel: " + source_path("scenarios/models/llama3-70b.yaml") +
                                           "\nserving:\n  parallel: {tp: 8}\n  requests: {arrival: trace, trace: " + trace + "}\n");
  return load_serving(file, sets);
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

}  // namespace

TEST_CASE("KV bytes per token per layer: GQA over tp, replicated past kv_heads, MLA's latent, FP8 halves", "[serve]") {
  const ModelSpec llama = test::shipped_model("llama3-70b");  // 8 KV heads of 128
  CHECK(kv_bytes_per_token_layer(llama, 8, 2) == 2 * 1 * 128 * 2);
  CHECK(kv_bytes_per_token_layer(llama, 2, 2) == 2 * 4 * 128 * 2);
  CHECK(kv_bytes_per_token_layer(llama, 16, 2) == 2 * 1 * 128 * 2);  // a KV head on two ranks
  CHECK(kv_bytes_per_token_layer(llama, 8, 1) == 2 * 1 * 128 * 1);
  const ModelSpec v3 = test::shipped_model("deepseek-v3");  // latent 512 + rope 64 (DeepSeek-V3 Table/config)
  CHECK(kv_bytes_per_token_layer(v3, 8, 2) == (512 + 64) * 2);
}

TEST_CASE("KV blocks are the free HBM over one block's bytes", "[serve]") {
  const ServingSpec s = tp8();
  const ReplicaMemory m = plan_replica_memory(s);
  // Llama 3 70B on tp 8: 80 layers x 2 x 1 KV head x 128 x 2 B per token, 16 tokens a block.
  CHECK(m.block_bytes == Bytes(16 * 80 * 2 * 128 * 2));
  // Weights: every parameter in 2 bytes over 8 GPUs (the final norm's 8192 aside).
  CHECK(test::relative_error(double(m.weight_bytes), 2 * parameter_count(s.model) / 8) < 1e-6);
  const double usable = std::floor(80 * kGiB * 0.9);
  CHECK(m.blocks == long((usable - double(m.weight_bytes) - double(m.workspace_bytes)) / double(m.block_bytes)));
  // Halving the KV datatype doubles the blocks (to within the one block the floor drops).
  const ReplicaMemory f = plan_replica_memory(tp8({"serving.kv_cache.dtype=fp8"}));
  CHECK(std::abs(f.blocks - 2 * m.blocks) <= 1);
}

TEST_CASE("a decode step of one request reads the weights and its KV cache at the catalog's HBM rate", "[serve]") {
  const ServingSpec s = tp8();
  const Cluster cluster = build_cluster(s.cluster);
  ServingComm comm(cluster);
  IterationCost cost(s, s.model, comm);
  const long context = 4000;
  BatchShape b;
  b.decode_requests = 1;
  b.decode_context_tokens = double(context);
  b.sampled_rows = 1;
  const IterationTime t = cost.time(b);
  // Every weight but the input embedding (a lookup of one row) is read once; so is every KV byte.
  const double embedding = 2.0 * s.model.vocab * s.model.hidden / 8;
  const double kv = double(context) * 80 * 2 * 128 * 2;
  const double bytes = double(replica_weight_bytes(s.model, s.parallel, 2)) - embedding + kv;
  const GpuModel& g = s.gpu;
  const double expected_s = bytes / (g.hbm_bandwidth_Bps * g.hbm_efficiency->fraction) / g.in_training_efficiency.value_or(InTrainingEfficiency{}).fraction;
  const Seconds compute_s = t.linear_s + t.attention_s + t.logits_s;
  INFO("modelled " << compute_s << " s, closed form " << expected_s << " s");
  // Above it by the activations, norms and the one token's reads: under 2%.
  CHECK(compute_s >= expected_s);
  CHECK(compute_s < 1.02 * expected_s);
}

TEST_CASE("the host's time per iteration: after the forward it adds iteration + requests x per_request, beside it the longer counts", "[serve]") {
  const ServingSpec bare = tp8();
  const ServingSpec after = tp8({"serving.host.iteration=4ms", "serving.host.per_request=0.5ms"});
  const ServingSpec beside = tp8({"serving.host.iteration=4ms", "serving.host.per_request=0.5ms", "serving.host.overlap=true"});
  const Cluster cluster = build_cluster(bare.cluster);
  ServingComm comm(cluster);
  IterationCost gpu_only(bare, bare.model, comm), serialized(after, after.model, comm), overlapped(beside, beside.model, comm);
  // Decode of 16 requests plus one prefill chunk: 17 requests in the batch.
  BatchShape b;
  b.decode_requests = 16;
  b.decode_context_tokens = 16 * 2000.0;
  b.chunks.push_back({0, 512});
  b.sampled_rows = 17;
  const Seconds gpu = gpu_only.time(b).total_s;
  const Seconds host = 4e-3 + 17 * 0.5e-3;
  CHECK(gpu_only.time(b).host_s == 0);
  CHECK(serialized.time(b).host_s == Approx(host).epsilon(1e-12));
  CHECK(serialized.time(b).total_s == Approx(gpu + host).epsilon(1e-12));
  CHECK(overlapped.time(b).total_s == Approx(std::max(gpu, host)).epsilon(1e-12));
  // One decode request: the GPU's forward (about 12 ms on this replica) outlasts 4.5 ms of host time.
  BatchShape one;
  one.decode_requests = 1;
  one.decode_context_tokens = 2000;
  one.sampled_rows = 1;
  CHECK(overlapped.time(one).total_s == Approx(gpu_only.time(one).total_s).epsilon(1e-12));
  CHECK(gpu_only.time(one).total_s > 4.5e-3);
}

TEST_CASE("host time after the forward: a lone request's TTFT and its time per token grow by the host's time of a batch of one", "[serve]") {
  const std::string row = "0.5,1024,5\n";
  const ServeResult bare = simulate_serving(with_trace(row));
  const ServeResult host = simulate_serving(with_trace(row, {"serving.host.iteration=3ms", "serving.host.per_request=1ms"}));
  REQUIRE(bare.requests.size() == 1);
  REQUIRE(host.requests.size() == 1);
  const RequestState &a = bare.requests[0], &b = host.requests[0];
  const Seconds per_iteration = 3e-3 + 1e-3;
  CHECK(b.first_token_s - a.first_token_s == Approx(per_iteration).epsilon(1e-9));  // one prefill iteration
  CHECK(b.finish_s - a.finish_s == Approx(5 * per_iteration).epsilon(1e-9));        // and four decode steps
}

TEST_CASE("pipeline stages run two batches at once: the second prompt enters stage 0 as the first leaves it", "[serve]") {
  // Two 2048-token prompts at once on tp 4 x pp 2, one request a batch. Each stage takes half the
  // layers' work L (TP and PP traffic included), the last the output layer g too.
  const std::string rows = "0,2048,1\n0,2048,1\n";
  const std::vector<std::string> pp2 = {"serving.parallel.tp=4", "serving.parallel.pp=2", "serving.scheduler.max_batch_requests=1"};
  std::vector<std::string> one = pp2;
  one.push_back("serving.scheduler.batches_in_flight=1");
  const ServingSpec s = with_trace(rows, pp2);
  REQUIRE(s.scheduler.batches_in_flight == 2);
  const Cluster cluster = build_cluster(s.cluster);
  ServingComm comm(cluster);
  IterationCost cost(s, s.model, comm, s.placement.front().gpus);
  BatchShape b;
  b.chunks.push_back({0, 2048});
  b.sampled_rows = 1;
  const IterationTime it = cost.time(b);
  const Seconds L = it.linear_s + it.attention_s + it.communication_s, g = it.logits_s;
  const ServeResult two = simulate_serving(s), serial = simulate_serving(with_trace(rows, one));
  const auto ttft = [](const ServeResult& r, int i) { return r.requests[std::size_t(i)].first_token_s - r.requests[std::size_t(i)].request.arrival_s; };
  // First: through both stages. Second: stage 0 after the first's [0, L/2], stage 1 after the
  // first's [L/2, L + g]: it leaves at L + g + L/2 + g.
  CHECK(ttft(two, 0) == Approx(L + g).epsilon(1e-9));
  CHECK(ttft(two, 1) == Approx(1.5 * L + 2 * g).epsilon(1e-9));
  // One batch in flight: the stages one after another, the second prompt after the first.
  CHECK(ttft(serial, 0) == Approx(L + g).epsilon(1e-9));
  CHECK(ttft(serial, 1) == Approx(2 * (L + g)).epsilon(1e-9));
}

TEST_CASE("pipelined batches: under a saturating stream pp 2 serves nearly twice the tokens of one batch in flight", "[serve]") {
  // Decode-heavy saturation: 400 requests at once, 128-token prompts, 64 output tokens, 32 requests a
  // batch. Each lane holds half the requests at half the batch, so the stages stay busy: throughput
  // rises by (L + g) / (L / 2 + g) at most, where g (the output layer) runs on the last stage alone.
  std::string rows;
  for (int i = 0; i < 400; ++i) rows += "0,128,64\n";
  const std::vector<std::string> pp2 = {"serving.parallel.tp=4", "serving.parallel.pp=2", "serving.scheduler.max_batch_requests=32"};
  std::vector<std::string> one = pp2;
  one.push_back("serving.scheduler.batches_in_flight=1");
  const ServeSummary a = summarize_serving(with_trace(rows, pp2), simulate_serving(with_trace(rows, pp2)));
  const ServeSummary b = summarize_serving(with_trace(rows, one), simulate_serving(with_trace(rows, one)));
  const double gain = a.output_tokens_per_s / b.output_tokens_per_s;
  INFO("two batches in flight: " << a.output_tokens_per_s << " tokens/s, one: " << b.output_tokens_per_s);
  CHECK(gain > 1.6);
  CHECK(gain < 2.0);
}

TEST_CASE("one request alone: TTFT is its prompt's prefill from the compute model, then one decode step a token", "[serve]") {
  const long prompt = 1024;
  ServingSpec s = with_trace("0.5," + std::to_string(prompt) + ",3\n");
  const ServeResult r = simulate_serving(s);
  REQUIRE(r.requests.size() == 1);
  const RequestState& q = r.requests[0];
  // The prefill written out: linear ops over 1024 tokens (layer_forward_ops without the attention
  // core), the causal attention core compute-bound at the catalog's attention efficiency, two TP
  // all-reduces a layer (NCCL's prediction), and one row of the output layer.
  const ModelSpec& m = s.model;
  ModelSpec batch = m;
  batch.seq_len = int(prompt);
  double linear = 0;
  for (const ComputeOp& op : layer_forward_ops(batch, 1, 8, false))
    if (!op.attention_core) linear += op_time(s.gpu, "bf16", op);
  const double heads = 64.0 / 8, d = 128;
  const double attention_flops = 2 * heads * 2 * d * prompt * (prompt / 2.0);
  const double attention = attention_flops / (989e12 * s.gpu.attention_efficiency->fraction_of_peak(double(prompt))) /
                           s.gpu.in_training_efficiency.value_or(InTrainingEfficiency{}).fraction;
  const Cluster cluster = build_cluster(s.cluster);
  const CollectiveRequest ar{Op::all_reduce, {0, 1, 2, 3, 4, 5, 6, 7}, Bytes(prompt * 8192 * 2), std::max(2, 2 * 8), Protocol{}, 0};
  const Seconds all_reduce = *nccl_choose(cluster, ar, std::nullopt, false)->predicted_s;
  ModelSpec one = m;
  one.seq_len = 1;
  const Seconds logits = op_time(s.gpu, "bf16", logits_forward_op(one, 1, 8));
  const Seconds prefill = 80 * (linear + attention + 2 * all_reduce) + logits;
  CHECK(test::relative_error(q.first_token_s - 0.5, prefill) < 1e-9);
  // Three output tokens: the prefill's and two decode steps of one request each.
  CHECK(r.iterations == 3);
  CHECK(q.generated == 3);
}

TEST_CASE("chunked prefill: a prompt takes ceil(prompt / budget) iterations, unchunked, one", "[serve]") {
  const ServeResult chunked = simulate_serving(with_trace("0,2000,5\n", {"serving.scheduler.max_batch_tokens=512"}));
  CHECK(chunked.iterations == (2000 + 511) / 512 + 5 - 1);
  const ServeResult whole = simulate_serving(with_trace("0,2000,5\n", {"serving.scheduler.max_batch_tokens=512", "serving.scheduler.chunked_prefill=false"}));
  CHECK(whole.iterations == 1 + 5 - 1);
}

TEST_CASE("Little's law at low load: requests in the system = arrival rate x mean latency, throughput = load", "[serve]") {
  const ServingSpec s = tp8({"serving.requests.rate_per_s=1", "serving.requests.duration_s=400", "serving.series_interval_s=0.05"});
  const ServeResult r = simulate_serving(s);
  const ServeSummary m = summarize_serving(s, r);
  double in_system = 0;
  for (const ServeSample& x : r.series) in_system += double(x.running + x.waiting);
  in_system /= double(r.series.size());
  INFO("L " << in_system << ", lambda W " << m.requests_per_s * m.e2e.mean_s);
  CHECK(test::relative_error(in_system, m.requests_per_s * m.e2e.mean_s) < 0.03);
  // Below saturation every request is served as it comes: the rate is the stream's (1/s, within
  // 3 sigma of a Poisson count of 400: 15%), and the tokens are its mean output (64..512: 288) a request.
  CHECK(std::abs(double(m.requests) - 400) < 3 * std::sqrt(400.0));
  CHECK(test::relative_error(m.output_tokens_per_s, m.requests_per_s * 288) < 0.1);
  CHECK(m.preemptions == 0);
}

TEST_CASE("streams are seeded: Poisson counts and gamma's cv are the asked ones, a seed repeats itself", "[serve]") {
  RequestStreamSpec p;
  p.rate_per_s = 100;
  p.duration_s = 1000;
  p.prompt_tokens = {10, 20};
  p.output_tokens = {5, 5};
  const auto a = request_stream(p);
  CHECK(std::abs(double(a.size()) - 1e5) < 3 * std::sqrt(1e5));
  CHECK(request_stream(p).back().arrival_s == a.back().arrival_s);
  p.seed = 7;
  CHECK(request_stream(p).back().arrival_s != a.back().arrival_s);
  p.arrival = ArrivalKind::gamma;
  p.cv = 3;
  const auto g = request_stream(p);
  std::vector<double> gaps;
  for (std::size_t i = 1; i < g.size(); ++i) gaps.push_back(g[i].arrival_s - g[i - 1].arrival_s);
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / double(gaps.size());
  double var = 0;
  for (double x : gaps) var += (x - mean) * (x - mean);
  const double cv = std::sqrt(var / double(gaps.size())) / mean;
  CHECK(test::relative_error(mean, 1.0 / 100) < 0.05);
  CHECK(test::relative_error(cv, 3) < 0.05);
}

TEST_CASE("a small KV cache preempts by recompute, and every request still finishes", "[serve]") {
  // About 1 GiB a GPU for the KV cache (28K tokens) against 10 requests/s of 1,150 + 288 tokens.
  const ServingSpec s = tp8({"serving.kv_cache.memory_fraction=0.22", "serving.requests.rate_per_s=10", "serving.requests.duration_s=30"});
  const ServeResult r = simulate_serving(s);
  const ServeSummary m = summarize_serving(s, r);
  INFO("blocks " << r.memory.blocks);
  CHECK(m.preemptions > 0);
  long preempted = 0;
  for (const RequestState& q : r.requests) {
    CHECK(q.finished());
    CHECK(q.blocks == 0);
    preempted += q.preemptions;
  }
  CHECK(preempted == m.preemptions);
  CHECK(m.kv_utilization_peak <= 1.0);
}

TEST_CASE("round_robin deals requests in turn, the run repeats itself exactly", "[serve]") {
  const ServingSpec s = tp8({"serving.replicas=3", "serving.requests.duration_s=10"});
  const ServeResult a = simulate_serving(s), b = simulate_serving(s);
  REQUIRE(a.requests.size() == b.requests.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    CHECK(a.requests[i].replica == int(i % 3));
    CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
  }
}

TEST_CASE("speculative decoding emits (1 - a^(k+1)) / (1 - a) tokens a step, all accepted: k + 1", "[serve]") {
  const std::string file = source_path("scenarios/serving/llama3-70b-h100-speculative.yaml");
  const auto tokens_per_step = [&](const std::string& rate) {
    const ServingSpec s = load_serving(file, {"serving.speculative.acceptance_rate=" + rate, "serving.requests.duration_s=60"});
    return summarize_serving(s, simulate_serving(s)).tokens_per_decode_step;
  };
  CHECK(tokens_per_step("0") == 1);
  // A request's last step may emit fewer than were accepted: its output ends there.
  CHECK(tokens_per_step("1") > 4.9);
  CHECK(tokens_per_step("1") <= 5);
  const double a = 0.7;
  CHECK(test::relative_error(tokens_per_step("0.7"), (1 - std::pow(a, 5)) / (1 - a)) < 0.05);
}

TEST_CASE("disaggregated: the KV cache crosses the routed path at its bottleneck, NDR's 400 Gb/s at 0.94", "[serve]") {
  const ServingSpec s = load_serving(source_path("scenarios/serving/llama3-70b-h100-disagg.yaml"),
                                     {"serving.requests.duration_s=20"});
  const ServeResult r = simulate_serving(s);
  const ServeSummary m = summarize_serving(s, r);
  REQUIRE(r.kv_transfers > 0);
  double bytes = 0;
  for (const RequestState& q : r.requests) bytes += double(q.request.prompt_tokens) * r.memory.kv_bytes_per_token;
  const double bottleneck_Bps = 400e9 / 8 * 0.94;
  const double expected = bytes / double(r.requests.size()) / bottleneck_Bps;
  INFO("mean transfer alone " << m.kv_transfer_alone_mean_s << " s, bytes over the bottleneck " << expected << " s");
  CHECK(m.kv_transfer_alone_mean_s >= expected);
  CHECK(m.kv_transfer_alone_mean_s < expected + 20e-6);  // the path's latencies: a few microseconds
  // Each GPU's shard on its own rail: alone, no two shards meet; transfers in flight together may.
  CHECK(m.kv_transfer_mean_s >= m.kv_transfer_alone_mean_s * (1 - 1e-12));
  for (const RequestState& q : r.requests) CHECK(q.replica >= s.disaggregation.prefill_replicas);
}

TEST_CASE("serve --csv writes a row a request, --trace a slice an iteration, and a rerun the same bytes", "[serve]") {
  const std::string csv = test::temp_file("", ".csv"), trace = test::temp_file("", ".json");
  const std::string args = "serve " + kTp8 + " --set serving.requests.duration_s=3 --set serving.replicas=2 -q --csv " + csv +
                           " --trace " + trace;
  const auto first = test::run_cli(args);
  REQUIRE(first.exit_code == 0);
  CHECK(first.stdout_text.empty());  // -q
  const std::string rows = test::read_file(csv), slices = test::read_file(trace);
  const ServeResult r = simulate_serving(tp8({"serving.requests.duration_s=3", "serving.replicas=2"}));
  CHECK(std::count(rows.begin(), rows.end(), '\n') == long(r.requests.size()) + 1);  // and the header
  const nlohmann::json t = nlohmann::json::parse(slices);
  long iterations = 0;
  for (const auto& e : t.at("traceEvents")) iterations += e.at("ph") == "X" ? 1 : 0;
  CHECK(iterations == r.iterations);
  REQUIRE(test::run_cli(args).exit_code == 0);
  CHECK(test::read_file(csv) == rows);
  CHECK(test::read_file(trace) == slices);
}

TEST_CASE("the shipped trace scenario serves its five rows, each from its own arrival", "[serve]") {
  const ServingSpec s = load_serving(source_path("scenarios/serving/llama3-70b-h100-trace.yaml"));
  const ServeResult r = simulate_serving(s);
  REQUIRE(r.requests.size() == 5);
  const long outputs[] = {128, 64, 256, 32, 200};
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(r.requests[i].generated == outputs[i]);
    CHECK(r.requests[i].first_token_s > r.requests[i].request.arrival_s);
  }
  CHECK(r.requests[3].request.arrival_s == 1.10);
}

TEST_CASE("speculative acceptance by position: a step emits 1 + a1 + a1 a2 + ... tokens", "[serve]") {
  std::string text = test::read_file(source_path("scenarios/serving/llama3-70b-h100-speculative.yaml"));
  text = test::replaced_all(text, "../", source_path("scenarios") + "/", "speculative");
  text = test::replaced_all(text, "acceptance_rate: 0.7", "acceptance_rate: [0.9, 0.8, 0.6, 0.4]", "speculative");
  const ServingSpec s = load_serving(test::temp_file(text), {"serving.requests.duration_s=60"});
  const double expected = 1 + 0.9 + 0.9 * 0.8 + 0.9 * 0.8 * 0.6 + 0.9 * 0.8 * 0.6 * 0.4;  // 3.2248
  CHECK(test::relative_error(summarize_serving(s, simulate_serving(s)).tokens_per_decode_step, expected) < 0.05);
}

TEST_CASE("the shipped Azure conversation trace: its 190 published requests, each served as recorded", "[serve]") {
  const ServingSpec s = load_serving(source_path("scenarios/serving/llama3-70b-h100-azure-conv.yaml"));
  const ServeResult r = simulate_serving(s);
  REQUIRE(r.requests.size() == 190);
  // The trace's first and second rows (Azure/AzurePublicDataset, 18:15:46.68 and 18:15:50.995).
  CHECK(r.requests[0].request.prompt_tokens == 374);
  CHECK(r.requests[0].generated == 44);
  CHECK(r.requests[1].request.arrival_s == Approx(4.314579));
  for (const RequestState& q : r.requests) CHECK(q.finished());
}
