// What runs each collective of an iteration: NCCL's tuner's pick for its size and channels (or,
// when the scenario asks, the fastest simulated, or the algorithm it pins). Data-parallel gradient
// collectives included, not always the ring: inside one DGX H100 NCCL reduces large all-reduces in
// the NVSwitch (NVLS), across nodes it picks by size.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "collectives/tuner_nccl.hpp"
#include "simulator/collective_sweep.hpp"
#include "simulator/iteration.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

const Cluster& superpod() { return test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"); }

/// One pipeline rank on GPU 0, four microbatches of F = 1 ms and B = 2 ms, then its gradients
/// (`bytes`) all-reduced over `dp`, not overlapped (one collective after the last backward), then
/// a 5 ms optimizer step.
IterationPlan one_rank_plan(const std::vector<int>& dp, Bytes bytes, bool nccl_tuner) {
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{1, 4, 1, 0};
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", 1e-3}};
  sp.backward_input = {{SegmentKind::compute, "bwd", 2e-3}};
  sp.activation_bytes = 64 << 20;
  sp.gradient_bytes = bytes;
  plan.stages.push_back(sp);
  plan.rank_gpu = {0};
  plan.tp_group = {{0}};
  plan.dp_group = {dp};
  plan.free_communication = false;
  plan.overlap_grad_reduce = false;
  plan.optimizer_s = 5e-3;
  plan.nccl_tuner = nccl_tuner;
  plan.channels = default_channels(superpod());  // as a scenario opens them: two per NIC
  return plan;
}

Seconds alone(FabricEngine& engine, const Router& router, const char* algorithm, const std::vector<int>& group, Bytes bytes,
              int channels) {
  const CollectiveRequest req{Op::all_reduce, group, bytes, channels, *find_protocol("Simple"), 0};
  return makespan(engine.run(find_algorithm(algorithm)->lower(router, req)));
}

}  // namespace

TEST_CASE("a gradient all-reduce inside one DGX H100 runs NCCL's pick, NVLS, not the ring") {
  // 1 GiB over the node's 8 GPUs: NCCL's tuner picks NVLS (its NVSwitch adds: each GPU's link
  // carries (n+1)/n S each way at nvlsEfficiency 0.85, where the ring carries 2(n-1)/n S at full
  // rate; collectives/algo_nvls.cpp).
  const Router router(superpod());
  FabricEngine engine(superpod());
  const std::vector<int> node{0, 1, 2, 3, 4, 5, 6, 7};
  const Bytes bytes = Bytes{1} << 30;
  IterationPlan plan = one_rank_plan(node, bytes, true);
  const CollectiveRequest req{Op::all_reduce, node, bytes, plan.channels, Protocol{}, 0};
  const std::optional<NcclChoice> pick = nccl_choose(superpod(), req, std::nullopt, false);
  REQUIRE(pick);
  REQUIRE(pick->algorithm->name() == "nvls");
  const Seconds nvls = alone(engine, router, "nvls", node, bytes, plan.channels);
  const Seconds ring = alone(engine, router, "ring", node, bytes, plan.channels);
  // The closed forms behind the two, bandwidth-bound: (9/8) S / 0.85 against (14/8) S.
  CHECK(nvls / ring == Approx((9.0 / 8 / 0.85) / (14.0 / 8)).epsilon(0.01));
  const IterationResult tuned = simulate_iteration(engine, router, plan);
  CHECK(tuned.iteration_s == Approx(4 * 3e-3 + nvls + 5e-3).epsilon(1e-9));
  CHECK(tuned.ranks[0].dp_exposed_s == Approx(nvls).epsilon(1e-9));
}

