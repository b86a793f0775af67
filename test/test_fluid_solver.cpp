// The fluid solver computes SimGrid's max-min (CM02 with the engine's settings) at a fraction of its
// cost: the same finish times on flow graphs that stress what it does differently (rates re-solved
// only around what changed, links that carry the same flows bundled, steps without links kept off
// the solver), and closed forms for what it must get right on its own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "collectives/collective.hpp"
#include "simulator/engine.hpp"
#include "simulator/fluid_solver.hpp"
#include "simulator/iteration.hpp"
#include "support.hpp"
#include "topologies/router.hpp"

using namespace clustersim;

namespace {

/// 64 DGX-A100-like nodes of one GPU and one NIC on a 2-tier fat tree whose leaves are 4:1
/// oversubscribed: uplinks are where flows meet.
std::string oversubscribed_fat_tree() {
  return R"(
name: diff-fat-tree
gpu: H100-SXM
link_types:
  nvlink: {bandwidth_efficiency: 1.0}
  net: {bandwidth_efficiency: 0.9}
  pcie: {bandwidth_efficiency: 1.0}
node:
  gpus: 2
  scale_up: {topology: nvswitch, link_type: nvlink, bandwidth_GBps: 400, latency_us: 0.1}
  nics: {count: 2, link_type: net, bandwidth_Gbps: 400, latency_us: 0.7, gpus: [0, 1]}
  pcie: {link_type: pcie, bandwidth_GBps: 30, latency_us: 0.4}
fabric:
  type: fat_tree
  nodes: 32
  link_type: net
  bandwidth_Gbps: 200
  latency_us: 0.3
  tiers:
    - {radix: 10, oversubscription: 4}
    - {radix: 16}
)";
}

/// A random flow graph: point-to-point flows between random GPUs on hashed paths, rings of up to
/// `ring_gpus` GPUs, steps without links, random sizes and latencies, each flow after up to three
/// earlier ones. With `bounds`, about a third of the flows that move bytes also carry a rate bound
/// (Flow::max_rate_Bps) between 2% and 60% of a network link, drawn apart so the graph is the same.
FlowGraph random_graph(const Router& router, int gpus, unsigned seed, int flows, int ring_gpus = 6, bool bounds = false) {
  std::mt19937 rng(seed), bound_rng(seed + 1000);
  std::uniform_real_distribution<double> bound_unit(0, 1);
  auto maybe_bound = [&](Flow& f) {
    if (bounds && bound_unit(bound_rng) < 0.35) f.max_rate_Bps = (0.02 + 0.58 * bound_unit(bound_rng)) * 22.5e9;
  };
  std::uniform_int_distribution<int> gpu(0, gpus - 1), kind(0, 9);
  std::uniform_real_distribution<double> unit(0, 1);
  FlowGraph g;
  for (int i = 0; i < flows; ++i) {
    Flow f;
    const int k = kind(rng);
    if (k == 0) {  // a compute step
      f.src_gpu = f.dst_gpu = gpu(rng);
      f.latency_s = 1e-4 * unit(rng);
    } else if (k == 1 && i > 8) {  // a ring channel's worth of flows
      std::vector<int> group;
      for (int m = 0; m < ring_gpus; ++m) group.push_back(gpu(rng));
      std::sort(group.begin(), group.end());
      group.erase(std::unique(group.begin(), group.end()), group.end());
      if (group.size() < 2) continue;
      const CollectiveRequest req{Op::all_reduce, group, static_cast<Bytes>(1e6 + 3e7 * unit(rng)), 2, *find_protocol("Simple"), 0};
      FlowGraph ring = find_algorithm("ring")->lower(router, req);
      const FlowId base = static_cast<FlowId>(g.flows.size());
      const FlowId after = std::uniform_int_distribution<int>(0, static_cast<int>(g.flows.size()) - 1)(rng);
      for (Flow& rf : ring.flows) {
        for (FlowId& a : rf.after) a += base;
        if (rf.after.empty()) rf.after.push_back(after);
        maybe_bound(rf);
        g.add(std::move(rf));
      }
      continue;
    } else {
      f.src_gpu = gpu(rng);
      f.dst_gpu = gpu(rng);
      if (f.src_gpu == f.dst_gpu) f.dst_gpu = (f.dst_gpu + 1) % gpus;
      const Route r = router.route(f.src_gpu, f.dst_gpu, flow_hash(f.src_gpu, f.dst_gpu, static_cast<int>(rng() % 4)));
      f.links = r.links;
      f.latency_s = r.latency_s;
      f.size_bytes = static_cast<Bytes>(1e3 + 5e7 * unit(rng) * unit(rng));
      maybe_bound(f);
    }
    const int preds = g.flows.empty() ? 0 : static_cast<int>(rng() % 4);
    for (int p = 0; p < preds; ++p)
      f.after.push_back(std::uniform_int_distribution<int>(0, static_cast<int>(g.flows.size()) - 1)(rng));
    g.add(std::move(f));
  }
  return g;
}

