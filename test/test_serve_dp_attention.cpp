// Data-parallel attention with expert parallelism across it (serving.parallel.dp_attention, ep,
// redundant_experts): each attention rank's weights and KV cache, a step's time against closed
// forms written here, and the ranks stepping together.
#include <catch2/catch.hpp>

#include <map>
#include <string_view>

#include "simulator/serve_sim.hpp"
#include "simulator/serve_validation.hpp"
#include "support.hpp"
#include "workloads/model_math.hpp"
#include "workloads/serving/comm_cost.hpp"
#include "workloads/serving/iteration_cost.hpp"
#include "workloads/serving/replica_memory.hpp"

using namespace clustersim;
using test::source_path;

namespace {

const std::string kDeepSeek = source_path("scenarios/serving/deepseek-v3-h100-dp-attention.yaml");

/// Mixtral 8x7B on one 8-GPU H100 node, eight attention ranks of one GPU, an expert a GPU, serving
/// the requests of a CSV trace written here.
ServingSpec mixtral_dp8(const std::string& rows, std::vector<std::string> sets = {}) {
  const std::string trace = test::temp_file("arrival_s,prompt_tokens,output_tokens\n" + rows, ".csv");
  const std::string file = test::temp_file("name: dp8\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                                           "\nmodel: " + source_path("scenarios/models/mixtral-8x7b.yaml") +
                                           "\nserving:\n  parallel: {tp: 1, dp_attention: 8, ep: 8}\n"
                                           "  requests: {arrival: trace, trace: " + trace + "}\n");
  return load_serving(file, sets);
}

/// One expert's SwiGLU weights in one layer: gate, up and down, h x f each.
double expert_params(const ModelSpec& m) { return 3.0 * m.hidden * m.moe->expert_ffn_hidden; }

/// SGLang's 72-GPU DeepSeek-V3 decode replica (EP 72, DeepEP) twice: as it ran, with two-batch
/// overlap (`with`), and without it (`without`), on one fabric.
struct OverlapPair {
  ServingSpec on = load_serving(source_path("scenarios/validation/serving/deepseek-v3-h100-sglang-decode.yaml"));
  ServingSpec off = load_serving(source_path("scenarios/validation/serving/deepseek-v3-h100-sglang-decode.yaml"),
                                 {"serving.parallel.two_batch_overlap=false"});
  Cluster cluster = build_cluster(on.cluster);
  ServingComm comm{cluster};
  IterationCost with{on, on.model, comm}, without{off, off.model, comm};
};

}  // namespace

TEST_CASE("data-parallel attention: a GPU holds every weight but the routed experts, and 1/ep of those", "[serve]") {
  // DeepSeek-V3 in FP8 on 16 GPUs, ep 16: its 671B (the report's total, MTP aside) less the 58 MoE
  // layers' 256 routed experts, plus a sixteenth of them, one byte each.
  const ServingSpec s = load_serving(kDeepSeek);
  const ModelSpec& m = s.model;
  const double routed = 58.0 * 256 * expert_params(m);
  const double expected = 671e9 - routed + routed / 16;
  const ReplicaMemory mem = plan_replica_memory(s);
  INFO("weights " << double(mem.weight_bytes) / 1e9 << " GB a GPU, closed form " << expected / 1e9);
  CHECK(test::relative_error(double(mem.weight_bytes), expected) < 0.005);
  // 32 redundant expert copies (EPLB) at ep 16: 18 experts a GPU instead of 16.
  const ReplicaMemory more = plan_replica_memory(load_serving(kDeepSeek, {"serving.parallel.redundant_experts=32"}));
  CHECK(double(more.weight_bytes - mem.weight_bytes) == Approx(58.0 * 2 * expert_params(m)).epsilon(1e-6));
}

