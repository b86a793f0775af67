// MoE layers in training iterations: expert FLOPs under uniform routing, expert-parallel all-to-all
// and imbalance in the breakdown, DeepEP against the plain all-to-all, expert state sharded over the
// expert replicas, and the scenario errors of expert parallelism.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include <map>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model_math.hpp"
#include "workloads/moe_routing.hpp"
#include "workloads/plan_iteration.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;
using clustersim::test::temp_file;

namespace {

const std::string kDeepSeek = source_path("scenarios/deepseek-v3-h800-2048.yaml");


/// A Mixtral scenario on the H800 cluster, tp 1, with the parallel block given.
std::string mixtral_scenario(const std::string& parallel, int gpus) {
  return temp_file("name: mixtral-test\ncluster: " + source_path("scenarios/clusters/h800-deepseek.yaml") +
                   "\nmodel: " + source_path("scenarios/models/mixtral-8x7b.yaml") + "\ngpus: " + std::to_string(gpus) +
                   "\nparallel: " + parallel + "\nschedule: 1f1b\nglobal_batch: 96\nmicrobatch: 1\nprecision: bf16\n"
                   "recompute: full\n");
}

}  // namespace

TEST_CASE("with uniform routing an moe layer computes tokens x top-k expert ffns spread evenly over ep") {
  const ModelSpec m = load_model_spec(source_path("scenarios/models/deepseek-v3.yaml"));
  for (int ep : {8, 64}) {
    MoeRoutingSpec spec;
    spec.tokens_per_rank = 4096;
    spec.routed_experts = m.moe->routed_experts;
    spec.top_k = m.moe->top_k;
    spec.ep = ep;
    const MoeLayerTraffic t = route_moe_layer(spec);
    for (double load : t.rank_load) CHECK(load == Approx(4096.0 * 8));  // T k on every rank
    const MoeLayerOps ops = moe_layer_forward_ops(m, 1, 1, false, AttentionKernel::flash, t.rank_load[0]);
    double expert_flops = 0;
    for (const ComputeOp& op : ops.experts) expert_flops += op.flops;
    // tokens x top_k x one expert's FFN (3 h f_e multiply-adds, 2 FLOPs each), per EP rank.
    CHECK(expert_flops == Approx(4096.0 * 8 * 2 * 3 * 7168.0 * 2048));
    CHECK(expert_flops == Approx(4096.0 * 8 * expert_ffn_flops_per_token(m)));
  }
}

TEST_CASE("under sequence parallelism each TP rank dispatches its 1/tp slice, then all-gathers its experts' tokens over TP") {
  // Mixtral 8x7B (no shared experts), tp 2, ep 8 on 16 H800s: Megatron-Core's all-to-all token
  // dispatcher sends the rank's own sequence slice, gathers what its experts received over TP,
  // and reduce-scatters their outputs before the combine; the router reads the slice, so the MoE
  // layer has no gather of its input and no reduction of its output.
  const ModelSpec m = load_model_spec(source_path("scenarios/models/mixtral-8x7b.yaml"));
  const double tokens = double(m.seq_len), token_bytes = 2.0 * m.hidden, k = m.moe->top_k;
  for (bool sp : {true, false}) {
    INFO("sequence parallel " << sp);
    const std::string parallel = std::string("{tp: 2, pp: 1, dp: 8, ep: 8, sequence_parallel: ") + (sp ? "true" : "false") + "}";
    const IterationPlan plan = plan_iteration(load_scenario(mixtral_scenario(parallel, 16)));
    const GroupTraffic* dispatch = nullptr;
    for (const GroupTraffic& g : plan.traffic)
      if (g.label == "moe dispatch") dispatch = &g;
    REQUIRE(dispatch);
    double sent = 0;
    for (double b : dispatch->bytes[0]) sent += b;
    // Uniform routing: each of the rank's tokens goes to k experts, 1/ep of them its own.
    CHECK(sent == Approx(tokens / (sp ? 2 : 1) * k * token_bytes));
    std::map<std::string, Bytes> tp;
    for (const Segment& seg : plan.stages.at(0).forward)
      if (seg.kind == SegmentKind::tp_comm) tp[seg.label] = seg.tp_bytes;
    CHECK(tp.count("attention all-gather") == (sp ? 1u : 0u));
    CHECK(tp.count("mlp all-gather") == 0);
    if (sp) {
      // Its experts received tokens x k rows (uniform routing), gathered whole on each TP rank.
      CHECK(tp.at("moe dispatch all-gather") == static_cast<Bytes>(tokens * k * token_bytes));
      CHECK(tp.at("moe combine reduce-scatter") == static_cast<Bytes>(tokens * k * token_bytes));
      CHECK(tp.count("moe output reduce-scatter") == 0);
    } else {
      // Without SP every TP rank holds the whole microbatch and dispatches it (Megatron refuses
      // MoE with TP but no SP; the model keeps the replicated layer): the output is all-reduced.
      CHECK(tp.count("moe dispatch all-gather") == 0);
      CHECK(tp.at("moe output all-reduce") == static_cast<Bytes>(tokens * token_bytes));
    }
  }
}

