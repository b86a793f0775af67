// One transformer layer's forward and backward time on A100s against the per-layer times Korthikanti
// et al. measured in Megatron-LM (Table 4); Megatron's asynchronous TP backward, the embedding's and
// output layer's TP collectives and unfused gradient accumulation against closed forms.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "workloads/gpu_catalog.hpp"

using namespace clustersim;

namespace {

const std::string kScenario = "scenarios/validation/korthikanti-22b-full.yaml";

/// The 22B scenario with `layers` layers, its paths made absolute so it runs from a temporary file.
std::string scenario_with_layers(int layers) {
  const std::string model =
      test::temp_file(test::shipped_with("scenarios/models/megatron-22b.yaml", "layers: 48", "layers: " + std::to_string(layers)));
  const std::string s = test::shipped_with(kScenario, "../clusters/", test::source_path("scenarios/clusters/"));
  return test::temp_file(test::replaced_all(s, "../models/megatron-22b.yaml", model, kScenario));
}

struct PassTimes {
  double forward_ms = 0, backward_ms = 0;
};

/// GPU 0's forward and backward time in one iteration (one microbatch), from the trace.
PassTimes pass_times(const std::string& scenario, const std::string& sets) {
  const std::string trace = test::temp_file("", ".json");
  const auto r = test::run_cli("run " + scenario + " --allow-oom " + sets + " --trace " + trace + " --trace-ranks 0");
  REQUIRE(r.exit_code == 0);
  PassTimes t;
  const nlohmann::json events = nlohmann::json::parse(test::read_file(trace)).at("traceEvents");
  for (const auto& e : events) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "pass") continue;
    const std::string name = e["name"];
    const double ms = e["dur"].get<double>() / 1e3;
    if (name == "F") t.forward_ms += ms;
    if (name == "B") t.backward_ms += ms;
  }
  return t;
}

double tp_exposed_s(const std::string& scenario, const std::string& sets) {
  const auto j = test::cli_json("run " + scenario + " --allow-oom " + sets);
  return j["stages"][0]["time_s"]["tp_exposed"].get<double>();
}
double tp_exposed_s(const std::string& sets) { return tp_exposed_s(test::source_path(kScenario), sets); }

/// One layer's exposed TP time: the embedding's and the output layer's collectives cancel.
double layer_tp_exposed_s(const std::string& sets) {
  static const std::string full = scenario_with_layers(48), half = scenario_with_layers(24);
  return (tp_exposed_s(full, sets) - tp_exposed_s(half, sets)) / 24;
}

}  // namespace

TEST_CASE("one 22B layer's forward and backward match Korthikanti Table 4 within 3% in all five modes") {
  // Korthikanti et al. 2022 (arXiv:2205.05198) Table 4: 22B model, tp 8, microbatch 4, sequence
  // 2048, A100 80GB; forward and backward (recompute included) of one layer in ms. One layer's time
  // is the difference between a 48- and a 24-layer model over 24: embedding, output layer and
  // optimizer cancel.
  struct Row {
    const char* mode;
    const char* sets;
    double forward_ms, backward_ms;
  };
  const std::string full = scenario_with_layers(48), half = scenario_with_layers(24);
  for (const Row& row : std::vector<Row>{
           {"baseline, no recompute", "--set recompute=none", 7.7, 11.9},
           {"sequence parallelism", "--set recompute=none --set parallel.sequence_parallel=true", 7.2, 11.8},
           {"full recompute", "--set recompute=full", 7.7, 19.5},
           {"selective recompute", "--set recompute=selective", 7.7, 13.2},
           {"selective + sequence", "--set recompute=selective --set parallel.sequence_parallel=true", 7.2, 13.1}}) {
    INFO(row.mode);
    const PassTimes a = pass_times(full, row.sets), b = pass_times(half, row.sets);
    const double forward_ms = (a.forward_ms - b.forward_ms) / 24, backward_ms = (a.backward_ms - b.backward_ms) / 24;
    INFO("forward " << forward_ms << " ms, backward " << backward_ms << " ms");
    CHECK(test::relative_error(forward_ms, row.forward_ms) <= 0.03);
    CHECK(test::relative_error(backward_ms, row.backward_ms) <= 0.03);
  }
}

TEST_CASE("the asynchronous TP backward hides the input-gradient all-reduces under the weight gradients") {
  // Without recompute a layer runs two all-reduces of the same size forward and two backward. The
  // backward ones run beside the QKV and FFN weight-gradient GEMMs, each longer than an all-reduce
  // of this layer, so exactly half the TP time disappears.
  const double blocking = layer_tp_exposed_s("--set recompute=none --set parallel.overlap_tp_backward=false");
  const double overlapped = layer_tp_exposed_s("--set recompute=none");
  REQUIRE(blocking > 0);
  CHECK(overlapped == Approx(blocking / 2).epsilon(1e-6));
}