TEST_CASE("across nodes the gradient collective's algorithm follows the tuner's pick for each size") {
  // One GPU on each of 16 nodes: NCCL picks a low-latency protocol for small all-reduces, on
  // fewer channels (enqueue.cc: a channel per 512 threads x 8 bytes under LL), and another pair on
  // every channel for large ones; each iteration adds exactly its pick's time alone on the fabric.
  const Router router(superpod());
  FabricEngine engine(superpod());
  std::vector<int> nodes;
  for (int n = 0; n < 16; ++n) nodes.push_back(8 * n);
  std::set<std::string> picked;
  for (Bytes bytes : {Bytes{16} << 10, Bytes{1} << 30}) {
    INFO(bytes << " bytes");
    IterationPlan plan = one_rank_plan(nodes, bytes, true);
    const CollectiveRequest req{Op::all_reduce, nodes, bytes, plan.channels, Protocol{}, 0};
    const std::optional<NcclChoice> pick = nccl_choose(superpod(), req, std::nullopt, true);
    REQUIRE(pick);
    picked.insert(pick->algorithm->name() + "/" + pick->protocol.name);
    if (bytes < (Bytes{1} << 20)) CHECK(pick->channels < plan.channels);
    if (bytes >= (Bytes{1} << 30)) CHECK(pick->channels == plan.channels);
    CollectiveRequest run = req;
    run.protocol = pick->protocol;
    run.channels = pick->channels;
    const Seconds t = makespan(engine.run(pick->algorithm->lower(router, run)));
    CHECK(simulate_iteration(engine, router, plan).ranks[0].dp_exposed_s == Approx(t).epsilon(1e-9));
  }
  CHECK(picked.size() == 2);  // two sizes, two picks: the choice is made per size
}

TEST_CASE("collectives algorithm best runs each gradient collective's fastest simulated pair") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  const std::vector<int> node{0, 1, 2, 3, 4, 5, 6, 7};
  const Bytes bytes = Bytes{1} << 30;
  const IterationPlan plan = one_rank_plan(node, bytes, false);
  SweepSpec spec;
  spec.op = Op::all_reduce;
  spec.ranks = node;
  const CollectiveRequest req{Op::all_reduce, node, bytes, plan.channels, Protocol{}, 0};
  const Seconds best =
      best_collective(engine, router, candidate_algorithms(superpod(), spec), nccl_protocols(), req, true).time_s;
  CHECK(simulate_iteration(engine, router, plan).ranks[0].dp_exposed_s == Approx(best).epsilon(1e-9));
}

TEST_CASE("a small TP collective in an iteration runs on the channels NCCL opens for its size") {
  // 16 KiB all-reduced by the node's 8 GPUs in each forward: NCCL's tuner picks a low-latency
  // pair, and enqueue.cc gives it fewer channels than the communicator has; the forward's exposed
  // TP time is that pick's, on those channels, alone in the node. (Inside one NVSwitch the count
  // does not change the time: the channels share each GPU's one port. Across nodes it changes
  // which paths ECMP hashes the channels onto.)
  const Router router(superpod());
  FabricEngine engine(superpod());
  const std::vector<int> node{0, 1, 2, 3, 4, 5, 6, 7};
  IterationPlan plan = one_rank_plan({0}, 0, true);
  plan.tp_group = {node};
  Segment tp{SegmentKind::tp_comm, "attention all-reduce", 0};
  tp.tp_bytes = Bytes{16} << 10;
  plan.stages[0].forward.push_back(tp);
  const CollectiveRequest req{Op::all_reduce, node, tp.tp_bytes, plan.channels, Protocol{}, 0};
  const SweepRow pick = nccl_collective(engine, router, req, std::nullopt, true);
  CHECK(pick.channels < plan.channels);
  CHECK(simulate_iteration(engine, router, plan).ranks[0].tp_s == Approx(4 * pick.time_s).epsilon(1e-9));
}

