// Context parallelism: each rank computes 1/cp of every sequence; ring attention hides its K/V
// transfers under the attention compute of each step (closed form), all-gather CP blocks on a
// collective; activations shrink by cp; and the scenario errors.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "collectives/point_to_point.hpp"
#include "simulator/iteration.hpp"
#include "support.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/plan_iteration.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;

namespace {

const std::string kLlama = source_path("scenarios/llama3-405b-h100-16k-cp16.yaml");
// The scenario's split with 2 chunks a rank instead of 8 (4 layers a chunk, 3 on the first and the
// last): a quarter of the passes to replay, and nothing these tests compare depends on it.
const std::string kLlamaRun = kLlama + " --set parallel.virtual_stages=2";


double flops_of(const std::vector<ComputeOp>& ops, ComputeKind kind) {
  double f = 0;
  for (const ComputeOp& op : ops) f += op.kind == kind ? op.flops : 0;
  return f;
}

}  // namespace

TEST_CASE("ring attention exposes nothing when block compute exceeds the block transfer and the difference otherwise") {
  const Cluster cluster = load_cluster(source_path("scenarios/clusters/dgx-h100-superpod.yaml"));
  const Router router(cluster);
  FabricEngine engine(cluster);
  // A ring of 4 context-parallel GPUs on 4 nodes, each passing a 64 MiB K/V block to the next.
  GroupTraffic ring;
  ring.gpus = {0, 8, 16, 24};
  ring.bytes.assign(4, std::vector<double>(4, 0));
  for (int i = 0; i < 4; ++i) ring.bytes[i][(i + 1) % 4] = 64.0 * (1 << 20);
  const Seconds step = makespan(engine.run(lower_all_to_all_v(router, ring.gpus, ring.bytes, *find_protocol("Simple"), false)));
  REQUIRE(step > 0);
  for (double compute_over_transfer : {0.5, 0.99, 1.0, 2.0}) {
    const Seconds hidden = compute_over_transfer * step;
    IterationPlan plan;
    plan.schedule = find_schedule("1f1b");
    plan.shape = ScheduleShape{1, 1, 1, 0};
    StagePlan sp;
    Segment exchange;
    exchange.kind = SegmentKind::cp_comm;
    exchange.traffic = 0;
    exchange.repeat = 3;  // cp - 1 steps
    exchange.hidden_s = hidden;
    sp.forward = {{SegmentKind::compute, "attention", 4 * hidden}, exchange};
    sp.backward_input = {{SegmentKind::compute, "bwd", 1e-3}};
    plan.stages = {sp};
    plan.rank_gpu = {0};
    plan.tp_group = {{0}};
    plan.dp_group = {{0}};
    plan.cp_group = {ring.gpus};
    plan.traffic = {ring};
    const IterationResult r = simulate_iteration(engine, router, plan);
    INFO("compute / transfer = " << compute_over_transfer);
    // (cp - 1) max(0, transfer - compute) per step.
    CHECK(r.ranks[0].cp_s == Approx(3 * std::max(0.0, step - hidden)).margin(1e-15));
    CHECK(r.iteration_s == Approx(4 * hidden + 1e-3 + 3 * std::max(0.0, step - hidden)).epsilon(1e-12));
  }
}

TEST_CASE("context parallelism gives each rank 1/cp of a layer's gemm and attention work") {
  const ModelSpec m = load_model_spec(source_path("scenarios/models/llama3-405b-128k.yaml"));
  const auto whole = layer_forward_ops(m, 1, 8, true, AttentionKernel::flash, 1);
  const auto split = layer_forward_ops(m, 1, 8, true, AttentionKernel::flash, 16);
  CHECK(flops_of(split, ComputeKind::gemm) == Approx(flops_of(whole, ComputeKind::gemm) / 16));
  // Balanced causal sharding: the local queries against the whole sequence, 1/cp of the square.
  CHECK(flops_of(split, ComputeKind::attention) == Approx(flops_of(whole, ComputeKind::attention) / 16));
}

TEST_CASE("llama 3 405b at 131k tokens with cp 16: ring attention hides its transfers and all-gather cp does not") {
  const nlohmann::json gather = test::cli_json("run --fold assume " + kLlamaRun);
  const nlohmann::json ring = test::cli_json("run --fold assume " + kLlamaRun + " --set parallel.cp_comm=p2p");
  const auto& g = gather["stages"][4]["time_s"];
  const auto& r = ring["stages"][4]["time_s"];
  CHECK(g["cp_exposed"].get<double>() > 0);
  // At 131K tokens a step's attention (8K local queries against 8K keys) outlasts its K/V block.
  CHECK(r["cp_exposed"].get<double>() == 0);
  CHECK(ring["iteration_s"].get<double>() < gather["iteration_s"].get<double>());
}

