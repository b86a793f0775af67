// Several jobs on one cluster: their traffic shares the fabric in one engine run. Closed forms on a
// fat tree whose leaves have one uplink each: a job's gradient ring crossing it shares it with the
// other job's ring, and nothing else changes, so together - alone is the other job's bytes through
// the uplink over its bandwidth; on disjoint leaves nothing is shared and nothing changes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>

#include "json_schema.hpp"
#include "simulator/engine.hpp"
#include "simulator/multi_job.hpp"
#include "support.hpp"
#include "topologies/background_traffic.hpp"
#include "workloads/plan_iteration.hpp"

using namespace clustersim;

namespace {

/// Four one-GPU nodes, two per leaf; each leaf has one 50 GB/s uplink to the one spine (2:1), as
/// fast as a NIC; every efficiency 1.
const char* const kOneUplinkYaml = R"(
name: one-uplink-fat-tree
gpu: H100-SXM
link_types:
  nvlink: {bandwidth_efficiency: 1.0}
  net: {bandwidth_efficiency: 1.0}
  pcie: {bandwidth_efficiency: 1.0}
node:
  gpus: 1
  scale_up: {topology: nvswitch, link_type: nvlink, bandwidth_GBps: 400, latency_us: 0.1}
  nics: {count: 1, link_type: net, bandwidth_Gbps: 400, latency_us: 0.7, gpus: [0]}
  pcie: {link_type: pcie, bandwidth_GBps: 100, latency_us: 0.4}
fabric:
  type: fat_tree
  nodes: 4
  link_type: net
  bandwidth_Gbps: 400
  latency_us: 0.3
  tiers:
    - {radix: 3, oversubscription: 2}
    - {radix: 2}
)";

/// Two copies of Megatron's 1.7B on 2 GPUs each (dp 2, gradients all-reduced in one piece after
/// the last backward), placed as `a` and `b` say; `extra` is appended to the jobs file.
std::string two_jobs(const std::string& a, const std::string& b, const std::string& extra = "") {
  const std::string job = test::small_megatron_scenario("multi-job", kOneUplinkYaml,
                                                        "{tp: 1, pp: 1, dp: 2, overlap_grad_reduce: false}");
  const std::string dir = job.substr(0, job.rfind('/'));
  std::ofstream(dir + "/jobs.yaml") << "name: two-jobs\ncluster: clusters/cluster.yaml\njobs:\n"
                                    << "  - {name: a, scenario: scenario.yaml, set: [gpus=2], placement: " << a << "}\n"
                                    << "  - {name: b, scenario: scenario.yaml, set: [gpus=2], placement: " << b << "}\n"
                                    << extra;
  return dir + "/jobs.yaml";
}

/// Bytes each link direction carries for a job's data-parallel ring, lowered as the engine lowers it.
std::map<LinkDir, double> ring_bytes(const Router& router, const IterationPlan& plan) {
  std::map<LinkDir, double> out;
  for (const auto& group : plan.dp_groups[0]) {
    const CollectiveRequest req{Op::all_reduce, group, plan.stages[0].gradient_bytes, plan.channels,
                                *find_protocol("Simple"), 0};
    for (const Flow& f : find_algorithm("ring")->lower(router, req).flows)
      for (LinkDir l : f.links) out[l] += static_cast<double>(f.size_bytes);
  }
  return out;
}

}  // namespace

TEST_CASE("two jobs interleaved over the same leaves slow each other by the other's bytes through the uplink") {
  const JobsScenario js = load_jobs_scenario(two_jobs("scattered", "scattered"));
  REQUIRE(js.jobs[0].nodes == std::vector<int>{0, 2});  // one node on each leaf: its ring crosses the uplinks
  REQUIRE(js.jobs[1].nodes == std::vector<int>{1, 3});
  const std::vector<JobOutcome> out = run_jobs(js);
  const Cluster cluster = shared_cluster(js);
  const Router router(cluster);
  std::vector<std::map<LinkDir, double>> bytes;
  for (const JobSpec& j : js.jobs) {
    IterationPlan plan = plan_iteration(j.scenario);
    place_plan(plan, j.nodes, 1);
    bytes.push_back(ring_bytes(router, plan));
  }
  // Max-min: the uplink, as fast as a NIC, is the ring's bottleneck alone and more so together; the
  // flows on it share it alike and end together, so the phase is latency + its bytes / bandwidth.
  Seconds alone = 0, together = 0, shared_bytes = 0;
  for (const auto& [l, b] : bytes[0]) {
    const double capacity = cluster.effective_bandwidth_Bps(link_of(l));
    const double other = bytes[1].count(l) ? bytes[1].at(l) : 0;
    alone = std::max(alone, b / capacity);
    together = std::max(together, (b + other) / capacity);
    shared_bytes = std::max(shared_bytes, other);
  }
  // A ring all-reduce of S bytes over 2 GPUs sends 2 (n - 1) / n x S = S each way.
  const double gradient = static_cast<double>(plan_iteration(js.jobs[1].scenario).stages[0].gradient_bytes);
  CHECK(shared_bytes == Approx(gradient).epsilon(1e-12));
  CHECK(together - alone == Approx(gradient / 50e9).epsilon(1e-12));
  for (const JobOutcome& r : out) {
    CHECK(r.together.iteration_s - r.alone.iteration_s == Approx(together - alone).epsilon(1e-9));
    CHECK(r.together.iteration.simulated_replicas == 2);
  }
  CHECK(out[0].alone.iteration_s == Approx(out[1].alone.iteration_s).epsilon(1e-12));  // mirror images
}

