// Uneven pipeline stages: a stage may hold only the embedding or only the output layer and loss
// (Llama 3 405B's pipeline, Megatron-Core's options), its times and memory are those parts' closed
// forms, a balanced split shortens the pipeline by what the schedule's closed form says, and every
// impossible split is one error line at its field.
#include <catch2/catch.hpp>

#include <algorithm>

#include "simulator/iteration.hpp"
#include "simulator/training_run.hpp"
#include "support.hpp"
#include "workloads/plan_iteration.hpp"

using namespace clustersim;
using test::run_cli;
using test::source_path;

namespace {

/// Llama 3 8B (32 layers, vocabulary 128,256, hidden 4096, untied) on one DGX H100, global batch 8
/// of one 8192-token sequence per microbatch: tp 2, pp 4, dp 1 unless `layout` says otherwise;
/// `parallel` lines are appended to the layout.
std::string llama8b(const std::string& parallel, const std::string& schedule = "1f1b",
                    const std::string& layout = "  tp: 2\n  pp: 4\n  dp: 1\n", int gpus = 8) {
  return test::temp_file("name: split-test\ncluster: " + source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                         "\nmodel: " + source_path("scenarios/models/llama3-8b.yaml") +
                         "\ngpus: " + std::to_string(gpus) + "\nparallel:\n" + layout + "  sequence_parallel: true\n" + parallel +
                         "schedule: " + schedule + "\nglobal_batch: 8\nmicrobatch: 1\nprecision: bf16\nrecompute: none\n");
}

Seconds compute_of(const std::vector<Segment>& segments) {
  Seconds t = 0;
  for (const Segment& seg : segments) t += seg.kind == SegmentKind::compute ? seg.duration_s : 0;
  return t;
}

std::vector<std::string> labels(const std::vector<Segment>& segments) {
  std::vector<std::string> out;
  for (const Segment& seg : segments) out.push_back(seg.label);
  return out;
}

/// The one error line of `run` on a scenario: exit 2, "file:line: parallel.<field>: ...".
void expect_split_error(const std::string& file, const std::string& field, const std::string& expected) {
  const test::CliResult r = run_cli("run " + file);
  INFO("stderr: " << r.stderr_text);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
  const int line = test::line_of(test::read_file(file), "  " + field + ":");
  CHECK_THAT(r.stderr_text, Catch::Contains(file + ":" + std::to_string(line) + ": parallel." + field + ": " + expected));
}

}  // namespace

TEST_CASE("an embedding-only first stage and a head-only last stage run exactly their parts") {
  const ScenarioSpec s = load_scenario(llama8b("  stage_layers: [0, 16, 16, 0]\n"));
  const IterationPlan plan = plan_iteration(s);
  REQUIRE(plan.stages.size() == 4);
  // The embedding is a lookup (no compute step); under tp its partial outputs are reduce-scattered.
  CHECK(labels(plan.stages[0].forward) == std::vector<std::string>{"embedding reduce-scatter"});
  CHECK(plan.stages[0].backward_input.empty());
  CHECK(plan.stages[0].backward_weight.empty());
  // The head: gather the input, the logit GEMM (2 s V h / t FLOPs), the cross-entropy and its three
  // all-reduces; backward the cross-entropy's, the logits' input gradient and its reduce-scatter,
  // the weight gradient apart.
  const StagePlan& head = plan.stages[3];
  const ComputeOp logits = logits_forward_op(s.model, 1, 2);
  CHECK(logits.flops == Approx(2.0 * 8192 * (128256 / 2) * 4096).epsilon(1e-12));
  const CrossEntropyOps ce = cross_entropy_ops(s.model, 1, 2);
  const std::vector<ComputeOp> logits_bwd = backward_ops({logits});
  auto t = [&](const ComputeOp& op) { return op_time(s.gpu, s.precision, op); };
  CHECK(labels(head.forward) == std::vector<std::string>{"output all-gather", "logits", "cross-entropy",
                                                           "cross-entropy max all-reduce",
                                                           "cross-entropy target logit all-reduce",
                                                           "cross-entropy sum all-reduce"});
  CHECK(compute_of(head.forward) == Approx(t(logits) + t(ce.forward)).epsilon(1e-12));
  CHECK(compute_of(head.backward_input) == Approx(t(ce.backward) + t(logits_bwd[0])).epsilon(1e-12));
  CHECK(compute_of(head.backward_weight) == Approx(t(logits_bwd[1])).epsilon(1e-12));
  CHECK(logits_bwd[1].pass == OpPass::backward_weight);
}