TEST_CASE("zero-1 shards dense optimizer state over dp and expert state over the dp / ep replicas") {
  const ModelSpec m = load_model_spec(source_path("scenarios/models/deepseek-v3.yaml"));
  StageLoad load;
  load.params_on_rank = 1e9;
  load.expert_params_on_rank = 3e9;
  load.data_parallel = 128;
  load.expert_data_parallel = 2;  // dp 128 / ep 64
  load.distributed_optimizer = true;
  const StageMemory mem = stage_memory(m, {1, 1, false, Recompute::full}, load);
  CHECK(mem.weights == Approx(2.0 * 4e9));
  CHECK(mem.gradients == Approx(4.0 * 4e9));
  CHECK(mem.optimizer == Approx(12.0 * (1e9 / 128 + 3e9 / 2)));
}

TEST_CASE("deepseek-v3 on 2048 h800s shows expert all-to-all time and imbalance only when routing is skewed") {
  const nlohmann::json uniform = test::cli_json("run --fold assume " + kDeepSeek);
  const nlohmann::json skewed = test::cli_json("run --fold assume " + kDeepSeek + " --set moe.routing=skewed --set moe.hot_factor=3");
  const auto& mid_u = uniform["stages"][4]["time_s"];
  const auto& mid_s = skewed["stages"][4]["time_s"];
  CHECK(mid_u["ep_exposed"].get<double>() > 0);
  CHECK(mid_u["expert_imbalance"].get<double>() == 0);
  CHECK(mid_s["expert_imbalance"].get<double>() > 0);
  CHECK(skewed["iteration_s"].get<double>() > uniform["iteration_s"].get<double>());
  // The breakdown still adds up to the iteration.
  double sum = 0;
  for (const auto& [name, seconds] : mid_s.items()) sum += seconds.get<double>();
  CHECK(sum == Approx(skewed["iteration_s"].get<double>()).epsilon(1e-6));
}

TEST_CASE("deepep dispatch exposes less all-to-all time than the plain all-to-all on deepseek-v3") {
  const nlohmann::json deepep = test::cli_json("run --fold assume " + kDeepSeek);
  const nlohmann::json plain = test::cli_json("run --fold assume " + kDeepSeek + " --set moe.dispatch=all_to_all");
  CHECK(deepep["stages"][4]["time_s"]["ep_exposed"].get<double>() <
        plain["stages"][4]["time_s"]["ep_exposed"].get<double>());
  CHECK(deepep["iteration_s"].get<double>() < plain["iteration_s"].get<double>());
}