TEST_CASE("run lists each distinct collective with the algorithm, protocol and channels NCCL's tuner gave it") {
  // GPT-3 175B on 512 H100s, tp 8 pp 16 dp 4 (Megatron's order: GPU = tp + 8 dp + 32 pp): every TP
  // group is one node, every data-parallel group GPUs 0, 8, 16, 24 shifted, one GPU on each of 4 nodes.
  const std::string scenario = test::source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  const nlohmann::json j = test::cli_json("run " + scenario);
  const Cluster& cluster = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  std::set<std::string> what;
  for (const auto& c : j.at("collectives")) {
    INFO(c.dump());
    what.insert(c.at("what").get<std::string>());
    const Op op = *parse_op(c.at("op").get<std::string>());
    std::vector<int> group;
    const int ranks = c.at("ranks"), nodes = c.at("nodes");
    for (int r = 0; r < ranks; ++r) group.push_back(nodes == 1 ? r : 8 * r);
    const CollectiveRequest req{op, group, c.at("size_bytes").get<Bytes>(), default_channels(cluster), Protocol{}, 0};
    const std::optional<NcclChoice> pick = nccl_choose(cluster, req, std::nullopt, true);
    REQUIRE(pick);
    CHECK(c.at("algorithm") == pick->algorithm->name());
    CHECK(c.at("protocol") == pick->protocol.name);
    CHECK(c.at("channels") == pick->channels);
  }
  CHECK(what == std::set<std::string>{"gradients", "tp"});
  const test::CliResult text = test::run_cli("run " + scenario);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Catch::Matchers::Contains("# collectives, each distinct one once: NCCL's tuner's pick"));
}

TEST_CASE("collectives.algorithm naming an algorithm pins it wherever it runs, NCCL's pick elsewhere") {
  // GPT-3 175B on 512 H100s without sequence parallelism: its TP collectives are all-reduces in one
  // node, for which NCCL picks NVLS. Pinned, the ring runs them (the fastest of its protocols), as
  // the fastest simulated pair does here (NVLS is kept out of best); the tree pinned runs every
  // all-reduce, while the reduce-scatters and all-gathers, which it does not implement, keep NCCL's pick.
  const std::string run = "run " + test::source_path("scenarios/gpt3-175b-h100-pp16.yaml") +
                          " --set parallel.sequence_parallel=false --set collectives.algorithm=";
  const nlohmann::json nccl = test::cli_json(run + "nccl"), ring = test::cli_json(run + "ring"),
                       best = test::cli_json(run + "best"), tree = test::cli_json(run + "tree");
  CHECK(ring["config"]["collectives_algorithm"] == "ring");
  auto tp_exposed = [](const nlohmann::json& j) { return j["stages"][0]["time_s"]["tp_exposed"].get<double>(); };
  CHECK(tp_exposed(ring) == Approx(tp_exposed(best)).epsilon(1e-9));
  CHECK(tp_exposed(ring) > 1.1 * tp_exposed(nccl));
  int pinned = 0;
  for (const auto& c : tree.at("collectives")) {
    INFO(c.dump());
    if (c["op"] == "all_reduce") {
      CHECK(c["algorithm"] == "tree");
      ++pinned;
    } else {
      CHECK(c["algorithm"] != "tree");
    }
  }
  CHECK(pinned > 0);
  const test::CliResult text = test::run_cli(run + "tree");
  CHECK_THAT(text.stdout_text, Catch::Matchers::Contains("tree (pinned) where it runs"));
}

TEST_CASE("collectives.algorithm that is neither nccl, best nor an algorithm of iterations is one line and exit 2") {
  const std::string run = "run " + test::source_path("scenarios/gpt3-175b-h100-pp16.yaml") + " --set collectives.algorithm=";
  for (const char* bad : {"fastest", "direct", "pxn"}) {  // direct and pxn run only all-to-all and send/recv
    const test::CliResult r = test::run_cli(run + bad);
    INFO(r.stderr_text);
    CHECK(r.exit_code == 2);
    CHECK(r.stdout_text.empty());
    CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
    CHECK_THAT(r.stderr_text, Catch::Matchers::Contains("collectives.algorithm: expected nccl, best or an algorithm to pin (ring, tree") &&
                                  Catch::Matchers::Contains(std::string("got '") + bad + "'"));
  }
}