/// The largest difference between two runs' finish times, relative to the first's (1 us at least).
double worst_relative_difference(const std::vector<Seconds>& want, const std::vector<Seconds>& got) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(want[i], 1e-6));
  return worst;
}

}  // namespace

TEST_CASE("under latency sharing the fluid solver gives SimGrid's finish times on random flow graphs over an oversubscribed fat tree") {
  const Cluster c = test::cluster_from_yaml(test::replaced_all(oversubscribed_fat_tree(), "fabric:\n", "fabric:\n  sharing: latency\n", "the cluster"));
  REQUIRE(c.spec.fabric.sharing == Sharing::latency);
  const Router router(c);
  FabricEngine simgrid(c, Solver::simgrid_full);
  FluidSolver fluid(link_capacities_Bps(c));
  // Seeds 7 to 9 lay rings over up to 40 of the 64 GPUs: long flows whose links short flows keep
  // joining and leaving, so the solver's bundles of links split and merge all the time.
  for (unsigned seed = 1; seed <= 9; ++seed) {
    const FlowGraph g = random_graph(router, c.gpu_count(), seed, 600, seed <= 6 ? 6 : 40);
    const std::vector<Seconds> want = simgrid.run(g), got = fluid.run(g);
    REQUIRE(got.size() == want.size());
    const double worst = worst_relative_difference(want, got);
    INFO("seed " << seed << ": " << g.flows.size() << " flows, " << fluid.solves() << " solves");
    CHECK(worst < 1e-6);
    CHECK(makespan(got) > 0);
  }
}

TEST_CASE("under equal sharing the fluid solver gives SimGrid's finish times on random flow graphs") {
  // SimGrid gets each flow as its latency, then its bytes without latency (penalty 1): the rings'
  // long latencies no longer lower their shares, so they meet the short flows on equal terms.
  const Cluster c = test::cluster_from_yaml(test::replaced_all(oversubscribed_fat_tree(), "fabric:\n", "fabric:\n  sharing: equal\n", "the cluster"));
  REQUIRE(c.spec.fabric.sharing == Sharing::equal);
  const Router router(c);
  FabricEngine simgrid(c, Solver::simgrid_full);
  FluidSolver fluid(link_capacities_Bps(c), true);
  for (unsigned seed : {1u, 4u, 8u}) {
    const FlowGraph g = random_graph(router, c.gpu_count(), seed, 600, seed <= 6 ? 6 : 40);
    const std::vector<Seconds> want = simgrid.run(g), got = fluid.run(g);
    REQUIRE(got.size() == want.size());
    const double worst = worst_relative_difference(want, got);
    INFO("seed " << seed << ": " << g.flows.size() << " flows");
    CHECK(worst < 1e-6);
  }
}