TEST_CASE("two jobs on disjoint leaves do not slow each other") {
  const JobsScenario js = load_jobs_scenario(two_jobs("rail-aligned", "rail-aligned"));
  REQUIRE(js.jobs[0].nodes == std::vector<int>{0, 1});  // whole leaves: leaf 0, then leaf 1
  REQUIRE(js.jobs[1].nodes == std::vector<int>{2, 3});
  for (const JobOutcome& r : run_jobs(js)) {
    CHECK(std::abs(r.slowdown()) < 1e-9);
    CHECK(r.alone.iteration_s > 0.1);  // the gradient ring took real time, within the leaf
  }
}

TEST_CASE("background traffic at rate R on a link of capacity C leaves a flow alone on it C - R") {
  Cluster cluster = test::cluster_from_yaml(kOneUplinkYaml);
  BackgroundTraffic storage;
  storage.link.name = "leaf0-spine0";
  storage.rate_Bps = 20e9;
  const LinkId uplink = links_named(cluster, storage.link).front();
  const double capacity = cluster.effective_bandwidth_Bps(uplink);
  REQUIRE(capacity == 50e9);
  apply_background(cluster, {storage});
  CHECK(cluster.effective_bandwidth_Bps(uplink) == Approx(capacity - 20e9).epsilon(1e-15));
  const Router router(cluster);
  FabricEngine engine(cluster);
  const Route r = router.route(0, 2, 0);  // node 0 on leaf 0 to node 2 on leaf 1: over the uplink
  REQUIRE(std::any_of(r.links.begin(), r.links.end(), [&](LinkDir l) { return link_of(l) == uplink; }));
  FlowGraph g;
  g.add(test::flow_on(r, 0, 2, 3'000'000'000));
  // Every other link of the route runs at 50 GB/s or more: the uplink's 30 GB/s bounds it.
  CHECK(engine.run(g)[0] == Approx(r.latency_s + 3e9 / 30e9).epsilon(1e-12));
}

TEST_CASE("run --json on a jobs scenario conforms to run.schema.json, and the text has a row per job") {
  const std::string path = two_jobs("scattered", "{nodes: [1, 3]}", "background:\n  - {link: leaf1-spine0, rate_GBps: 5}\n");
  const nlohmann::json j = test::cli_json("run " + path);
  const auto problems = test::schema_problems(
      nlohmann::json::parse(test::read_file(test::source_path("simulator/schemas/run.schema.json"))), j);
  for (const std::string& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  REQUIRE(j.at("jobs").size() == 2);
  CHECK(j.at("jobs")[1].at("placement") == "nodes");
  CHECK(j.at("jobs")[1].at("nodes") == nlohmann::json::array({1, 3}));
  CHECK(j.at("config").at("background")[0].at("rate_GBps") == 5);
  for (const auto& job : j.at("jobs"))
    CHECK(job.at("slowdown").get<double>() ==
          Approx(job.at("together_s").get<double>() / job.at("alone_s").get<double>() - 1).epsilon(1e-12));
  const test::CliResult text = test::run_cli("run " + path);
  CHECK(text.exit_code == 0);
  CHECK(text.stdout_text.find("\n  a ") != std::string::npos);
  CHECK(text.stdout_text.find("\n  b ") != std::string::npos);
  CHECK(text.stdout_text.find("5.000 GB/s on leaf1-spine0") != std::string::npos);
}

TEST_CASE("a job written inline reads as the same job from a file does, and a path job takes the shared cluster") {
  const std::string path = two_jobs("contiguous", "{nodes: [3, 2]}");
  const std::string dir = path.substr(0, path.rfind('/'));
  std::ofstream(dir + "/inline.yaml")
      << "name: inline\ncluster: clusters/cluster.yaml\njobs:\n"
      << "  - name: a\n    model: " << test::source_path("scenarios/models/megatron-1.7b.yaml") << "\n"
      << "    gpus: 2\n    parallel: {tp: 1, pp: 1, dp: 2, overlap_grad_reduce: false}\n    schedule: 1f1b\n"
      << "    global_batch: 16\n    microbatch: 1\n    precision: bf16\n    recompute: selective\n    placement: rail-aligned\n";
  const JobsScenario from_file = load_jobs_scenario(path), inline_job = load_jobs_scenario(dir + "/inline.yaml");
  const ScenarioSpec& f = from_file.jobs[0].scenario;
  const ScenarioSpec& i = inline_job.jobs[0].scenario;
  CHECK(i.gpus() == f.gpus());
  CHECK(i.layout.dp == f.layout.dp);
  CHECK(i.microbatches() == f.microbatches());
  CHECK(i.cluster.name == "one-uplink-fat-tree");
  CHECK(from_file.jobs[0].nodes == std::vector<int>{0, 1});
  CHECK(from_file.jobs[1].nodes == std::vector<int>{3, 2});  // a node list keeps its order
  CHECK(inline_job.jobs[0].nodes == std::vector<int>{0, 1});
  const JobsScenario ranged = load_jobs_scenario(two_jobs("scattered", "{nodes: [\"1-2\"]}"));
  CHECK(ranged.jobs[1].nodes == std::vector<int>{1, 2});  // a range, placed first
  CHECK(ranged.jobs[0].nodes == std::vector<int>{0, 3});  // what the list leaves
}

TEST_CASE("the shipped two-job example loads: 512 GPUs each, interleaved node by node") {
  const JobsScenario js = load_jobs_scenario(test::source_path("scenarios/procurement/two-jobs-4to1.yaml"));
  REQUIRE(js.jobs.size() == 2);
  for (const JobSpec& j : js.jobs) {
    CHECK(j.scenario.gpus() == 512);
    CHECK(j.scenario.layout.dp == 16);
    CHECK(j.nodes.size() == 64);
  }
  CHECK(js.jobs[0].nodes[1] == 2);
  CHECK(js.jobs[1].nodes[0] == 1);
}

TEST_CASE("jobs run iterations back to back: in phase they repeat the first, apart each is its alone time") {
  const std::vector<JobOutcome> once = run_jobs(load_jobs_scenario(two_jobs("scattered", "scattered")));
  const JobsScenario js = load_jobs_scenario(two_jobs("scattered", "scattered", "iterations: 3\n"));
  REQUIRE(js.iterations == 3);
  const std::vector<JobOutcome> three = run_jobs(js);
  for (std::size_t j = 0; j < 2; ++j) {
    REQUIRE(three[j].together_iterations_s.size() == 3);
    // Identical jobs stay in phase: every iteration meets the other's ring as the first did.
    for (Seconds t : three[j].together_iterations_s) CHECK(t == Approx(once[j].together.iteration_s).epsilon(1e-9));
    CHECK(three[j].together.iteration_s == Approx(once[j].together.iteration_s).epsilon(1e-9));
    CHECK(three[j].together.iteration.iteration_s == Approx(once[j].together.iteration.iteration_s).epsilon(1e-9));
  }
  // Apart, the barrier between iterations costs nothing: each is the job alone.
  for (const JobOutcome& r : run_jobs(load_jobs_scenario(two_jobs("rail-aligned", "rail-aligned", "iterations: 3\n"))))
    for (Seconds t : r.together_iterations_s) CHECK(t == Approx(r.alone.iteration_s).epsilon(1e-9));
}

TEST_CASE("jobs of different step times meet out of phase, which one iteration from t = 0 misses") {
  // Job b takes 2.5 times the microbatches: its gradient ring, at the end of its step, comes about
  // when job a's second iteration ends, not its first.
  const std::string file = two_jobs("scattered", "scattered", "iterations: 4\n");
  const JobsScenario js = load_jobs_scenario(file, {"b.global_batch=40"});  // 20 microbatches a replica against a's 8
  const std::vector<JobOutcome> out = run_jobs(js);
  const JobOutcome& a = out[0];
  REQUIRE(out[1].alone.iteration_s > 1.8 * a.alone.iteration_s);
  INFO("a alone " << a.alone.iteration_s << ", together " << a.together_iterations_s[0] << " " << a.together_iterations_s[1] << " " << a.together_iterations_s[2] << " " << a.together_iterations_s[3] << ", b alone " << out[1].alone.iteration_s);
  const Seconds ring_alone = static_cast<double>(plan_iteration(js.jobs[0].scenario).stages[0].gradient_bytes) / 50e9;
  CHECK(a.together_iterations_s[0] == Approx(a.alone.iteration_s).epsilon(1e-9));  // b still computing
  const Seconds worst = *std::max_element(a.together_iterations_s.begin(), a.together_iterations_s.end());
  CHECK(worst > a.alone.iteration_s + 0.1 * ring_alone);  // a later iteration meets b's ring
  CHECK(worst <= a.alone.iteration_s + ring_alone * (1 + 1e-9));  // never worse than meeting all of it
  CHECK(a.together.iteration_s > a.alone.iteration_s);
}
