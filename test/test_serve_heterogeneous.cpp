// `clustersim serve` on a cluster of two GPU models (scenarios/heterogeneous/h100-h200-fat-tree.yaml:
// nodes 0-15 H100, 16-31 H200): each pool on its named model, each model's replicas at its own speed
// and KV capacity, and the mistakes a user can make naming them.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "one_line_error.hpp"
#include "simulator/cluster_cost.hpp"
#include "simulator/serve_sim.hpp"
#include "topologies/cluster.hpp"
#include "support.hpp"
#include "workloads/gpu_catalog.hpp"

using namespace clustersim;
using test::source_path;

namespace {

const std::string kRequests =
    "  requests: {arrival: poisson, rate_per_s: 3, duration_s: 20, prompt_tokens: {min: 1024, max: 3072}, "
    "output_tokens: {min: 64, max: 256}, seed: 7}\n";

/// A Llama 3 70B fleet of tp 8 replicas on `cluster` (a path), its `serving:` lines after parallel.
std::string fleet(const std::string& cluster, const std::string& serving, const std::string& top = "") {
  return test::temp_file("name: het\ncluster: " + cluster + "\nmodel: " + source_path("scenarios/models/llama3-70b.yaml") +
                         "\ncatalog: " + source_path("scenarios/gpus.yaml") + "\n" + top + "serving:\n  parallel: {tp: 8}\n" +
                         serving + kRequests);
}

const std::string kHet = source_path("scenarios/heterogeneous/h100-h200-fat-tree.yaml");

/// The heterogeneous cluster's design with every node an H200: the fleet's placement aside, the
/// cluster a `serving.gpu: H200-SXM` fleet must see.
std::string all_h200() {
  std::ifstream in(kHet);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("node_groups:", 0) == 0 || line.rfind("  - {gpu: H200", 0) == 0) continue;
    out += (line == "gpu: H100-SXM" ? "gpu: H200-SXM" : line) + "\n";
  }
  return test::temp_file(out);
}

}  // namespace

TEST_CASE("serve: a fleet named onto the H200 nodes serves exactly as on a cluster of H200s", "[serve][heterogeneous]") {
  const ServingSpec het = load_serving(fleet(kHet, "  replicas: 2\n  gpu: H200-SXM\n"));
  const ServingSpec ref = load_serving(fleet(all_h200(), "  replicas: 2\n"));
  REQUIRE(het.placement.size() == 2);
  CHECK(het.placement[0].gpus.front() == 16 * 8);  // the first H200 node's first GPU
  CHECK(het.placement[1].gpus.front() == 17 * 8);
  CHECK(het.placement[1].gpu == "H200-SXM");
  CHECK(ref.placement[0].gpus.front() == 0);
  const ServeResult a = simulate_serving(het), b = simulate_serving(ref);
  CHECK(a.memory.blocks == b.memory.blocks);
  REQUIRE(a.requests.size() == b.requests.size());
  REQUIRE(a.requests.size() > 30);
  for (std::size_t i = 0; i < a.requests.size(); ++i) {  // the same iterations, to the last bit
    CHECK(a.requests[i].first_token_s == b.requests[i].first_token_s);
    CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
  }
  CHECK(het.gpus_text() == "16 H200-SXM");
}

TEST_CASE("serve: prefill on H100s and decode on H200s (Splitwise): each pool its own KV blocks and speed", "[serve][heterogeneous]") {
  const std::string pools = "  disaggregated: {prefill_replicas: 1, decode_replicas: 2, prefill_gpu: H100-SXM, decode_gpu: ";
  const ServingSpec split = load_serving(fleet(kHet, pools + "H200-SXM}\n"));
  const ServingSpec h100 = load_serving(fleet(kHet, pools + "H100-SXM}\n"));
  REQUIRE(split.placement.size() == 3);
  CHECK(split.placement[0].gpu == "H100-SXM");
  CHECK(split.placement[0].gpus.front() == 0);
  CHECK(split.placement[1].gpus.front() == 128);  // decode skips the H100 nodes
  CHECK(split.placement[2].gpus.front() == 136);
  CHECK(split.gpus_text() == "8 H100-SXM + 16 H200-SXM");
  CHECK(h100.placement[1].gpus.front() == 8);

  const ServeResult r = simulate_serving(split), base = simulate_serving(h100);
  REQUIRE(r.memory_by_gpu.size() == 2);
  // Each model's blocks: HBM x 0.9 less the same weights and workspace, over the same block bytes.
  const GpuCatalog catalog = load_gpu_catalog(source_path("scenarios/gpus.yaml"));
  for (const auto& [name, mem] : r.memory_by_gpu) {
    INFO(name);
    const GpuModel& g = *catalog.find(name);
    CHECK(mem.usable_bytes == Bytes(std::floor(double(g.hbm_bytes) * 0.9)));
    CHECK(mem.blocks == long((mem.usable_bytes - mem.weight_bytes - mem.workspace_bytes) / mem.block_bytes));
    CHECK(mem.weight_bytes == r.memory.weight_bytes);
  }
  CHECK(r.memory_by_gpu[1].second.blocks > 19 * r.memory_by_gpu[0].second.blocks / 10);  // 141 GB against 80 GB

  // The prefill pool is the same H100 replica in both runs, so every first token comes at the same
  // time; decoding on H200s is faster, but never by more than its HBM bandwidth (decode streams the
  // weights and the KV cache).
  REQUIRE(r.requests.size() == base.requests.size());
  double tpot = 0, tpot_base = 0;
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    CHECK(r.requests[i].first_token_s == base.requests[i].first_token_s);
    const auto per_token = [](const RequestState& q) { return (q.finish_s - q.first_token_s) / double(q.generated - 1); };
    tpot += per_token(r.requests[i]);
    tpot_base += per_token(base.requests[i]);
  }
  const double bandwidth_ratio = catalog.find("H100-SXM")->hbm_bandwidth_Bps / catalog.find("H200-SXM")->hbm_bandwidth_Bps;
  CHECK(tpot < 0.95 * tpot_base);
  CHECK(tpot > bandwidth_ratio * tpot_base);
}