TEST_CASE("context parallelism divides each rank's activations by cp") {
  // cp 16 against cp 8 on half the GPUs: the same microbatches, twice the tokens per rank.
  const nlohmann::json cp16 = test::cli_json("run --fold assume " + kLlamaRun);
  const nlohmann::json cp8 = test::cli_json("run --fold assume " + kLlamaRun + " --set gpus=8192 --set parallel.cp=8");
  for (int stage : {0, 7, 15}) {
    INFO("stage " << stage);
    CHECK(cp8["stages"][stage]["memory_bytes"]["activations"].get<double>() ==
          Approx(2 * cp16["stages"][stage]["memory_bytes"]["activations"].get<double>()).epsilon(1e-6));
  }
}

TEST_CASE("cp that does not cut the sequence into 2 x cp chunks is an error at parallel.cp") {
  const std::string dense = source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  // 2048 tokens, cp 3 (tp 8 x cp 3 x pp 16 x dp 1 = 384 GPUs).
  const auto r = run_cli("run --fold assume " + dense + " --set gpus=384 --set parallel.cp=3 --set parallel.dp=1 --set global_batch=64");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel.cp: expected 2 x cp (6) to divide the sequence length 2048"));
}

TEST_CASE("tp x cp x pp x dp must equal the gpus") {
  // dp given as well: nothing is derived (with cp alone, dp would be derived as 16384 / (8 x 8 x 16)).
  const auto r = run_cli("run --fold assume " + kLlama + " --set parallel.cp=8 --set parallel.dp=8");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel: expected tp x cp x pp x dp to equal gpus (16384), got 8 x 8 x 16 x 8 = 8192"));
}

TEST_CASE("selective recompute turns the attention ring once more: one more exchange per layer in backward") {
  auto ring_exchanges = [](const std::string& recompute) {
    const ScenarioSpec s = load_scenario(kLlama, {"parallel.cp_comm=p2p", "recompute=" + recompute});
    const IterationPlan plan = plan_iteration(s);
    int count = 0;
    for (const Segment& seg : plan.stages[1].backward_input) count += seg.kind == SegmentKind::cp_comm;
    return std::pair(count, s.stage_layers[1]);
  };
  const auto [none, layers] = ring_exchanges("none");
  CHECK(none == layers);  // the backward's own ring
  CHECK(ring_exchanges("selective").first == 2 * layers);
}

TEST_CASE("under context parallelism the output layer and its loss see 1/cp of each sequence") {
  // Llama 3 405B at 131,072 tokens, tp 8, cp 16: each rank holds 8192 tokens of every sequence.
  const ScenarioSpec s = load_scenario(kLlama);
  REQUIRE(s.layout.cp == 16);
  REQUIRE(s.layout.tp == 8);
  const double tokens = 131072.0 / 16, vocab_per_gpu = 128256.0 / 8, hidden = 16384;
  const ComputeOp logits = logits_forward_op(s.model, 1, 8, 16);
  CHECK(logits.flops == Approx(2 * tokens * vocab_per_gpu * hidden).epsilon(1e-12));
  CHECK(logits.flops == Approx(logits_forward_op(s.model, 1, 8).flops / 16).epsilon(1e-12));
  const CrossEntropyOps ce = cross_entropy_ops(s.model, 1, 8, 16);
  CHECK(ce.forward.hbm_bytes == Bytes(38 * tokens * vocab_per_gpu));
  CHECK(ce.backward.hbm_bytes == Bytes(14 * tokens * vocab_per_gpu));
  CHECK(ce.forward.hbm_bytes * 16 == cross_entropy_ops(s.model, 1, 8).forward.hbm_bytes);

  // The plan's last stage times them on the rank's tokens: the logit GEMM at the catalog's GEMM
  // efficiency for its FLOPs, the cross-entropy at the HBM roofline (it is memory-bound).
  const GpuModel& gpu = s.gpu;
  REQUIRE(gpu.gemm_efficiency);
  REQUIRE(gpu.hbm_efficiency);
  const double in_training = gpu.in_training_efficiency ? gpu.in_training_efficiency->fraction : 1.0;
  const double gemm_flops = 2 * tokens * vocab_per_gpu * hidden;
  const Seconds logits_s = gemm_flops / (*gpu.peak_flops("bf16") * gpu.gemm_efficiency->fraction_of_peak(gemm_flops)) / in_training;
  const Seconds ce_s = 38 * tokens * vocab_per_gpu / (gpu.hbm_bandwidth_Bps * gpu.hbm_efficiency->fraction) / in_training;
  const IterationPlan plan = plan_iteration(s);
  int head_steps = 0;
  for (const Segment& seg : plan.stages.back().forward) {
    if (seg.label == "logits") CHECK(seg.duration_s == Approx(logits_s).epsilon(1e-9));
    if (seg.label == "cross-entropy") CHECK(seg.duration_s == Approx(ce_s).epsilon(1e-9));
    // Its TP collectives move the rank's tokens too: the gathered input, one float per token.
    if (seg.label == "output all-gather") CHECK(seg.tp_bytes == Bytes(tokens * hidden * 2));
    if (seg.label == "cross-entropy max all-reduce") CHECK(seg.tp_bytes == Bytes(tokens * 4));
    head_steps += seg.label == "logits" || seg.label == "cross-entropy" || seg.label == "output all-gather" ||
                  seg.label == "cross-entropy max all-reduce";
  }
  CHECK(head_steps == 4);
}