TEST_CASE("a deferred weight gradient cannot hide the TP backward") {
  // ZB-H1 runs the weight gradient as its own pass later, so nothing runs beside the reduction.
  const std::string zb = "--set recompute=none --set schedule=zb-h1 --set parallel.overlap_p2p_comm=true ";
  CHECK(tp_exposed_s(zb) == Approx(tp_exposed_s(zb + "--set parallel.overlap_tp_backward=false")).epsilon(1e-9));
}

TEST_CASE("under sequence parallelism the backward re-gathers each linear's input, hidden by the async backward") {
  // Per layer, forward: two all-gathers and two reduce-scatters (F). Blocking backward: the
  // all-gathers of the output gradients, the reductions of the input gradients, and the re-gathers
  // of the QKV and FFN inputs for their weight gradients, F plus two more all-gathers. The async
  // backward hides the re-gathers and the reductions, F's worth. Full recompute adds one F.
  const std::string sp = "--set parallel.sequence_parallel=true ";
  const double none_blocking = layer_tp_exposed_s(sp + "--set recompute=none --set parallel.overlap_tp_backward=false");
  const double none_async = layer_tp_exposed_s(sp + "--set recompute=none");
  const double full_async = layer_tp_exposed_s(sp + "--set recompute=full");
  const double forward_tp = full_async - none_async;
  REQUIRE(forward_tp > 0);
  CHECK(none_blocking - none_async == Approx(forward_tp).epsilon(1e-6));
  CHECK(none_async == Approx(forward_tp + forward_tp / 2).epsilon(0.02));  // the two blocking all-gathers: half of F
}

TEST_CASE("the vocabulary-parallel embedding and output layer reduce over TP like a layer's linears") {
  // Beyond the layers: the embedding's output all-reduce (forward), the output layer's input-gradient
  // all-reduce (backward, hidden under the logits' weight gradient when asynchronous), both the size
  // of a layer's, and the cross-entropy's three all-reduces of one float per token.
  const std::string none = "--set recompute=none ", blocking = "--set parallel.overlap_tp_backward=false";
  const std::string model = scenario_with_layers(48);
  const double layer_blocking = layer_tp_exposed_s(none + blocking), layer_async = layer_tp_exposed_s(none);
  const double outside_blocking = tp_exposed_s(model, none + blocking) - 48 * layer_blocking;
  const double outside_async = tp_exposed_s(model, none) - 48 * layer_async;
  const double all_reduce = layer_blocking / 4;  // a layer: two forward, two backward
  CHECK(outside_blocking - outside_async == Approx(all_reduce).epsilon(1e-6));
  const double cross_entropy = outside_async - all_reduce;
  INFO("cross-entropy all-reduces " << cross_entropy * 1e6 << " us, a layer's all-reduce " << all_reduce * 1e6 << " us");
  CHECK(cross_entropy > 0);
  CHECK(cross_entropy < 0.2 * all_reduce);  // 32 KB each: latency, not bandwidth
}

TEST_CASE("without gradient accumulation fusion each microbatch adds every weight gradient to the buffer") {
  // 22B on tp 8: a layer holds 6144 x (3 x 6144 + 6144 + 2 x 24576) / 8 weights; the tied embedding
  // 51200 x 6144 / 8 gets its gradient twice (input and output layer) on this one stage. One
  // microbatch: each is read from the buffer, read fresh in 16 bits and written back once.
  const double layer = 6144.0 * (3 * 6144 + 6144 + 2 * 24576) / 8, embedding = 51200.0 * 6144 / 8;
  const double params = 48 * layer + 2 * embedding;
  const GpuModel& a100 = test::shipped_gpu("A100-SXM-80GB");
  const double bytes_per_s = a100.hbm_bandwidth_Bps * a100.hbm_efficiency->fraction * a100.in_training_efficiency->fraction;
  auto compute_s = [](const std::string& sets) {
    const auto j = test::cli_json("run " + test::source_path(kScenario) + " " + sets);
    return j["stages"][0]["time_s"]["compute"].get<double>();
  };
  for (const auto& [precision, buffer_bytes] : {std::pair("fp16", 2), std::pair("bf16", 4)}) {
    INFO(precision << ": gradients accumulate in " << buffer_bytes << " bytes");
    const std::string p = std::string("--set precision=") + precision;
    const double added = compute_s(p + " --set parallel.gradient_accumulation_fusion=false") -
                         compute_s(p + " --set parallel.gradient_accumulation_fusion=true");
    CHECK(added == Approx(params * (2.0 * buffer_bytes + 2) / bytes_per_s).epsilon(1e-6));
  }
}