TEST_CASE("the memory of an embedding-only and a head-only stage is their closed forms") {
  const ScenarioSpec s = load_scenario(llama8b("  stage_layers: [0, 16, 16, 0]\n"));
  const RunReport r = run_training(s, true);
  // Each holds the vocabulary-parallel table V h / t (untied: the head has its own), 2 + 4 + 12 B
  // per parameter (no distributed optimizer). Activations per microbatch: the first stage keeps the
  // embedding's dropout mask (s h / t bytes under SP), the last the final norm's and output layer's
  // inputs (4 s h / t) and the fp32 logits (4 s V / t); 1F1B holds p = 4 microbatches on rank 0 and
  // 1 on rank 3. No layer, so no recompute workspace.
  const double params = 128256.0 * 4096 / 2, sh_t = 8192.0 * 4096 / 2;
  for (int stage : {0, 3}) {
    const StageMemory& m = r.stages[static_cast<std::size_t>(stage)].memory;
    INFO("stage " << stage);
    CHECK(m.weights == Bytes(2 * params));
    CHECK(m.gradients == Bytes(4 * params));
    CHECK(m.optimizer == Bytes(12 * params));
    CHECK(m.recompute_workspace == 0);
  }
  CHECK(r.stages[0].memory.activations == Bytes(4 * sh_t));
  CHECK(r.stages[3].memory.activations == Bytes(4 * sh_t + 4 * 8192.0 * 128256 / 2));
}

TEST_CASE("Megatron-Core's options place the layers as its get_num_layers_to_build does") {
  // decoder_first/last: the named ranks hold their counts, the rest share the remainder evenly; with
  // virtual stages each rank's count is split over its chunks (rank r holds stages r, r + p, ...).
  CHECK(load_scenario(llama8b("  decoder_last_pipeline_num_layers: 5\n")).stage_layers == std::vector<int>{9, 9, 9, 5});
  CHECK(load_scenario(llama8b("  decoder_first_pipeline_num_layers: 0\n  decoder_last_pipeline_num_layers: 2\n"))
            .stage_layers == std::vector<int>{0, 15, 15, 2});
  CHECK(load_scenario(llama8b("  virtual_stages: 2\n  decoder_first_pipeline_num_layers: 6\n"
                              "  decoder_last_pipeline_num_layers: 2\n",
                              "interleaved"))
            .stage_layers == std::vector<int>{3, 6, 6, 1, 3, 6, 6, 1});
  // account_for_*: the embedding and the loss count as layers of an even split over the model
  // stages, and the first and last build one transformer layer fewer. (32 + 2) over pp 2 x 17
  // chunks is one a chunk: the first chunk holds only the embedding, the last only the head, as
  // Llama 3 405B's pipeline did.
  std::vector<int> one_each(34, 1);
  one_each.front() = one_each.back() = 0;
  CHECK(load_scenario(llama8b("  virtual_stages: 17\n  account_for_embedding_in_pipeline_split: true\n"
                              "  account_for_loss_in_pipeline_split: true\n",
                              "interleaved", "  tp: 2\n  pp: 2\n  dp: 2\n"))
            .stage_layers == one_each);
  CHECK(load_scenario(llama8b("  account_for_loss_in_pipeline_split: true\n", "1f1b", "  tp: 1\n  pp: 3\n  dp: 2\n", 6))
            .stage_layers == std::vector<int>{11, 11, 10});
}

TEST_CASE("a balanced split shortens the pipeline by what the schedule's closed form says") {
  // GPipe with free communication is a flow shop of identical microbatches: stage k's forward F_k
  // and backward B_k give Sum_k (F_k + B_k) + (m - 1)(max_k F_k + max_k B_k). Llama 3 8B's head is
  // about 2.4 layers of work (V h against 13 h^2 weights a layer), so 8 layers a stage leave the
  // last stage the slowest; 5 there and 9 on the others balance it.
  const Cluster& cluster = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const Router router(cluster);
  FabricEngine engine(cluster);
  auto run = [&](const std::string& split) {
    const ScenarioSpec s = load_scenario(llama8b(split, "gpipe"));
    IterationPlan plan = plan_iteration(s);
    plan.free_communication = true;
    plan.optimizer_s = 0;
    double sum = 0, max_f = 0, max_b = 0;
    for (const StagePlan& st : plan.stages) {
      const double f = compute_of(st.forward), b = compute_of(st.backward_input) + compute_of(st.backward_weight);
      sum += f + b;
      max_f = std::max(max_f, f);
      max_b = std::max(max_b, b);
    }
    const int m = s.microbatches();
    const IterationResult r = simulate_iteration(engine, router, plan);
    INFO(split);
    CHECK(r.iteration_s == Approx(sum + (m - 1) * (max_f + max_b)).epsilon(1e-9));
    return r.iteration_s;
  };
  const Seconds even = run(""), balanced = run("  decoder_last_pipeline_num_layers: 5\n");
  CHECK(balanced < 0.95 * even);
}

TEST_CASE("a listed split may leave only the first and the last stage without layers") {
  expect_split_error(llama8b("  stage_layers: [16, 0, 16, 0]\n"), "stage_layers",
                     "expected a transformer layer on model stage 1 of [16, 0, 16, 0]: only the first stage");
  const std::string negative = llama8b("  stage_layers: [17, -1, 16, 0]\n");
  const test::CliResult r = run_cli("run " + negative);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(negative + ":" + std::to_string(test::line_of(test::read_file(negative), "  stage_layers:")) +
                                            ": parallel.stage_layers[1]: expected an integer from 0 to 32, got '-1'"));
}

