// Communication-computation interference (simulator/pass_times.hpp): a communication kernel holds
// a share of the SMs while it runs, and the compute beside it keeps the rest. Closed forms: a
// collective of c seconds beside h seconds of compute takes max(c, h + share x c) together.
#include <catch2/catch.hpp>

#include "simulator/pass_times.hpp"
#include "support.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/layer_segments.hpp"
#include "workloads/plan_iteration.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;

namespace {

const Cluster& superpod() { return test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"); }

Segment compute(Seconds s) { return {SegmentKind::compute, "compute", s}; }

/// One pipeline rank on node 0's eight GPUs as one TP group, with one forward per stage.
IterationPlan tp_plan(const std::vector<std::vector<Segment>>& forwards, double nccl_sm_share) {
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{1, 1, 1, 0};
  for (const auto& forward : forwards) {
    StagePlan sp;
    sp.forward = forward;
    plan.stages.push_back(sp);
  }
  plan.rank_gpu = {0};
  plan.tp_group = {{0, 1, 2, 3, 4, 5, 6, 7}};
  plan.dp_group = {{0}};
  plan.cp_group = {{0}};
  plan.expert_dp_group = {{0}};
  plan.channels = 16;
  plan.nccl_sm_share = nccl_sm_share;
  return plan;
}

Seconds sum_of(const PassShape& shape) {
  Seconds t = 0;
  for (const Part& p : shape.parts) t += p.duration_s;
  return t;
}

}  // namespace

TEST_CASE("the interference a collective adds is max(c, h + share c) less what h and the exposed part show") {
  // c = 1 s of communication beside h of compute, a quarter of the SMs held.
  CHECK(interference_s(1.0, 2.0, 0.25) == Approx(0.25));    // fully hidden: h + c/4
  CHECK(interference_s(1.0, 0.8, 0.25) == Approx(0.05));    // max(1, 1.05) - 0.8 - 0.2
  CHECK(interference_s(1.0, 0.75, 0.25) == Approx(0.0));    // the compute ends with the collective
  CHECK(interference_s(1.0, 0.5, 0.25) == 0.0);             // the collective outlasts the slowed compute
  CHECK(interference_s(1.0, 0.0, 0.25) == 0.0);             // nothing beside it: a blocking collective
  CHECK(interference_s(1.0, 2.0, 0.0) == 0.0);              // no SM count: no interference
}

TEST_CASE("each shipped GPU has its SM count, or says in the catalog why not") {
  // Vendors' documents: A100 108 SMs, H100 SXM5 132 (H800, H200 the same die), B200 148, MI300X 304
  // and MI355X 256 compute units.
  const std::map<std::string, int> sms = {{"A100-SXM-80GB", 108}, {"A100-PCIe-80GB", 108}, {"H100-SXM", 132}, {"H800-SXM", 132},
                                          {"H200-SXM", 132},      {"B200", 148},     {"MI300X", 304},
                                          {"MI355X", 256}};
  for (const std::string& name : test::shipped_catalog().names()) {
    INFO(name);
    const GpuModel& gpu = test::shipped_gpu(name);
    if (auto it = sms.find(name); it != sms.end()) {
      REQUIRE(gpu.streaming_multiprocessors);
      CHECK(gpu.streaming_multiprocessors->count == it->second);
      CHECK_FALSE(gpu.streaming_multiprocessors->source.empty());
      // A100: Korthikanti Table 4 measures the asynchronous TP backward without a slowdown.
      CHECK(gpu.sm_share(20) == Approx(name.rfind("A100", 0) == 0 ? 0.0 : 20.0 / it->second));
      continue;
    }
    CHECK_FALSE(gpu.streaming_multiprocessors);
    CHECK(gpu.sm_share(20) == 0.0);
    bool explained = false;
    for (const UncalibratedNote& note : gpu.uncalibrated) explained |= note.parameter == "streaming_multiprocessors";
    CHECK(explained);
    bool reported = false;
    for (const UncalibratedParameter& p : gpu.uncalibrated_parameters("bf16"))
      reported |= p.parameter == "streaming_multiprocessors";
    CHECK(reported);
  }
}

TEST_CASE("a fully hidden TP collective stretches the compute beside it by exactly its SMs' share of it") {
  // Stage 0: 1 s of compute, then a blocking all-reduce (c). Stage 1: the same all-reduce beside
  // 1 s of compute (c < 1 s, so hidden). 16 channels of 132 SMs: the pass is 1 + 16/132 c.
  const Router router(superpod());
  FabricEngine engine(superpod());
  Segment blocking = tp_collective(Op::all_reduce, "all-reduce", Bytes(256) << 20);
  Segment hidden = tp_collective(Op::all_reduce, "all-reduce", Bytes(256) << 20, 1.0);
  const double share = 16.0 / 132;
  const IterationPlan plan = tp_plan({{compute(1.0), blocking}, {compute(1.0), hidden}}, share);
  PassTimes times(engine, router, plan);
  const Seconds c = times.pass(0, 0, PassKind::forward).duration_s - 1.0;
  REQUIRE(c > 1e-4);
  REQUIRE(c < 1.0);
  const PassShape& shape = times.pass(0, 1, PassKind::forward);
  CHECK(shape.duration_s == Approx(1.0 + share * c).epsilon(1e-12));
  CHECK(sum_of(shape) == Approx(shape.duration_s).epsilon(1e-12));
  REQUIRE(shape.parts.size() == 3);
  CHECK(shape.parts[1].kind == SegmentKind::tp_comm);
  CHECK(shape.parts[1].duration_s == 0.0);  // nothing of the collective shows
  CHECK(shape.parts[2].kind == SegmentKind::compute);
  CHECK(shape.parts[2].label == "interference: all-reduce");
  // Without an SM share the hidden collective costs nothing, as before interference was modelled.
  const IterationPlan free_plan = tp_plan({{compute(1.0), hidden}}, 0);
  PassTimes free_times(engine, router, free_plan);
  CHECK(free_times.pass(0, 0, PassKind::forward).duration_s == 1.0);
}

TEST_CASE("a partly hidden TP collective shows max(c - h, share c) beyond its compute") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  const Bytes bytes = Bytes(256) << 20;
  const double share = 16.0 / 108;
  const IterationPlan probe = tp_plan({{compute(1.0), tp_collective(Op::all_reduce, "ar", bytes)}}, share);
  PassTimes probe_times(engine, router, probe);
  const Seconds c = probe_times.pass(0, 0, PassKind::forward).duration_s - 1.0;
  for (double fraction : {0.5, 0.9, 0.95}) {
    INFO("compute beside it: " << fraction << " c");
    const Seconds h = fraction * c;
    const IterationPlan plan = tp_plan({{compute(h), tp_collective(Op::all_reduce, "ar", bytes, h)}}, share);
    PassTimes times(engine, router, plan);
    CHECK(times.pass(0, 0, PassKind::forward).duration_s == Approx(h + std::max(c - h, share * c)).epsilon(1e-12));
  }
}