TEST_CASE("serve on a heterogeneous cluster: the header and JSON name each model's GPUs", "[serve][heterogeneous]") {
  const std::string file = fleet(kHet, "  disaggregated: {prefill_replicas: 1, decode_replicas: 2, decode_gpu: H200-SXM}\n");
  const test::CliResult r = test::run_cli("serve " + file);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Catch::Matchers::Contains("8 H100-SXM + 16 H200-SXM)"));
  CHECK_THAT(r.stdout_text, Catch::Matchers::Contains("prefill on 1 x H100-SXM, decode on 2 x H200-SXM"));
  CHECK_THAT(r.stdout_text, Catch::Matchers::Contains("memory per GPU on H200-SXM:"));
  const nlohmann::json j = test::cli_json("serve " + file);
  CHECK(j["config"]["replica_gpus"] == nlohmann::json({"H100-SXM", "H200-SXM", "H200-SXM"}));
  CHECK(j["memory_by_gpu"].size() == 2);
}

TEST_CASE("serve: GPU models named wrongly are refused at their field", "[serve][heterogeneous][bad-input]") {
  using test::require_one_line_error;
  const std::string unknown = fleet(kHet, "  replicas: 1\n  gpu: B200\n");
  require_one_line_error(test::run_cli("serve " + unknown), "error: " + unknown + ":8: serving.gpu:",
                         "expected a GPU model of the cluster h100-h200-fat-tree: H100-SXM or H200-SXM");
  const std::string homogeneous = fleet(source_path("scenarios/clusters/dgx-h100-superpod.yaml"), "  replicas: 1\n  gpu: H200-SXM\n");
  require_one_line_error(test::run_cli("serve " + homogeneous), "error: " + homogeneous + ":8: serving.gpu:",
                         "expected a GPU model of the cluster");
  const std::string full = fleet(kHet, "  disaggregated: {prefill_replicas: 1, decode_replicas: 17, decode_gpu: H200-SXM}\n");
  require_one_line_error(test::run_cli("serve " + full), "error: " + full + ":7: serving.disaggregated.decode_gpu:",
                         "expected replicas that fit the cluster's free H200-SXM GPUs: 17 replicas x 8 GPUs need 136, 128 are free");
  // tp 8 pp 3: replica 5 holds GPUs 120-143, node 15's H100s and nodes 16-17's H200s.
  const std::string straddle = test::temp_file(
      "name: het\ncluster: " + kHet + "\nmodel: " + source_path("scenarios/models/llama3-70b.yaml") + "\ncatalog: " +
      source_path("scenarios/gpus.yaml") + "\nserving:\n  parallel: {tp: 8, pp: 3}\n  replicas: 6\n" + kRequests);
  require_one_line_error(test::run_cli("serve " + straddle), "error: " + straddle + ":7: serving.replicas:",
                         "expected every replica on one GPU model: replica 5's GPUs 120-143 hold H100-SXM and H200-SXM");
}

TEST_CASE("a cluster of two models is priced per model's servers, and a fleet pays for its own", "[serve][heterogeneous][cost]") {
  const ServingSpec s = load_serving(fleet(kHet, "  disaggregated: {prefill_replicas: 1, decode_replicas: 2, decode_gpu: H200-SXM}\n"));
  const PriceCatalog prices = load_price_catalog(source_path("scenarios/prices.yaml"));
  const BillOfMaterials bom = bill_of_materials(build_cluster(s.cluster));
  const ClusterCost cost = price_cluster(bom, s.cluster, prices, s.node_groups);
  const ClusterCost as_h100 = price_cluster(bom, s.cluster, prices);  // the groups left out: every node an H100
  const auto server = [&](const std::string& name) {
    for (const ServerPrice& p : prices.servers)
      if (p.name == name) return p.price_usd;
    FAIL("no server " << name);
    return 0.0;
  };
  const double h100 = server("DGX H100"), h200 = server("HGX H200 server");
  CHECK(cost.capital_usd == Approx(as_h100.capital_usd + 16 * (h200 - h100)));
  // The fleet: one H100 node and two H200 nodes, and 24 of the 256 GPUs' share of the fabric.
  const ClusterCost fleet = fleet_share(cost, {{"H100-SXM", 8}, {"H200-SXM", 16}}, 8);
  const double fabric = as_h100.capital_usd - 32 * h100;
  CHECK(fleet.capital_usd == Approx(h100 + 2 * h200 + fabric * 24 / 256));
  // On one model the share is the GPUs' share of the whole.
  const ClusterCost one = fleet_share(as_h100, {{"H100-SXM", 24}}, 8);
  CHECK(one.capital_usd == Approx(as_h100.capital_usd * 24 / 256));
  CHECK(one.power_W == Approx(as_h100.power_W * 24 / 256));
}
