// A vision encoder on the first pipeline stage: its parameters, its cost on stage 0 only, its
// memory, and the scenario errors it brings.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "workloads/model_math.hpp"

using namespace clustersim;
using clustersim::test::run_cli;
using clustersim::test::source_path;
using clustersim::test::temp_file;

namespace {

const std::string kVlm = source_path("scenarios/vlm-llava-llama3-70b-h100-1024.yaml");


}  // namespace

TEST_CASE("the encoder adds its layers and its projection to the parameter count") {
  const ModelSpec vlm = load_model_spec(source_path("scenarios/models/llava-llama3-70b.yaml"));
  const ModelSpec text = load_model_spec(source_path("scenarios/models/llama3-70b.yaml"));
  // A GPT-family layer of width h and FFN f: QKV and projection 4h^2 + 4h, FFN 2hf + f + h, two
  // LayerNorms 4h; CLIP ViT-L/14 has h = 1024, f = 4096, 24 layers (about 303M); projection 1024 x 8192.
  const double h = 1024, f = 4096;
  const double layer = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
  CHECK(parameter_count(vlm) - parameter_count(text) == Approx(24 * layer + h * 8192));
  CHECK(24 * layer == Approx(302e6).epsilon(0.01));
}

TEST_CASE("the encoder runs on the first stage only") {
  const nlohmann::json vlm = test::cli_json("run " + kVlm), text = test::cli_json("run " + kVlm + " --set model=models/llama3-70b.yaml");
  const auto compute = [](const nlohmann::json& j, int stage) { return j["stages"][stage]["time_s"]["compute"].get<double>(); };
  CHECK(compute(vlm, 0) > compute(text, 0));
  for (int stage : {1, 2, 3}) CHECK(compute(vlm, stage) == Approx(compute(text, stage)).epsilon(1e-9));
  const auto mem = [](const nlohmann::json& j, int stage, const char* what) {
    return j["stages"][stage]["memory_bytes"][what].get<double>();
  };
  CHECK(mem(vlm, 0, "weights") > mem(text, 0, "weights"));
  CHECK(mem(vlm, 0, "activations") > mem(text, 0, "activations"));
  CHECK(mem(vlm, 1, "activations") == mem(text, 1, "activations"));
  CHECK(vlm["iteration_s"].get<double>() > text["iteration_s"].get<double>());
}

TEST_CASE("encoder heads that tp does not divide are an error at parallel.tp") {
  const std::string model = temp_file(clustersim::test::shipped_with("scenarios/models/llava-llama3-70b.yaml", "  heads: 16", "  heads: 4"));
  const auto r = run_cli("run " + kVlm + " --set model=" + model);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel.tp: expected a divisor of the 4 heads of the encoder clip-vit-l-14-336"));
}

TEST_CASE("sequence parallelism over encoder positions tp does not divide is an error") {
  const auto r = run_cli("run " + kVlm + " --set parallel.sequence_parallel=true");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel.sequence_parallel: expected tp (8) to divide the encoder's 577 tokens"));
}

TEST_CASE("an encoder with an unknown placement is an error at the field") {
  const std::string model = temp_file(clustersim::test::shipped_with("scenarios/models/llava-llama3-70b.yaml",
                                                                      "placement: first_stage", "placement: last_stage"));
  const auto r = run_cli("run " + kVlm + " --set model=" + model);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains("encoder.placement"));
}

namespace {

/// The shipped VLM with its encoder on a pipeline stage of its own, in 1F1B over `pp` ranks.
std::string own_stage_run(int pp, const std::string& extra = "") {
  const std::string model = temp_file(clustersim::test::shipped_with("scenarios/models/llava-llama3-70b.yaml",
                                                                      "placement: first_stage", "placement: own_stage"));
  return "run " + kVlm + " --set model=" + model + " --set schedule=1f1b --set parallel.virtual_stages=1 --set parallel.pp=" +
         std::to_string(pp) + " --set parallel.dp=16 --set gpus=" + std::to_string(8 * 16 * pp) + extra;
}

}  // namespace