TEST_CASE("data-parallel attention keeps one latent KV cache a rank where tensor parallelism copies it on every GPU", "[serve]") {
  // MLA's latent (512 + 64 values a token and layer) is whole on every tensor-parallel rank: tp 16
  // holds one cache of N tokens over 16 GPUs, 16 ranks of one GPU hold 16 caches.
  const ServingSpec dp = load_serving(kDeepSeek);
  const ServingSpec tp = load_serving(kDeepSeek, {"serving.parallel.dp_attention=1", "serving.parallel.tp=16"});
  const ReplicaMemory a = plan_replica_memory(dp), b = plan_replica_memory(tp);
  CHECK(a.kv_bytes_per_token == b.kv_bytes_per_token);
  CHECK(a.kv_bytes_per_token == 61.0 * (512 + 64) * 2);
  // Per GPU, the TP replica has more room (its expert and dense weights split 16 ways), yet the
  // replica as a whole caches far fewer tokens.
  CHECK(b.blocks > a.blocks);
  CHECK(16 * a.blocks > 8 * b.blocks);
  const ServeResult r = simulate_serving(dp, nullptr);
  CHECK(r.requests.size() > 1000);
  for (const RequestState& q : r.requests) CHECK(q.finished());
}

TEST_CASE("a data-parallel attention step of one decode token a rank reads each GPU's weights once at the HBM rate", "[serve]") {
  // Mixtral 8x7B, 8 ranks, ep 8: one expert a GPU, which the step's 8 tokens x top 2 reach. Each GPU
  // reads its weights (all but the input embedding, a lookup) and its request's KV cache once.
  const ServingSpec s = mixtral_dp8("0,16,2\n");
  const Cluster cluster = build_cluster(s.cluster);
  ServingComm comm(cluster);
  IterationCost cost(s, s.model, comm);
  const long context = 4000;
  BatchShape one;
  one.decode_requests = 1;
  one.decode_context_tokens = double(context);
  one.sampled_rows = 1;
  const IterationTime t = cost.time_ranks(std::vector<BatchShape>(8, one));
  const ModelSpec& m = s.model;
  const double embedding = 2.0 * m.vocab * m.hidden;
  const double kv = double(context) * 32 * 2 * 8 * 128 * 2;  // 8 KV heads of 128, whole on a tp-1 rank
  const double bytes = double(replica_weight_bytes(m, s.parallel, 2)) - embedding + kv;
  CHECK(double(replica_weight_bytes(m, s.parallel, 2)) ==
        Approx(2 * (parameter_count(m) - 32 * 8 * expert_params(m) + 32 * expert_params(m))).epsilon(1e-6));
  const GpuModel& g = s.gpu;
  const double expected_s = bytes / (g.hbm_bandwidth_Bps * g.hbm_efficiency->fraction) / g.in_training_efficiency.value_or(InTrainingEfficiency{}).fraction;
  const Seconds compute_s = t.linear_s + t.attention_s + t.logits_s;
  INFO("modelled " << compute_s << " s, closed form " << expected_s << " s");
  // Above it by the activations, norms and the router, whose 4096 x 8 GEMM sits on the GEMM curve's
  // small-size floor (6 us a layer, 3.7% here): under 5%.
  CHECK(compute_s >= expected_s);
  CHECK(compute_s < 1.05 * expected_s);
  // The all-to-alls: each rank's one token goes to its top 2 of 8 GPUs, over NVLink.
  CHECK(t.communication_s > 0);
}

TEST_CASE("attention ranks step together: two prompts on two ranks take one step, between one prompt's time and twice it", "[serve]") {
  // A short prompt at 0 starts a step on rank 0; the 2048-token prompts arrive while it runs, go to
  // the least loaded ranks (1, then 2), and wait for it, though their ranks are idle.
  const std::string first = "0,16,1\n";
  const ServeResult one = simulate_serving(mixtral_dp8(first + "0.0001,2048,1\n"));
  const ServeResult two = simulate_serving(mixtral_dp8(first + "0.0001,2048,1\n0.0002,2048,1\n"));
  REQUIRE(two.requests.size() == 3);
  const Seconds step1 = one.requests[0].first_token_s;
  CHECK(two.requests[0].first_token_s == step1);
  const Seconds alone = one.requests[1].first_token_s - step1;
  const Seconds together = two.requests[1].first_token_s - step1;
  // Both prompts prefilled in the same second step.
  CHECK(two.requests[2].first_token_s == two.requests[1].first_token_s);
  CHECK(one.iterations == 2);
  CHECK(two.iterations == 2);
  // Each rank's own layers run side by side; only the experts see both prompts' tokens.
  CHECK(together > alone);
  CHECK(together < 1.5 * alone);
}

