// ZeRO stages and FSDP: the sharding formulas (Rajbhandari et al. 2020, section 5: 2 + 2 + K bytes
// per parameter with mixed precision, here Megatron's 2 + 4 + 12), ZeRO-3's gathered buffers, the
// per-layer collectives in a real run, and the scenario errors.
// Runs pass --fold assume: what they test is not the fold (whole-cluster replay has its own tests),
// and replaying every GPU of these jobs, run's default, would cost the suite minutes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "workloads/memory_model.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;

namespace {

const std::string kLlama = source_path("scenarios/llama3-70b-h100-1024.yaml");


}  // namespace

TEST_CASE("each zero stage shards one more kind of state over the data-parallel ranks") {
  const double p = 1e9, d = 32;
  const StateBytes z0 = zero_state_bytes(p, 32, 0), z1 = zero_state_bytes(p, 32, 1), z2 = zero_state_bytes(p, 32, 2),
                   z3 = zero_state_bytes(p, 32, 3);
  CHECK(z0.total() == Approx(18 * p));
  CHECK(z1.total() == Approx((2 + 4 + 12 / d) * p));
  CHECK(z2.total() == Approx((2 + 4 / d + 12 / d) * p));
  CHECK(z3.total() == Approx(18 / d * p));
  CHECK(z1.total() == state_bytes(p, 32, true).total());
}

TEST_CASE("zero-3 memory is the shards plus the gathered layers, and without resharding the whole stage") {
  const ModelSpec m = load_model_spec(source_path("scenarios/models/llama3-70b.yaml"));
  StageLoad load;
  load.params_on_rank = 2.2e9;
  load.data_parallel = 32;
  load.zero_stage = 3;
  load.gathered_params = 2 * 2.2e9 / 20;  // two of 20 layers: the one in use and the one prefetched
  const StageMemory resharded = stage_memory(m, {1, 8, true, Recompute::selective}, load);
  CHECK(resharded.weights == Approx(2 * 2.2e9 / 32 + 2 * 2 * 2.2e9 / 20));
  CHECK(resharded.gradients == Approx(4 * 2.2e9 / 32));
  CHECK(resharded.optimizer == Approx(12 * 2.2e9 / 32));
  load.zero_stage = 1;
  load.gathered_params = 0;
  const StageMemory zero1 = stage_memory(m, {1, 8, true, Recompute::selective}, load);
  CHECK(zero1.weights + zero1.gradients + zero1.optimizer == Approx((2 + 4 + 12.0 / 32) * 2.2e9));
  CHECK(zero1.activations == resharded.activations);
}

TEST_CASE("on llama 3 70b zero-3 saves memory and pays in per-layer collectives") {
  const nlohmann::json z1 = test::cli_json("run --fold assume " + kLlama), z2 = test::cli_json("run --fold assume " + kLlama + " --set parallel.zero_stage=2"),
                       z3 = test::cli_json("run --fold assume " + kLlama + " --set parallel.zero_stage=3"),
                       kept = test::cli_json("run --fold assume " + kLlama + " --set parallel.zero_stage=3 --set parallel.reshard_after_forward=false");
  const auto mem = [](const nlohmann::json& j, const char* what) { return j["stages"][0]["memory_bytes"][what].get<double>(); };
  CHECK(mem(z2, "gradients") == Approx(mem(z1, "gradients") / 32).epsilon(1e-6));
  CHECK(mem(z3, "weights") < mem(z1, "weights") / 4);
  CHECK(mem(kept, "weights") > mem(z1, "weights"));  // every layer gathered, plus the shards
  CHECK(mem(z3, "total") < mem(z2, "total"));
  CHECK(mem(z2, "total") < mem(z1, "total"));
  // Gradients reduce-scattered every microbatch, parameters gathered every layer: more DP time.
  const auto dp = [](const nlohmann::json& j) { return j["stages"][0]["time_s"]["dp_exposed"].get<double>(); };
  CHECK(dp(z2) > dp(z1));
  CHECK(dp(z3) >= dp(z2));
  CHECK(z3["iteration_s"].get<double>() > z1["iteration_s"].get<double>());
}

TEST_CASE("zero stage errors name the field") {
  const auto four = run_cli("run --fold assume " + kLlama + " --set parallel.zero_stage=4");
  CHECK(four.exit_code == 2);
  CHECK_THAT(four.stderr_text, Catch::Contains(": parallel.zero_stage: expected a ZeRO stage, 0 to 3"));
  const auto conflict = run_cli("run --fold assume " + kLlama + " --set parallel.zero_stage=0");
  CHECK(conflict.exit_code == 2);
  CHECK_THAT(conflict.stderr_text, Catch::Contains(": parallel.zero_stage: expected a stage that agrees with distributed_optimizer: true"));
  const auto reshard = run_cli("run --fold assume " + kLlama + " --set parallel.reshard_after_forward=false");
  CHECK(reshard.exit_code == 2);
  CHECK_THAT(reshard.stderr_text, Catch::Contains(": parallel.reshard_after_forward: expected only with zero_stage 3"));
  const auto serial = run_cli("run --fold assume " + kLlama + " --set parallel.zero_stage=2 --set parallel.overlap_grad_reduce=false");
  CHECK(serial.exit_code == 2);
  CHECK_THAT(serial.stderr_text, Catch::Contains(": parallel.overlap_grad_reduce: expected true with zero_stage 2"));
}