TEST_CASE("an encoder on its own stage holds only the encoder, and the language model's stages follow it") {
  const nlohmann::json own = test::cli_json(own_stage_run(5));
  const nlohmann::json text = test::cli_json("run " + kVlm +
                                             " --set model=models/llama3-70b.yaml --set schedule=1f1b --set parallel.virtual_stages=1"
                                             " --set parallel.pp=4 --set parallel.dp=16 --set gpus=512");
  const auto stage = [](const nlohmann::json& j, int k, const char* group, const char* what) {
    return j["stages"][k][group][what].get<double>();
  };
  REQUIRE(own["stages"].size() == 5);
  // Stages 1-4 run the language model's 80 layers exactly as the text-only run's stages 0-3,
  // input embedding on the first of them.
  for (int k = 0; k < 4; ++k) {
    CHECK(stage(own, k + 1, "time_s", "compute") == Approx(stage(text, k, "time_s", "compute")).epsilon(1e-9));
    CHECK(stage(own, k + 1, "memory_bytes", "weights") == Approx(stage(text, k, "memory_bytes", "weights")).epsilon(1e-9));
  }
  // Stage 0 holds what the first-stage placement adds to the text model's stage 0: the encoder and
  // its projection, and nothing else.
  const nlohmann::json first = test::cli_json("run " + kVlm +
                                              " --set schedule=1f1b --set parallel.virtual_stages=1"
                                              " --set parallel.pp=4 --set parallel.dp=16 --set gpus=512");
  CHECK(stage(own, 0, "memory_bytes", "weights") ==
        Approx(stage(first, 0, "memory_bytes", "weights") - stage(text, 0, "memory_bytes", "weights")).epsilon(1e-9));
  CHECK(stage(own, 0, "time_s", "compute") < 0.05 * stage(own, 1, "time_s", "compute"));
}

TEST_CASE("an encoder on its own stage: the layer split has to leave stage 0 to it") {
  const auto uneven = run_cli(own_stage_run(4));  // 80 layers over the 3 stages after the encoder's
  CHECK(uneven.exit_code == 2);
  CHECK_THAT(uneven.stderr_text, Catch::Contains(": parallel.pp: expected the 3 model stages after the encoder's to divide the 80 layers"));
  // A listed split: stage 0 must get no language-model layers.
  const auto with_split = [](const std::string& list) {
    const std::string scenario = temp_file(clustersim::test::shipped_with(
        "scenarios/vlm-llava-llama3-70b-h100-1024.yaml", "  order: tp-dp-pp", "  order: tp-dp-pp\n  stage_layers: " + list));
    std::string args = own_stage_run(4) + " --set cluster=" + source_path("scenarios/clusters/dgx-h100-superpod-16k.yaml");
    return run_cli(args.replace(args.find(kVlm), kVlm.size(), scenario));
  };
  const auto listed = with_split("[2, 26, 26, 26]");
  CHECK(listed.exit_code == 2);
  CHECK_THAT(listed.stderr_text, Catch::Contains(": parallel.stage_layers: expected 0 language-model layers on stage 0"));
  const auto ok = with_split("[0, 26, 27, 27]");
  CHECK(ok.exit_code == 0);
}

TEST_CASE("an encoder on its own stage needs a pipeline to have a stage of its own") {
  const auto r = run_cli(own_stage_run(1));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": schedule: an encoder with placement own_stage needs at least 2 model stages; 1f1b has 1"));
}

TEST_CASE("an encoder on its own stage takes a listed split, not Megatron-Core's split options") {
  // Megatron-Core's counts are for the decoder's first and last ranks; here stage 0 is the encoder's.
  const auto r = run_cli(own_stage_run(4, " --set parallel.decoder_last_pipeline_num_layers=20"));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Catch::Contains(": parallel.decoder_last_pipeline_num_layers: expected stage_layers instead: "
                                            "the encoder has a stage of its own"));
}
