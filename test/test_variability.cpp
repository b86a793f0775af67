// Variability in closed form: a slow GPU, a degraded link and a failed link, each on a cluster
// small enough that the expected time is written here.
#include <catch2/catch.hpp>

#include <cmath>

#include "simulator/engine.hpp"
#include "simulator/iteration.hpp"
#include "support.hpp"
#include "topologies/link_faults.hpp"
#include "topologies/router.hpp"
#include "workloads/variability.hpp"

using namespace clustersim;

namespace {

constexpr Seconds kForward_s = 1e-3, kBackward_s = 2e-3, kOptimizer_s = 0.5e-3;
constexpr int kMicrobatches = 2;

/// Four replicas of one pipeline rank, one GPU each (the small fat tree's four nodes), two
/// microbatches, the gradient all-reduce after the last backward (not overlapped), then the
/// optimizer step.
IterationPlan four_replica_plan(FoldMode fold) {
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{1, kMicrobatches, 1, 0};
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", kForward_s}};
  sp.backward_input = {{SegmentKind::compute, "bwd", kBackward_s}};
  sp.gradient_bytes = 64 << 20;
  plan.stages = {sp};
  plan.rank_gpu = {0};
  plan.replicas = 4;
  plan.unit_gpus = {{0}, {1}, {2}, {3}};
  plan.dp_groups = {{{0, 1, 2, 3}}};
  plan.dp_group = {{0, 1, 2, 3}};
  plan.expert_dp_groups = {{}};
  plan.overlap_grad_reduce = false;
  plan.optimizer_s = kOptimizer_s;
  plan.channels = 2;
  plan.fold = fold;
  return plan;
}

IterationResult run_plan(const IterationPlan& plan) {
  const Cluster cluster = test::cluster_from_yaml(test::kSmallFatTreeYaml);
  Router router(cluster);
  FabricEngine engine(cluster);
  return simulate_iteration(engine, router, plan);
}

LinkChange change(const std::string& name, double fraction, bool failed = false) {
  LinkChange c;
  c.name = name;
  c.bandwidth_fraction = fraction;
  c.failed = failed;
  c.file = "scenario.yaml";
  c.line = 7;
  c.field = failed ? "variability.failed_links[0]" : "variability.links." + name;
  return c;
}

/// The spine a route from leaf 0 climbs to ("spine0" or "spine1").
std::string spine_of(const Cluster& c, const Route& r) {
  for (LinkDir d : r.links) {
    const Link& l = c.links[static_cast<std::size_t>(link_of(d))];
    for (int v : {l.a, l.b})
      if (c.graph[static_cast<std::size_t>(v)].name.rfind("spine", 0) == 0) return c.graph[static_cast<std::size_t>(v)].name;
  }
  return "";
}

/// A hash (channel) under which GPU src's flow to dst climbs through `spine`.
int channel_via(const Cluster& c, const Router& router, int src, int dst, const std::string& spine) {
  for (int ch = 0; ch < 64; ++ch)
    if (spine_of(c, router.route(src, dst, flow_hash(src, dst, ch))) == spine) return ch;
  FAIL("no channel of " << src << " -> " << dst << " hashes through " << spine);
  return -1;
}

/// One flow of `bytes` from src to dst on `channel`, all starting at once; their finish times.
std::vector<Seconds> run_flows(const Cluster& c, const std::vector<std::array<int, 3>>& flows, Bytes bytes) {
  const Router router(c);
  FlowGraph g;
  for (const auto& [src, dst, ch] : flows) {
    Route r = router.route(src, dst, flow_hash(src, dst, ch));
    Flow f;
    f.src_gpu = src;
    f.dst_gpu = dst;
    f.links = std::move(r.links);
    f.latency_s = r.latency_s;
    f.size_bytes = bytes;
    g.add(std::move(f));
  }
  FabricEngine engine(c);
  return engine.run(g);
}

}  // namespace