namespace {

/// Random graphs with rate bounds on a third of the flows, fluid against SimGrid under `sharing`
/// (one SimGrid platform per process, so one sharing per test case).
void check_bounded_graphs(const char* sharing) {
  const Cluster c = test::cluster_from_yaml(
      test::replaced_all(oversubscribed_fat_tree(), "fabric:\n", std::string("fabric:\n  sharing: ") + sharing + "\n", "the cluster"));
  const Router router(c);
  FabricEngine simgrid(c, Solver::simgrid_full);
  FluidSolver fluid(link_capacities_Bps(c), c.spec.fabric.sharing == Sharing::equal);
  for (unsigned seed : {2u, 5u, 8u}) {
    const FlowGraph g = random_graph(router, c.gpu_count(), seed, 600, seed <= 6 ? 6 : 40, /*bounds=*/true);
    const long bounded = std::count_if(g.flows.begin(), g.flows.end(), [](const Flow& f) { return f.max_rate_Bps > 0; });
    REQUIRE(bounded > 100);
    const std::vector<Seconds> want = simgrid.run(g), got = fluid.run(g);
    REQUIRE(got.size() == want.size());
    const double worst = worst_relative_difference(want, got);
    INFO(sharing << " sharing, seed " << seed << ": " << g.flows.size() << " flows, " << bounded << " bounded");
    CHECK(worst < 1e-6);
    // The bounds bind: without them the same graph times differently (not always sooner: max-min
    // gives a freed flow's share to others, which may delay what waits on them).
    FlowGraph free = g;
    for (Flow& f : free.flows) f.max_rate_Bps = 0;
    CHECK(fluid.run(free) != got);
  }
}

}  // namespace

// The fluid solver bounds a flow with a private link in its route; SimGrid with one of a pool of
// spare links set to the bound. Rings and point-to-point flows, under both sharings.
TEST_CASE("under latency sharing, with rate bounds on a third of the flows, the fluid solver gives SimGrid's finish times") {
  check_bounded_graphs("latency");
}

TEST_CASE("under equal sharing, with rate bounds on a third of the flows, the fluid solver gives SimGrid's finish times") {
  check_bounded_graphs("equal");
}

TEST_CASE("the fluid solver gives SimGrid's iteration on every GPU's traffic of a two-node job") {
  // Two DGX-like nodes per leaf pair, eight DP groups of two (one per TP rank) after one pipeline
  // step: the gradient rings of every TP rank meet on the leaf uplinks.
  const Cluster c = test::cluster_from_yaml(oversubscribed_fat_tree());
  const Router router(c);
  IterationPlan plan;
  plan.schedule = find_schedule("1f1b");
  plan.shape = ScheduleShape{2, 4, 1, 0};
  StagePlan sp;
  sp.forward = {{SegmentKind::compute, "fwd", 1e-3}};
  sp.backward_input = {{SegmentKind::compute, "bwd", 2e-3}};
  sp.gradient_bytes = 200'000'000;
  sp.activation_bytes = 20'000'000;
  plan.stages = {sp, sp};
  plan.rank_gpu = {0, 2};
  plan.replicas = 4;
  for (int d = 0; d < 4; ++d)
    for (int r = 0; r < 2; ++r) plan.unit_gpus.push_back({16 * d + 2 * r, 16 * d + 2 * r + 1});
  for (int r = 0; r < 2; ++r) {
    plan.dp_groups.emplace_back();
    for (int t = 0; t < 2; ++t) {
      std::vector<int> group;
      for (int d = 0; d < 4; ++d) group.push_back(16 * d + 2 * r + t);
      plan.dp_groups.back().push_back(group);
    }
    plan.dp_group.push_back(plan.dp_groups.back()[0]);
    plan.tp_group.push_back({2 * r, 2 * r + 1});
  }
  plan.expert_dp_groups = {{}, {}};
  plan.overlap_grad_reduce = false;
  plan.channels = 4;
  plan.fold = FoldMode::none;
  FabricEngine reference(c, Solver::simgrid_full), ours(c, Solver::fluid);
  const Seconds want = simulate_iteration(reference, router, plan).iteration_s;
  const Seconds got = simulate_iteration(ours, router, plan).iteration_s;
  CHECK(got == Approx(want).epsilon(1e-9));
}