TEST_CASE("an idle attention rank costs a step nothing: one busy rank is the step of a lone rank", "[serve]") {
  const ServingSpec s = mixtral_dp8("0,16,2\n");
  const Cluster cluster = build_cluster(s.cluster);
  ServingComm comm(cluster);
  IterationCost cost(s, s.model, comm);
  BatchShape b;
  b.chunks.push_back({0, 1024});
  b.sampled_rows = 1;
  std::vector<BatchShape> ranks(8);
  ranks[3] = b;
  CHECK(cost.time_ranks(ranks).total_s == cost.time(b).total_s);
  CHECK(cost.time_ranks(ranks).total_s < cost.time_ranks(std::vector<BatchShape>(8, b)).total_s);
}

TEST_CASE("DeepEP dispatch: a token crosses to the other node once, at NDR's 400 Gb/s x 0.94 a GPU, where plain all-to-all sends each expert copy there", "[serve]") {
  // 16 GPUs on 2 nodes, 64 experts (4 a GPU), top 4, no node limit: a token needs the other node
  // unless all 4 of its experts sit on its own: 1 - C(32, 4) / C(64, 4).
  const ServingSpec s = load_serving(kDeepSeek);
  const Cluster cluster = build_cluster(s.cluster);
  ServingComm comm(cluster);
  std::vector<int> group(16);
  for (int g = 0; g < 16; ++g) group[std::size_t(g)] = g;
  const double tokens = 1024, bytes = 7168 + 7168 / 128 * 4;
  const double remote = 1 - (32.0 * 31 * 30 * 29) / (64.0 * 63 * 62 * 61);
  const double nic_Bps = 400e9 / 8 * 0.94;
  const Seconds deepep = comm.deepep_all_to_all_s(group, tokens, bytes, DeepEpRouting{64, 4, 1 << 20});
  CHECK(deepep == Approx(tokens * bytes * remote / nic_Bps).epsilon(1e-9));
  // Each copy of every token to its expert's GPU: 4 copies, half of them to the other node over the
  // NICs (the other 7/16 over NVLink at once, the faster).
  const double copies = tokens * bytes * 4;
  CHECK(comm.all_to_all_s(group, copies) == Approx(copies * 8 / 16 / nic_Bps).epsilon(1e-9));
  CHECK(comm.all_to_all_s(group, copies) > 1.9 * deepep);
}

TEST_CASE("serving validation: a DeepSeek-V3 decode step under data-parallel attention and EP 72 against SGLang's", "[serve][validate]") {
  // Issue 19's 10% is not met: the model's step is 68 ms against 91.9 (-25.7%), its per-rank
  // compute short of SGLang's kernels (the blog finds its own MoE kernels 25% slower than
  // DeepSeek's). A change that moves the row past these bounds, either way, shows here.
  for (const ServeValidationRow& row : load_serve_validation(source_path("scenarios/validation/serving/sglang-deepseek-v3.yaml"))) {
    const ServeValidationResult r = run_serve_validation(row);
    INFO(row.name << ": published " << row.published << " s, predicted " << r.predicted << " s");
    CHECK(r.error < 0);
    CHECK(r.error > -0.30);
  }
}

TEST_CASE("two-batch overlap costs a small decode batch and pays a large one, as SGLang's ablation measured", "[serve]") {
  // LMSYS blog 2025-05-05 (SGLang, DeepSeek-V3 decode on 9 H100 nodes, EP 72), "Impact of Batch Size
  // and Attention Time": TBO changes throughput by -27% at 32 tokens a GPU and +25.5% at 256 (two
  // halves re-read the weights, which a small batch cannot hide; a large one hides its all-to-alls).
  OverlapPair tbo;
  const auto gain = [&](long requests) {
    BatchShape b;
    b.decode_requests = requests;
    b.decode_context_tokens = double(requests) * 2000;
    b.sampled_rows = requests;
    const std::vector<BatchShape> ranks(72, b);
    return tbo.without.time_ranks(ranks).total_s / tbo.with.time_ranks(ranks).total_s - 1;  // throughput ratio - 1
  };
  const double small = gain(32), large = gain(256);
  INFO("TBO at 32 tokens a GPU " << 100 * small << "%, at 256 " << 100 * large << "%");
  CHECK(small == Approx(-0.27).margin(0.10));
  CHECK(large == Approx(0.255).margin(0.10));
}