TEST_CASE("an F&B unit charges each pass's compute with the other's communication times its SM share") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  const IterationPlan plan = tp_plan({}, 0);
  PassTimes times(engine, router, plan);
  const double nccl = 16.0 / 132, deepep = 20.0 / 132;
  // Compute-bound: max(F + B's comm x share, B's comm) + max(B + F's comm x share, F's comm).
  PassShape f{{{SegmentKind::compute, "f", 1.0}, {SegmentKind::tp_comm, "tp", 0.3, nccl}}, 1.3, {}};
  PassShape b{{{SegmentKind::compute, "b", 2.0}, {SegmentKind::ep_comm, "dispatch", 0.5, deepep}}, 2.5, {}};
  const PassShape& unit = times.overlapped(f, b);
  CHECK(unit.duration_s == Approx(1.0 + 0.5 * deepep + 2.0 + 0.3 * nccl).epsilon(1e-12));
  CHECK(sum_of(unit) == Approx(unit.duration_s).epsilon(1e-12));
  CHECK(unit.parts.back().label == "F&B interference");
  // Communication-bound: the compute, slowed, still ends under it; only the communication shows.
  PassShape f2{{{SegmentKind::compute, "f", 0.1}, {SegmentKind::tp_comm, "tp", 0.3, nccl}}, 0.4, {}};
  PassShape b2{{{SegmentKind::compute, "b", 0.2}, {SegmentKind::ep_comm, "dispatch", 1.0, deepep}}, 1.2, {}};
  const PassShape& unit2 = times.overlapped(f2, b2);
  CHECK(unit2.duration_s == Approx(1.0 + std::max(0.2 + 0.3 * nccl, 0.3)).epsilon(1e-12));
  CHECK(sum_of(unit2) == Approx(unit2.duration_s).epsilon(1e-12));
}

TEST_CASE("a plan takes NCCL's share from its channels and DeepEP's 20 SMs from the GPU") {
  // DeepSeek-V3 on H800s: DeepEP holds 20 of 132 SMs (DeepSeek-V3 section 3.2.2); its NCCL
  // collectives one SM per channel, two channels per NIC.
  const ScenarioSpec s = load_scenario(test::source_path("scenarios/deepseek-v3-h800-2048.yaml"));
  REQUIRE(s.moe.deepep);
  const IterationPlan plan = plan_iteration(s);
  CHECK(plan.deepep_sm_share == Approx(20.0 / 132));
  CHECK(plan.nccl_sm_share == Approx(2.0 * s.cluster.node.nics / 132));
}

namespace {

/// The error a one-GPU catalog with `sms` as its streaming_multiprocessors entry (line 6) raises.
UserError sms_error(const std::string& sms) {
  const std::string text =
      "gpus:\n"
      "  - name: X\n"
      "    peak_tflops: {bf16: 100}\n"
      "    hbm_GB: 80\n"
      "    hbm_bandwidth_TBps: 2\n"
      "    streaming_multiprocessors: " + sms + "\n"
      "    source: test\n";
  return test::error_of([&] { parse_gpu_catalog(YamlField::load_string(text, "g.yaml")); });
}

}  // namespace

TEST_CASE("a bad SM count in the catalog is a UserError at its field") {
  const UserError zero = sms_error("{count: 0, source: s}");
  CHECK(zero.field_path() == "gpus[0].streaming_multiprocessors.count");
  CHECK(zero.line() == 6);
  CHECK(sms_error("{count: 13.5, source: s}").field_path() == "gpus[0].streaming_multiprocessors.count");
  CHECK(sms_error("{count: 132}").field_path() == "gpus[0].streaming_multiprocessors.source");
  CHECK(sms_error("{count: 132, interference: maybe, source: s}").field_path() ==
        "gpus[0].streaming_multiprocessors.interference");
  CHECK(sms_error("{count: 132, held: 20, source: s}").field_path() == "gpus[0].streaming_multiprocessors.held");
}