TEST_CASE("stage_layers and Megatron-Core's split options are one or the other") {
  expect_split_error(llama8b("  stage_layers: [8, 8, 8, 8]\n  decoder_first_pipeline_num_layers: 8\n"),
                     "decoder_first_pipeline_num_layers", "expected no decoder_first_pipeline_num_layers with stage_layers");
}

TEST_CASE("an uneven first or last stage is not combined with the embedding or loss counted as a layer") {
  expect_split_error(llama8b("  decoder_last_pipeline_num_layers: 5\n  account_for_loss_in_pipeline_split: true\n"),
                     "account_for_loss_in_pipeline_split",
                     "expected false with parallel.decoder_last_pipeline_num_layers: Megatron-Core does not combine");
}

TEST_CASE("first and last stage counts that the other ranks cannot share evenly are errors") {
  expect_split_error(llama8b("  decoder_first_pipeline_num_layers: 6\n"), "decoder_first_pipeline_num_layers",
                     "expected the 26 layers left to divide evenly over the 3 other pipeline ranks");
  expect_split_error(llama8b("  decoder_first_pipeline_num_layers: 20\n  decoder_last_pipeline_num_layers: 20\n"),
                     "decoder_first_pipeline_num_layers",
                     "expected the first and last stage counts to add up to at most the 32 layers of llama3-8b");
  expect_split_error(llama8b("  decoder_last_pipeline_num_layers: 33\n"), "decoder_last_pipeline_num_layers",
                     "expected a layer count from 0 to the 32 layers of llama3-8b");
  // Nothing left for the middle ranks: they would hold no layer, neither embedding nor head.
  expect_split_error(llama8b("  decoder_first_pipeline_num_layers: 16\n  decoder_last_pipeline_num_layers: 16\n"),
                     "decoder_first_pipeline_num_layers", "expected a transformer layer on model stage 1 of [16, 0, 0, 16]");
  expect_split_error(llama8b("  decoder_first_pipeline_num_layers: 10\n  decoder_last_pipeline_num_layers: 10\n", "1f1b",
                             "  tp: 2\n  pp: 2\n  dp: 2\n"),
                     "decoder_first_pipeline_num_layers",
                     "expected the first and last stage counts to add up to the 32 layers of llama3-8b with pp 2; they leave 12");
}

TEST_CASE("a rank's count must divide over its virtual stages, and an empty chunk must be an end") {
  expect_split_error(llama8b("  virtual_stages: 2\n  decoder_first_pipeline_num_layers: 5\n", "interleaved"),
                     "decoder_first_pipeline_num_layers", "expected the 5 layers of pipeline rank 0 to divide evenly over its 2 virtual stages");
  // Rank 0's second chunk (model stage 4) would hold nothing between layers.
  expect_split_error(llama8b("  virtual_stages: 2\n  decoder_first_pipeline_num_layers: 0\n  decoder_last_pipeline_num_layers: 4\n",
                             "interleaved"),
                     "decoder_first_pipeline_num_layers", "expected a transformer layer on model stage 4 of [0, 7, 7, 2, 0, 7, 7, 2]");
}

TEST_CASE("Megatron-Core's first and last stage counts need its own layout and two ranks") {
  expect_split_error(llama8b("  decoder_last_pipeline_num_layers: 4\n", "zb-v"), "decoder_last_pipeline_num_layers",
                     "expected stage_layers with zb-v: Megatron-Core's first and last stage counts are per rank of its own layout");
  expect_split_error(llama8b("  decoder_last_pipeline_num_layers: 4\n", "1f1b", "  tp: 2\n  pp: 1\n  dp: 4\n"),
                     "decoder_last_pipeline_num_layers", "expected pp of 2 or more");
}

TEST_CASE("the embedding and loss counted as layers must divide over the model stages") {
  expect_split_error(llama8b("  account_for_embedding_in_pipeline_split: true\n"), "account_for_embedding_in_pipeline_split",
                     "expected the 4 model stages of 1f1b to divide the 32 layers of llama3-8b plus the embedding and loss "
                     "counted as layers (33)");
}

TEST_CASE("the shipped Llama 3 405B scenario splits its 126 layers as Meta's paper describes") {
  // Llama Team 2024, The Llama 3 Herd of Models, section 3.3.2: the first and the last stage each
  // hold one layer fewer than 128 / 16, leaving the first model chunk only the embedding and the
  // last only the output layer and loss; with one layer a chunk that is 16 ranks x 8 chunks.
  const ScenarioSpec s = load_scenario(source_path("scenarios/llama3-405b-h100-16k-cp16.yaml"));
  REQUIRE(s.model.layers == 126);
  REQUIRE(s.stage_layers.size() == 128);
  for (std::size_t k = 0; k < s.stage_layers.size(); ++k) {
    INFO("model stage " << k);
    CHECK(s.stage_layers[k] == (k == 0 || k == 127 ? 0 : 1));
  }
}