TEST_CASE("the fluid solver shares a link by weight, counts a link listed twice twice, and times steps without links") {
  // Two links of 1 GB/s. Flow a (latency 1 us) crosses link 0; flow b (latency 3 us) crosses
  // link 0 and link 1; flow c (latency 2 us) crosses link 1 twice (a ring's two hops on one link).
  FluidSolver fluid({1e9, 1e9});
  FlowGraph g;
  Flow a, b, c, step;
  a.links = {0};
  a.latency_s = 1e-6;
  a.size_bytes = 1'000'000;
  b.links = {0, 1};
  b.latency_s = 3e-6;
  b.size_bytes = 1'000'000;
  c.links = {1, 1};
  c.latency_s = 2e-6;
  c.size_bytes = 1'000'000;
  step.latency_s = 5e-3;
  step.after = {0};
  g.add(a);
  g.add(b);
  g.add(c);
  g.add(step);
  const std::vector<Seconds> t = fluid.run(g);
  // Weights are 1 / latency: 1e6, 1/3e6, 5e5 (c counts twice on link 1: 1e6).
  // Level x: link 0 fills at x (1e6 + 1e6/3) = 1e9 -> x = 750; link 1 at x (1e6/3 + 1e6) -> 750
  // too. Rates: a 750 MB/s, b 250 MB/s, c 375 MB/s (750 MB/s of link 1).
  // While all three move (after 3 us): a ends first, at 1e6 B minus what it sent from 1 to 3 us.
  // Closed form, stepping through the events:
  //  [1, 2) us: a alone on link 0 at 1 GB/s -> 1000 B.
  //  [2, 3) us: a on link 0 at 1 GB/s (1000 B), c alone on link 1, twice: 500 MB/s -> 500 B.
  //  from 3 us: a 750 MB/s, b 250 MB/s, c 375 MB/s.
  const double a_left = 1e6 - 2000, c_left = 1e6 - 500;
  const Seconds a_end = 3e-6 + a_left / 750e6;
  CHECK(t[0] == Approx(a_end).epsilon(1e-9));
  // After a: b alone on link 0 but shares link 1 with c: x (1e6/3 + 1e6) = 1e9 again: same rates
  // for b and c until c ends; c at 375 MB/s ends at 3 us + c_left / 375e6.
  const Seconds c_end = 3e-6 + c_left / 375e6;
  CHECK(t[2] == Approx(c_end).epsilon(1e-9));
  // Then b alone: 1 GB/s for what is left.
  const double b_left = 1e6 - 250e6 * (c_end - 3e-6);
  CHECK(t[1] == Approx(c_end + b_left / 1e9).epsilon(1e-9));
  // The step waits for a, then takes its latency, never touching a link.
  CHECK(t[3] == Approx(a_end + 5e-3).epsilon(1e-12));
}

TEST_CASE("a long flow's links split off and merge back as short flows come and go, the narrowest always binding") {
  // A flow L over links 0-7 (link 7 at 1 GB/s, the others at 2 GB/s), 3 MB, and three short flows
  // one after another: s1 on link 7 (1 MB), s2 on links 3 and 4 (1 MB), s3 on links 5 and 7
  // (0.5 MB). No latencies: every weight is 1.
  FluidSolver fluid({2e9, 2e9, 2e9, 2e9, 2e9, 2e9, 2e9, 1e9});
  FlowGraph g;
  Flow ring, s1, s2, s3;
  ring.links = {0, 1, 2, 3, 4, 5, 6, 7};
  ring.size_bytes = 3'000'000;
  s1.links = {7};
  s1.size_bytes = 1'000'000;
  s2.links = {3, 4};
  s2.size_bytes = 1'000'000;
  s2.after = {1};
  s3.links = {5, 7};
  s3.size_bytes = 500'000;
  s3.after = {2};
  g.add(ring);
  g.add(s1);
  g.add(s2);
  g.add(s3);
  const std::vector<Seconds> t = fluid.run(g);
  // [0, 2) ms: L and s1 halve link 7: 0.5 GB/s each; s1 ends at 2 ms, L has sent 1 MB.
  CHECK(t[1] == Approx(2e-3).epsilon(1e-12));
  // [2, 3) ms: link 7 bounds L at 1 GB/s again; s2 takes the 1 GB/s L leaves of links 3 and 4:
  // ends at 3 ms, L at 2 MB.
  CHECK(t[2] == Approx(3e-3).epsilon(1e-12));
  // [3, 4) ms: L and s3 halve link 7 again: s3 ends at 4 ms, L at 2.5 MB; then L alone at 1 GB/s.
  CHECK(t[3] == Approx(4e-3).epsilon(1e-12));
  CHECK(t[0] == Approx(4.5e-3).epsilon(1e-12));
  // Run twice on one solver: the links' state left by a run is clean for the next.
  CHECK(fluid.run(g) == t);
}