TEST_CASE("one GPU 20% slower in a data-parallel group slows a non-overlapped step by its extra compute") {
  const IterationResult even = run_plan(four_replica_plan(FoldMode::none));
  IterationPlan slow_plan = four_replica_plan(FoldMode::none);
  slow_plan.gpu_speed = {1, 0.8, 1, 1};
  const IterationResult slow = run_plan(slow_plan);
  // GPU 1 runs every pass and its optimizer step 1/0.8 as long: the all-reduce starts when its last
  // backward ends, and its optimizer step ends the iteration.
  const Seconds own_compute_s = kMicrobatches * (kForward_s + kBackward_s) + kOptimizer_s;
  CHECK(slow.iteration_s - even.iteration_s == Approx(own_compute_s * (1 / 0.8 - 1)).epsilon(1e-9));
  CHECK(slow.reported_replica == 1);
  CHECK(slow.ranks[0].compute_s == Approx(kMicrobatches * (kForward_s + kBackward_s) / 0.8).epsilon(1e-12));
  CHECK(slow.ranks[0].optimizer_s == Approx(kOptimizer_s / 0.8).epsilon(1e-12));

  // Folded: the three replicas at full speed fold onto replica 0, the slow one is its own class,
  // and the iteration is the same to 1e-9.
  IterationPlan folded_plan = slow_plan;
  folded_plan.fold = FoldMode::exact;
  const IterationResult folded = run_plan(folded_plan);
  CHECK(folded.simulated_replicas == 2);
  CHECK(test::relative_error(folded.iteration_s, slow.iteration_s) < 1e-9);
  // Without variability everything folds onto replica 0.
  CHECK(run_plan(four_replica_plan(FoldMode::exact)).simulated_replicas == 1);
}

TEST_CASE("a unit's GPUs run in lockstep: the slowest of a TP group paces its rank") {
  IterationPlan plan = four_replica_plan(FoldMode::none);
  plan.replicas = 2;
  plan.unit_gpus = {{0, 1}, {2, 3}};
  plan.dp_groups = {{{0, 2}, {1, 3}}};
  plan.dp_group = {{0, 2}};
  plan.tp_group = {{0, 1}};
  const IterationResult even = run_plan(plan);
  plan.gpu_speed = {1, 1, 1, 0.5};
  const IterationResult slow = run_plan(plan);
  CHECK(slow.reported_replica == 1);
  CHECK(slow.iteration_s - even.iteration_s ==
        Approx((kMicrobatches * (kForward_s + kBackward_s) + kOptimizer_s) * (1 / 0.5 - 1)).epsilon(1e-9));
}

TEST_CASE("a degraded spine link slows only the flows hashed onto it, to its max-min share") {
  const Cluster built = test::cluster_from_yaml(test::kSmallFatTreeYaml);
  const Router router(built);
  // GPU 0 (leaf 0) to GPU 2 (leaf 1) through spine 0, GPU 1 to GPU 3 through spine 1: NICs of
  // their own, so each is bound only by the links of its path.
  const int a = channel_via(built, router, 0, 2, "spine0"), b = channel_via(built, router, 1, 3, "spine1");
  const int a2 = channel_via(built, router, 1, 3, "spine0");
  const Bytes bytes = 1 << 30;
  const std::vector<Seconds> before = run_flows(built, {{0, 2, a}, {1, 3, b}}, bytes);

  Cluster degraded = test::cluster_from_yaml(test::kSmallFatTreeYaml);
  apply_link_changes(degraded, {change("leaf0-spine0", 0.25)});
  const std::vector<Seconds> after = run_flows(degraded, {{0, 2, a}, {1, 3, b}}, bytes);
  // Max-min here: a flow alone on its path runs at its tightest link. Fabric and NIC links are
  // 400 Gb/s at efficiency 0.5 (25 GB/s), PCIe 30 GB/s: the degraded uplink gives 25/4 GB/s.
  const double net_Bps = 400e9 / 8 * 0.5;
  const Seconds latency = router.route(0, 2, flow_hash(0, 2, a)).latency_s;
  CHECK(before[0] == Approx(latency + bytes / net_Bps).epsilon(1e-9));
  CHECK(after[0] == Approx(latency + bytes / (0.25 * net_Bps)).epsilon(1e-9));
  CHECK(after[1] == before[1]);  // hashed onto spine 1: untouched

  // Two flows hashed onto the degraded uplink share it equally: 25/8 GB/s each.
  const std::vector<Seconds> shared = run_flows(degraded, {{0, 2, a}, {1, 3, a2}}, bytes);
  for (Seconds t : shared) CHECK(t == Approx(latency + bytes / (0.25 * net_Bps / 2)).epsilon(1e-9));
}