TEST_CASE("seeded random routing gives the same iteration every time and another seed another") {
  const std::string args = "run --fold assume " + kDeepSeek + " --set moe.routing=random --set moe.hot_factor=2";
  const auto a = run_cli(args + " --set moe.seed=1"), b = run_cli(args + " --set moe.seed=1"),
             c = run_cli(args + " --set moe.seed=2");
  REQUIRE(a.exit_code == 0);
  CHECK(a.stdout_text == b.stdout_text);
  CHECK(a.stdout_text != c.stdout_text);
}

TEST_CASE("ep not dividing the expert count is an error at parallel.ep") {
  // 8 experts; dp 12 takes ep 3, which cannot split them.
  const std::string file = mixtral_scenario("{tp: 1, pp: 8, dp: 12, ep: 3}", 96);
  const auto r = run_cli("run --fold assume " + file);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(file + ":") && Catch::Contains(": parallel.ep: expected a divisor of the 8 routed experts"));
}

TEST_CASE("ep not dividing dp is an error at parallel.ep") {
  const std::string file = mixtral_scenario("{tp: 1, pp: 8, dp: 12, ep: 8}", 96);
  const auto r = run_cli("run --fold assume " + file);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel.ep: expected ep to divide dp (12)"));
}

TEST_CASE("node-limited routing to more nodes than ep spans is an error at parallel.ep") {
  // DeepSeek-V3 routes a token to at most 4 nodes; ep 8 with tp 1 is one node of 8 GPUs.
  const auto r = run_cli("run --fold assume " + kDeepSeek + " --set parallel.ep=8");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel.ep: expected the 8 expert-parallel ranks to span at least the 4 nodes"));
}

TEST_CASE("expert parallelism on a dense model and a moe block for it are errors") {
  const std::string dense = source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  const auto ep = run_cli("run --fold assume " + dense + " --set parallel.ep=2");
  CHECK(ep.exit_code == 2);
  CHECK_THAT(ep.stderr_text, Catch::Contains(": parallel.ep: expected 1: gpt3-175b"));
  const auto block = run_cli("run --fold assume " + dense + " --set moe.routing=skewed");
  CHECK(block.exit_code == 2);
  CHECK_THAT(block.stderr_text, Catch::Contains(": moe: expected no moe block: gpt3-175b"));
}

TEST_CASE("a stage_layers list that does not add up to the layers is an error at it") {
  const std::string file = mixtral_scenario("{tp: 1, pp: 8, dp: 12, ep: 4, stage_layers: [4, 4, 4, 4, 4, 4, 4, 3]}", 96);
  const auto r = run_cli("run --fold assume " + file);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel.stage_layers: expected 8 layer counts") &&
                                Catch::Contains("adding up to the 32 layers of mixtral-8x7b; got 8 adding up to 31"));
  // Memory is not the point here (32K-token sequences): --allow-oom.
  CHECK(run_cli("run --fold assume " + mixtral_scenario("{tp: 1, pp: 8, dp: 12, ep: 4, stage_layers: [3, 4, 4, 4, 4, 4, 4, 5]}", 96) +
                " --allow-oom")
            .exit_code == 0);
}

TEST_CASE("a capacity factor caps the busiest experts and with it the imbalance") {
  // Skewed routing: expert 0 gets 3x the mean. Capacity 1.0 drops what exceeds an expert's share.
  const std::string capped = temp_file(test::shipped_with("scenarios/models/deepseek-v3.yaml", "dropless: true", "capacity_factor: 1.0"));
  const std::string skew = " --set moe.routing=skewed --set moe.hot_factor=3";
  const nlohmann::json dropless = test::cli_json("run --fold assume " + kDeepSeek + skew);
  const nlohmann::json dropping = test::cli_json("run --fold assume " + kDeepSeek + skew + " --set model=" + capped);
  const auto imbalance = [](const nlohmann::json& j) { return j["stages"][4]["time_s"]["expert_imbalance"].get<double>(); };
  CHECK(imbalance(dropless) > 0);
  CHECK(imbalance(dropping) < imbalance(dropless));
}