// A data-parallel ring's channel is one flow over every NIC of its group, and pipeline transfers
// come and go on those NICs all iteration long. Under equal sharing each NIC with one transfer
// holds the ring at half its bandwidth: where the transfer on the ring's bottleneck ends, another
// holds it as tightly, and nothing needs re-solving. The solver's work is counted here because it
// is what a whole-cluster replay at dp 484 spent its minutes on (simulator/README.md).
namespace {

constexpr int kRingLinks = 16;

/// Flow 0: a 100 MB ring over links 0 to 15 (1 GB/s each, under equal sharing); flow l + 1: a
/// transfer of transfer_bytes(l) on link l alone.
template <typename BytesOf>
FlowGraph ring_beside_transfers(BytesOf transfer_bytes) {
  FlowGraph g;
  Flow ring;
  for (int l = 0; l < kRingLinks; ++l) ring.links.push_back(l);
  ring.size_bytes = 100'000'000;
  g.add(ring);
  for (int l = 0; l < kRingLinks; ++l) {
    Flow t;
    t.links = {l};
    t.size_bytes = transfer_bytes(l);
    g.add(t);
  }
  return g;
}

}  // namespace

TEST_CASE("a transfer ending on a ring's bottleneck, where another link holds the ring as tightly, re-solves nothing") {
  constexpr int kLinks = kRingLinks;
  FluidSolver fluid(std::vector<double>(kLinks, 1e9), /*equal_shares=*/true);
  // The solver breaks ties between equally tight links by the order it made their bundles (link
  // 15's last, in the ring's own; then links 0, 1, ...): the transfers end in that order, so each
  // in turn is on the ring's bottleneck when it ends.
  const FlowGraph g = ring_beside_transfers([](int l) { return l == kLinks - 1 ? 1'000'000LL : (l + 2) * 1'000'000LL; });
  const std::vector<Seconds> t = fluid.run(g);
  // Every link halves between the ring and its transfer (0.5 GB/s each) while a transfer runs:
  // link 15's ends at 2 ms, link l's at 2 (l + 2) ms, the last at 32 ms; the ring, 16 MB sent by
  // then, takes the other 84 MB alone at 1 GB/s.
  CHECK(t[kLinks] == Approx(2e-3).epsilon(1e-12));
  for (int l = 0; l + 1 < kLinks; ++l) CHECK(t[static_cast<std::size_t>(l) + 1] == Approx(2e-3 * (l + 2)).epsilon(1e-12));
  CHECK(t[0] == Approx(116e-3).epsilon(1e-12));
  // One solve for the start and one for the ring rising at the end; each transfer's end in
  // between finds the ring held at the next link. Re-solving the ring at each would be 16.
  INFO(fluid.solves() << " solves");
  CHECK(fluid.solves() <= 3);
}