TEST_CASE("two-batch overlap: a prefilling step's compute beside DeepEP's normal kernels runs on the SMs they leave", "[serve]") {
  // Each half's compute C beside the other half's all-to-alls A: A (1 - 20/132) of C is done when
  // they end, the rest at full speed, so a half takes max(A, C + 20/132 A); a decode step's
  // low-latency kernels hold no SM, so max(A, C). C and A are a half batch's own, without overlap.
  OverlapPair tbo;
  const auto check = [&](const BatchShape& b, const BatchShape& half, double share) {
    const std::vector<BatchShape> ranks(72, b), halves(72, half);
    const IterationTime alone = tbo.without.time_ranks(halves);
    const Seconds a = alone.all_to_all_s, c = alone.total_s - alone.all_to_all_s;
    REQUIRE(a > 0);
    INFO("half's compute " << c << " s, all-to-alls " << a << " s");
    CHECK(tbo.with.time_ranks(ranks).total_s == Approx(2 * std::max(a, c + share * a)).epsilon(1e-12));
  };
  BatchShape prefill, prefill_half;
  prefill.chunks = {{0, 4096}};
  prefill.sampled_rows = 1;
  prefill_half.chunks = {{0, 2048}};
  prefill_half.sampled_rows = 1;
  check(prefill, prefill_half, 20.0 / 132);
  BatchShape decode, decode_half;
  decode.decode_requests = 256;
  decode.decode_context_tokens = 256 * 2000.0;
  decode.sampled_rows = 256;
  decode_half.decode_requests = 128;
  decode_half.decode_context_tokens = 128 * 2000.0;
  decode_half.sampled_rows = 128;
  check(decode, decode_half, 0);
}

namespace {

/// Counts each GPU's decode slices of a serve trace.
struct DecodeSlices : TraceSink {
  std::map<int, int> per_gpu;
  bool wants(int, bool) const override { return true; }
  void event(int gpu, int, const TraceRecord& r) override {
    if (std::string_view(r.name) == "decode") ++per_gpu[gpu];
  }
  void place(int, int, int) override {}
};

}  // namespace

TEST_CASE("disaggregated with data-parallel attention: prompts finishing together spread their KV caches over the decode ranks", "[serve]") {
  // Two Mixtral replicas of 8 ranks on two nodes: prefill on GPUs 0-7, decode on 8-15. Eight
  // prompts land on the eight prefill ranks, finish in one step and leave together; counting the
  // caches already on their way, each decode rank gets one, so every decode rank decodes.
  // A short prompt at 0 starts a step; the eight arrive during it and prefill together in the next.
  std::string rows;
  for (int k = 1; k <= 8; ++k) rows += "0.000" + std::to_string(k) + ",512,4\n";
  const std::string csv = test::temp_file("arrival_s,prompt_tokens,output_tokens\n0,16,1\n" + rows, ".csv");
  const std::string file = test::temp_file("name: dp8-disagg\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                                           "\nmodel: " + source_path("scenarios/models/mixtral-8x7b.yaml") +
                                           "\nserving:\n  disaggregated: {prefill_replicas: 1, decode_replicas: 1}\n"
                                           "  parallel: {tp: 1, dp_attention: 8, ep: 8}\n"
                                           "  requests: {arrival: trace, trace: " + csv + "}\n");
  DecodeSlices slices;
  const ServeResult r = simulate_serving(load_serving(file), &slices);
  for (const RequestState& q : r.requests) CHECK(q.finished());
  for (int gpu = 8; gpu < 16; ++gpu) {
    INFO("decode GPU " << gpu);
    CHECK(slices.per_gpu[gpu] > 0);
  }
}