TEST_CASE("a failed spine link moves its flows onto the remaining equal-cost path") {
  const Cluster built = test::cluster_from_yaml(test::kSmallFatTreeYaml);
  const Router before(built);
  const int a = channel_via(built, before, 0, 2, "spine0"), b = channel_via(built, before, 1, 3, "spine1");
  Cluster failed = test::cluster_from_yaml(test::kSmallFatTreeYaml);
  apply_link_changes(failed, {change("leaf0-spine0", 1, true)});
  const Router after(failed);
  const std::vector<LinkId> down = links_named(failed, change("leaf0-spine0", 1, true));
  REQUIRE(down.size() == 1);
  int moved = 0;
  for (int ch = 0; ch < 64; ++ch) {
    const Route was = before.route(0, 2, flow_hash(0, 2, ch)), is = after.route(0, 2, flow_hash(0, 2, ch));
    CHECK(is.links.size() == was.links.size());  // still a shortest path: leaf, spine, leaf
    for (LinkDir d : is.links) CHECK(link_of(d) != down.front());
    CHECK(spine_of(failed, is) == "spine1");
    moved += spine_of(built, was) == "spine0";
  }
  CHECK(moved > 0);  // some flows did use the failed link
  // Both flows now climb leaf0 -> spine1 and share it: 25/2 GB/s each.
  const Bytes bytes = 1 << 30;
  const double net_Bps = 400e9 / 8 * 0.5;
  const Seconds latency = before.route(0, 2, flow_hash(0, 2, a)).latency_s;
  for (Seconds t : run_flows(failed, {{0, 2, a}, {1, 3, b}}, bytes))
    CHECK(t == Approx(latency + bytes / (net_Bps / 2)).epsilon(1e-9));
}

TEST_CASE("links that cannot change are user errors at their field") {
  Cluster c = test::cluster_from_yaml(test::kSmallFatTreeYaml);
  const UserError unknown = test::error_of([&] { apply_link_changes(c, {change("leaf0-spine9", 0.5)}); });
  CHECK(unknown.line() == 7);
  CHECK(unknown.field_path() == "variability.links.leaf0-spine9");
  CHECK_THAT(unknown.expected(), Catch::Matchers::Contains("expected a link of the cluster named A-B"));
  const UserError unjoined = test::error_of([&] { apply_link_changes(c, {change("leaf0-leaf1", 0.5)}); });
  CHECK_THAT(unjoined.expected(), Catch::Matchers::Contains("leaf0 and leaf1 are not"));
  const UserError own = test::error_of([&] { apply_link_changes(c, {change("n0.nic0-leaf0", 1, true)}); });
  CHECK_THAT(own.expected(), Catch::Matchers::Contains("expected a link between two fabric switches"));
  Cluster cut = test::cluster_from_yaml(test::kSmallFatTreeYaml);
  const UserError apart = test::error_of(
      [&] { apply_link_changes(cut, {change("leaf0-spine0", 1, true), change("leaf0-spine1", 1, true)}); });
  CHECK_THAT(apart.expected(), Catch::Matchers::Contains("no path joins leaf0 and leaf1"));
  // The parallel-link index: the small fat tree has one link per leaf and spine.
  CHECK(links_named(c, change("spine0-leaf0#0", 0.5)).size() == 1);
  CHECK_THAT(test::error_of([&] { links_named(c, change("leaf0-spine0#1", 0.5)); }).expected(),
             Catch::Matchers::Contains("expected a link index below 1"));
}

TEST_CASE("our normal variate has mean 0 and standard deviation 1, and a seed fixes every GPU's draw") {
  const int n = 200000;
  double sum = 0, squares = 0;
  for (int g = 0; g < n; ++g) {
    const double z = standard_normal(42, g);
    sum += z;
    squares += z * z;
  }
  const double mean = sum / n, sd = std::sqrt(squares / n - mean * mean);
  // Standard error of the mean at n = 200,000: 1/sqrt(n) = 0.0022; of the sd: 0.0016.
  CHECK(std::abs(mean) < 0.01);
  CHECK(std::abs(sd - 1) < 0.01);
  VariabilitySpec v;
  v.gpu_speed.distribution = SpeedDistribution::normal;
  v.gpu_speed.mean = 1;
  v.gpu_speed.stddev = 0.05;
  v.seed = 7;
  const std::vector<double> speeds = gpu_speeds(v, 16, 8);
  CHECK(speeds == gpu_speeds(v, 16, 8));
  CHECK(speeds[3] == 1 + 0.05 * standard_normal(7, 3));
  // A GPU keeps its draw whatever the job's size; another seed draws again.
  CHECK(gpu_speeds(v, 1024, 8)[3] == speeds[3]);
  v.seed = 8;
  CHECK(gpu_speeds(v, 16, 8)[3] != speeds[3]);
  // Named GPUs and nodes override the draw, a GPU's own entry its node's.
  v.nodes = {{1, 0.9}};
  v.gpus = {{9, 0.7}};
  const std::vector<double> named = gpu_speeds(v, 16, 8);
  CHECK(named[8] == 0.9);
  CHECK(named[9] == 0.7);
}