// When the ring does rise, every transfer beside it on a full link must yield, not only the one at
// the link that held it: all are solved with it at once, not one link per step.
TEST_CASE("a rising ring takes its share from every transfer beside it in one step") {
  constexpr int kLinks = kRingLinks;
  FluidSolver fluid(std::vector<double>(kLinks, 1e9), /*equal_shares=*/true);
  FlowGraph g = ring_beside_transfers([](int) { return 50'000'000LL; });
  Flow extra;  // a third flow on link 0, which holds the ring at a third until it ends
  extra.links = {0};
  extra.size_bytes = 1'000'000;
  const FlowId x = g.add(extra);
  const std::vector<Seconds> t = fluid.run(g);
  // [0, 3) ms: link 0 splits three ways (1/3 GB/s each), the ring runs at that everywhere, and
  // the other transfers take the 2/3 GB/s it leaves. Then the ring and every transfer halve every
  // link: transfer 0 (1 MB sent) ends 98 ms later, the others (2 MB sent) 96 ms later; the ring,
  // 50 MB sent at 101 ms, takes the other 50 MB alone.
  CHECK(t[static_cast<std::size_t>(x)] == Approx(3e-3).epsilon(1e-12));
  CHECK(t[1] == Approx(101e-3).epsilon(1e-12));
  for (int l = 1; l < kLinks; ++l) CHECK(t[static_cast<std::size_t>(l) + 1] == Approx(99e-3).epsilon(1e-12));
  CHECK(t[0] == Approx(151e-3).epsilon(1e-12));
  INFO(fluid.solves() << " solves");
  CHECK(fluid.solves() <= 6);
}

TEST_CASE("a flow's rate bound holds it below its links' share, and what it leaves goes to the flows beside it") {
  // One link of 1 GB/s under equal sharing. a: 1 MB bounded at 200 MB/s; b: 1 MB unbounded;
  // c: two copies of 0.5 MB, each bounded at 100 MB/s, on a link of its own. No latencies.
  FluidSolver fluid({1e9, 1e9}, /*equal_shares=*/true);
  FlowGraph g;
  Flow a, b, c;
  a.links = {0};
  a.size_bytes = 1'000'000;
  a.max_rate_Bps = 200e6;
  b.links = {0};
  b.size_bytes = 1'000'000;
  c.links = {1};
  c.size_bytes = 500'000;
  c.copies = 2;
  c.max_rate_Bps = 100e6;
  g.add(a);
  g.add(b);
  g.add(c);
  g.add(a);  // the same bounded flow again: its own bound, not a share of the first one's
  const std::vector<Seconds> t = fluid.run(g);
  // Max-min: the two a flows are held at 200 MB/s each, b takes the 600 MB/s left of link 0 and
  // ends at 1 MB / 600 MB/s; then the a flows, at their bound still, end at 1 MB / 200 MB/s.
  CHECK(t[1] == Approx(1e6 / 600e6).epsilon(1e-12));
  CHECK(t[0] == Approx(1e6 / 200e6).epsilon(1e-12));
  CHECK(t[3] == Approx(1e6 / 200e6).epsilon(1e-12));
  // Each copy of c moves at its own bound: 0.5 MB at 100 MB/s, however idle its link.
  CHECK(t[2] == Approx(0.5e6 / 100e6).epsilon(1e-12));
  // The private links go with the run: the same graph again gives the same times, and a graph
  // without bounds gets the links alone.
  CHECK(fluid.run(g) == t);
  FlowGraph free;
  b.max_rate_Bps = 0;
  free.add(b);
  CHECK(fluid.run(free)[0] == Approx(1e6 / 1e9).epsilon(1e-12));
}

TEST_CASE("run --solver picks the solver, gives SimGrid's iteration, and takes only the solvers listed") {
  const std::string scenario = test::source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  const nlohmann::json ours = test::cli_json("run " + scenario + " --fold exact");
  const nlohmann::json reference = test::cli_json("run " + scenario + " --fold exact --solver simgrid-full");
  CHECK(test::relative_error(ours["iteration_s"].get<double>(), reference["iteration_s"].get<double>()) < 1e-9);
  const test::CliResult bad = test::run_cli("run " + scenario + " --solver exact");
  CHECK(bad.exit_code == 2);
  CHECK(bad.stderr_text.find("--solver: expected one of fluid, simgrid, simgrid-full, got 'exact'") != std::string::npos);
  CHECK(test::run_cli("list").stdout_text.find("simgrid-full") != std::string::npos);
  // bench times whole-cluster replay with the same --fold words as run.
  const test::CliResult fold = test::run_cli("bench --fold some --scenarios " + scenario);
  CHECK(fold.exit_code == 2);
  CHECK(fold.stderr_text.find("--fold: expected exact, none, all or assume, got 'some'") != std::string::npos);
}
