// NCCL's tuner (collectives/tuner_nccl.hpp) against NCCL 2.30.7's cost model worked by hand
// (src/graph/tuning.cc, tag v2.30.7-1). Each expectation is written out from the model's terms:
//   algorithm bandwidth = channels x per-channel bandwidth x protocol factor (capped) x bus-to-algo ratio
//   latency = base + hops x hop latency (NVLink hops inside a node, network hops across nodes)
//   time = latency + size / bandwidth (ncclTopoGetAlgoTime), tree bandwidth x a size-class factor.
// The per-channel bandwidths come from the shipped clusters' calibrated link rates.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "collectives/tuner_nccl.hpp"
#include "support.hpp"

using namespace clustersim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::string kH100 = "scenarios/clusters/dgx-h100-superpod.yaml";
const std::string kA100 = "scenarios/clusters/dgx-a100-superpod.yaml";

std::vector<int> first(int n) {
  std::vector<int> out;
  for (int g = 0; g < n; ++g) out.push_back(g);
  return out;
}

// DGX H100: NVLink 450 GB/s x 0.822, eight NDR NICs of 50 GB/s x 0.94 (PCIe 64 GB/s is not the
// bottleneck), 16 channels (two per NIC).
constexpr double kH100Intra_GBps = 450 * 0.822;
constexpr double kH100Inter_GBps = 8 * 50 * 0.94;

/// Relative agreement to float rounding.
void check_close(double got, double want) {
  INFO("got " << got << ", want " << want);
  CHECK(std::abs(got - want) <= 1e-9 * std::abs(want));
}

}  // namespace

TEST_CASE("the tuner reads NCCL's communicator off the cluster: bandwidths, nodes, NVLS heads, generation") {
  const Cluster& c = test::shipped_cluster(kH100);
  const NcclTopology t = nccl_topology(c, first(16), 16);
  CHECK(t.ranks == 16);
  CHECK(t.nodes == 2);
  CHECK(t.channels == 16);
  CHECK(t.nvls_channels == 8);
  CHECK(t.generation == GpuGeneration::hopper);
  check_close(t.intra_GBps, kH100Intra_GBps);
  check_close(t.inter_GBps, kH100Inter_GBps);
  // One GPU of each of four nodes: its own NIC only, and no NVLS (one GPU a node).
  const NcclTopology one = nccl_topology(c, {0, 8, 16, 24}, 16);
  CHECK(one.nodes == 4);
  CHECK(one.nvls_channels == 0);
  check_close(one.inter_GBps, 50 * 0.94);
  CHECK(gpu_generation("A100-SXM-80GB") == GpuGeneration::ampere);
  CHECK(gpu_generation("B200") == GpuGeneration::blackwell);
  CHECK(gpu_generation("GB200") == GpuGeneration::blackwell);
  CHECK(gpu_generation("H200-SXM") == GpuGeneration::hopper);
}

TEST_CASE("tree LL all-reduce on two H100 nodes: LL's cap, tree's halving, NVLink and network hops") {
  const NcclTopology t = nccl_topology(test::shipped_cluster(kH100), first(16), 16);
  // Per channel: min(intra / 16, 2 x inter / 16) (a 2-node tree); all 16: 369.9 GB/s. Tree
  // all-reduce: x 0.92 (capped at 16 x 41.4); LL: / 3.8, capped at 39.0 (2 nodes, Intel); x 0.5.
  const double bus = std::min(kH100Intra_GBps * 0.92, 16 * 41.4);
  const double bw = std::min(bus / 3.8, 39.0) * 0.5;
  // 6.8 base + 2 x (7 NVLink hops x 0.6 + log2(2) network hops x 5.0).
  const double lat_us = 6.8 + 2 * (7 * 0.6 + 1 * 5.0);
  const NcclCost cost = nccl_cost(t, Op::all_reduce, "tree", "LL");
  check_close(cost.bandwidth_GBps, bw);
  check_close(cost.latency_us, lat_us);
  // 8 B is below the first size class (64 B): no correction. 64 KiB is class log2(1024) = 10: LL x 0.6.
  check_close(*nccl_predicted_time(t, Op::all_reduce, "tree", "LL", 8), (lat_us + 8 / (1000 * bw)) * 1e-6);
  check_close(*nccl_predicted_time(t, Op::all_reduce, "tree", "LL", 65536),
              (lat_us + 65536 / (1000 * bw * 0.6)) * 1e-6);
}

TEST_CASE("ring Simple all-reduce on two H100 nodes: n / 2(n-1), network posts, the plateau") {
  const NcclTopology t = nccl_topology(test::shipped_cluster(kH100), first(16), 16);
  const double bw = std::min(kH100Intra_GBps, kH100Inter_GBps) * 16.0 / 30.0;
  // 8.4 base; 28 NVLink steps at max(3.4, 3 x 1.0 us network post), 2 network steps at 14.
  const double lat_us = 8.4 + 28 * 3.4 + 2 * 14.0;
  const NcclCost cost = nccl_cost(t, Op::all_reduce, "ring", "Simple");
  check_close(cost.bandwidth_GBps, bw);
  check_close(cost.latency_us, lat_us);
  // 1 GiB is 64 B or more per rank and channel: Ampere-and-later latency x 1.4.
  const double size = 1073741824.0;
  check_close(*nccl_predicted_time(t, Op::all_reduce, "ring", "Simple", 1073741824),
              (lat_us * 1.4 + size / (1000 * bw)) * 1e-6);
  // 1 KiB is 1024 / (16 x 16) = 4 B per rank and channel: no plateau.
  check_close(*nccl_predicted_time(t, Op::all_reduce, "ring", "Simple", 1024), (lat_us + 1024 / (1000 * bw)) * 1e-6);
}

TEST_CASE("NVLS all-reduce in one H100 node: nvlsEfficiency, one channel given up, the switch's 2x") {
  const NcclTopology t = nccl_topology(test::shipped_cluster(kH100), first(8), 16);
  // Eight heads: per head intra / 8, x 0.85 (Hopper) x 7/8 x 2 (two operations pipelined), below
  // the 2 x intra / 8 the NVLS search gives bwInter; x 8 heads x n / 2(n-1) = 8 / 14.
  const double per_head = kH100Intra_GBps / 8 * 0.85 * 7.0 / 8.0 * 2;
  const NcclCost cost = nccl_cost(t, Op::all_reduce, "nvls", "Simple");
  check_close(cost.bandwidth_GBps, 8 * per_head * 8.0 / 14.0);
  check_close(cost.latency_us, 25.0);  // one NVLS NVLink hop, no base latency
  CHECK(nccl_cost(t, Op::all_reduce, "nvls", "LL").bandwidth_GBps == 0);      // Simple only
  CHECK(nccl_cost(t, Op::all_reduce, "nvls_tree", "Simple").bandwidth_GBps == 0);  // needs nodes
}

TEST_CASE("NVLS-tree all-reduce on two H100 nodes is capped by Hopper's per-channel NVLS-tree figure") {
  const NcclTopology t = nccl_topology(test::shipped_cluster(kH100), first(16), 16);
  const double intra = kH100Intra_GBps / 8 * 0.85 * 7.0 / 8.0 * 2;  // 68.8 GB/s a head
  const double inter = kH100Inter_GBps / 8 * 2;                     // 2 nodes: x 2
  const double per_head = std::min({intra, inter, 57.7});
  const NcclCost cost = nccl_cost(t, Op::all_reduce, "nvls_tree", "Simple");
  check_close(cost.bandwidth_GBps, 8 * per_head * 16.0 / 30.0);
  check_close(cost.latency_us, 25 + 2 * 1 * 20.9);
}

TEST_CASE("PAT all-gather with one GPU per node: 0.75 of its NIC, log and linear latency terms") {
  const NcclTopology t = nccl_topology(test::shipped_cluster(kH100), {0, 8, 16, 24}, 16);
  const NcclCost cost = nccl_cost(t, Op::all_gather, "pat", "Simple");
  check_close(cost.bandwidth_GBps, 50 * 0.94 * 0.75);
  // 8 base + log2(4) x 14 / 3.5 (the tree's network hop: one GPU a node) + 4 ranks x 2.8.
  check_close(cost.latency_us, 8 + 2 * 14 / 3.5 + 4 * 2.8);
  CHECK(nccl_cost(nccl_topology(test::shipped_cluster(kH100), first(16), 16), Op::all_gather, "pat", "Simple")
            .bandwidth_GBps == 0);  // eight GPUs a node: NCCL keeps PAT off
}

TEST_CASE("ring LL all-gather in one node and LL128 across A100 nodes use their generation's caps") {
  const NcclTopology h = nccl_topology(test::shipped_cluster(kH100), first(8), 16);
  // One node: LL's cap is the GPU's (Hopper 141.0) against half the NVLink; x n / (n-1).
  const NcclCost ll = nccl_cost(h, Op::all_gather, "ring", "LL");
  check_close(ll.bandwidth_GBps, std::min(141.0, kH100Intra_GBps * 0.5) * 8.0 / 7.0);
  check_close(ll.latency_us, 6.6 + 7 * 0.6);
  // DGX A100, 4 nodes: NVLink 300 x 0.773, eight HDR NICs 25 GB/s x 0.96; 16 channels; ring LL128
  // is x 0.92 capped at 16 x 20.0 (Ampere); x 32 / 62. Latency: 14.0 base, 56 NVLink steps at
  // max(1.9, 1.0 post), 6 network steps at 4.0.
  const NcclTopology a = nccl_topology(test::shipped_cluster(kA100), first(32), 16);
  CHECK(a.generation == GpuGeneration::ampere);
  const double per_channel = std::min(300 * 0.773, 8 * 25 * 0.96) / 16;
  const NcclCost ll128 = nccl_cost(a, Op::all_reduce, "ring", "LL128");
  check_close(ll128.bandwidth_GBps, std::min(16 * per_channel * 0.92, 16 * 20.0) * 32.0 / 62.0);
  check_close(ll128.latency_us, 14.0 + 56 * 1.9 + 6 * 4.0);
}

TEST_CASE("on two H100 nodes NCCL's tuner picks tree/LL for small all-reduces and NVLS-tree or ring Simple for large") {
  const Cluster& nvls = test::shipped_cluster(kH100);
  const Cluster plain = test::cluster_from_yaml(test::shipped_with(kH100, "nvls: true", "nvls: false"));
  for (Bytes size : {Bytes{8}, Bytes{1024}}) {
    const auto pick = nccl_choose(nvls, test::request(Op::all_reduce, 16, size, 16), std::nullopt, true);
    REQUIRE(pick);
    CHECK(pick->algorithm->name() == "tree");
    CHECK(pick->protocol.name == "LL");
    CHECK(pick->channels == 1);  // below 512 threads x 8 B: one channel (nccl_channels_for_size)
  }
  const Bytes large = Bytes{1} << 30;
  const auto with_nvls = nccl_choose(nvls, test::request(Op::all_reduce, 16, large, 16), std::nullopt, true);
  REQUIRE(with_nvls);
  CHECK(with_nvls->algorithm->name() == "nvls_tree");
  CHECK(with_nvls->protocol.name == "Simple");
  const auto without = nccl_choose(plain, test::request(Op::all_reduce, 16, large, 16), std::nullopt, true);
  REQUIRE(without);
  CHECK(without->algorithm->name() == "ring");
  CHECK(without->protocol.name == "Simple");
  CHECK(without->channels == 16);
  // The pick is the least predicted time of those NCCL runs.
  const NcclTopology t = nccl_topology(plain, first(16), 16);
  for (const char* a : {"tree", "ring"})
    for (const char* p : {"LL", "LL128", "Simple"})
      CHECK(*without->predicted_s <= *nccl_predicted_time(t, Op::all_reduce, a, p, large));
  // A pinned protocol limits the choice; all-to-all is not tuned (PXN on rails, Simple).
  const auto ll = nccl_choose(plain, test::request(Op::all_reduce, 16, large, 16), find_protocol("LL"), true);
  REQUIRE(ll);
  CHECK(ll->protocol.name == "LL");
  const auto a2a = nccl_choose(plain, test::request(Op::all_to_all, 16, large, 16), std::nullopt, true);
  REQUIRE(a2a);
  CHECK(a2a->algorithm->name() == "pxn");
  CHECK(!a2a->predicted_s);
}

TEST_CASE("collective --algo nccl runs NCCL's pick and shows the fastest simulated pair beside it") {
  const std::string args = "collective --cluster " + test::source_path(kH100) + " --gpus 16 -b 8 -e 8M -f 1024";
  const nlohmann::json j = test::cli_json(args + " --algo nccl");
  const nlohmann::json best = test::cli_json(args + " --algo best");
  const nlohmann::json alias = test::cli_json(args + " --algo auto");
  REQUIRE(j["rows"].size() == 3);  // 8 B, 8 KiB, 8 MiB
  REQUIRE(best["rows"].size() == 3);
  const Cluster& c = test::shipped_cluster(kH100);
  for (std::size_t i = 0; i < 3; ++i) {
    const nlohmann::json& r = j["rows"][i];
    const auto pick = nccl_choose(c, test::request(Op::all_reduce, 16, r["size_bytes"].get<Bytes>(), 16), std::nullopt, true);
    REQUIRE(pick);
    CHECK(r["algorithm"] == pick->algorithm->name());
    CHECK(r["protocol"] == pick->protocol.name);
    CHECK(r["channels"] == pick->channels);
    check_close(r["nccl_predicted_us"].get<double>(), *pick->predicted_s * 1e6);
    // The best column is --algo best's row (a tie keeps NCCL's pick); NCCL's pick is never faster.
    CHECK(r["best_time_us"].get<double>() == best["rows"][i]["time_us"].get<double>());
    if (r["best_time_us"].get<double>() < r["time_us"].get<double>())
      CHECK(r["best_algorithm"] == best["rows"][i]["algorithm"]);
    CHECK(r["best_time_us"].get<double>() <= r["time_us"].get<double>());
    check_close(1 + r["nccl_slowdown"].get<double>(), r["time_us"].get<double>() / r["best_time_us"].get<double>());
    CHECK(alias["rows"][i] == best["rows"][i]);  // auto is best
  }
  const test::CliResult text = test::run_cli(args + " --algo nccl");
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Contains("# nccl vs best: "));
  CHECK_THAT(text.stdout_text, Contains("predicted "));
}

TEST_CASE("a protocol NCCL's tuner cannot run, or an unknown algorithm, is one line and exit 2") {
  const std::string h100 = test::source_path(kH100);
  const std::string args = "collective --cluster " + h100 + " --gpus 16 ";
  struct Bad {
    std::string extra, field, expected;
  };
  for (const Bad& bad : {Bad{"--algo nccl --proto ideal", "--proto", "expected a protocol NCCL's tuner runs all_reduce"},
                         Bad{"--algo nccl --op all_to_all --proto LL", "--proto", "(auto, or Simple); got 'LL'"},
                         Bad{"--algo nccl --proto LL256", "--proto", "expected auto, LL, LL128, Simple or ideal"},
                         Bad{"--algo ncc", "--algo", "expected best (alias auto), nccl or one of: "}}) {
    const test::CliResult r = test::run_cli(args + bad.extra);
    INFO(bad.extra << " -> " << r.stderr_text);
    CHECK(r.exit_code == 2);
    CHECK(r.stdout_text.empty());
    CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
    CHECK_THAT(r.stderr_text, StartsWith("error: command line: " + bad.field + ": ") && Contains(bad.expected));
  }
}

TEST_CASE("a scenario's collectives.algorithm is best or nccl, anything else one line and exit 2") {
  const std::string scenario = test::source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  const test::CliResult r = test::run_cli("run " + scenario + " --set collectives.algorithm=fastest");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
  CHECK_THAT(r.stderr_text, Contains("collectives.algorithm: ") && Contains("nccl"));
}

TEST_CASE("iterations time TP collectives with NCCL's pick unless the scenario asks for the fastest simulated") {
  // GPT-3 175B, TP 8 in one DGX H100. Without sequence parallelism its TP collectives are
  // all-reduces, for which NCCL picks NVLS at these sizes: the switch adds, so each GPU's link
  // carries S each way where the ring (best's choice: NVLS is kept out of it) carries 2(n-1)/n S =
  // 1.75 S; the exposed TP time drops. With it they are all-gathers and reduce-scatters, where NCCL
  // picks the ring with Simple as the simulation does: nothing moves.
  const std::string run = "run " + test::source_path("scenarios/gpt3-175b-h100-pp16.yaml");
  auto tp_exposed = [&](const std::string& sets) {
    const nlohmann::json j = test::cli_json(run + sets);
    const bool best_asked = sets.find("collectives.algorithm=best") != std::string::npos;
    CHECK(j["config"]["collectives_algorithm"] == (best_asked ? "best" : "nccl"));
    return j["stages"][0]["time_s"]["tp_exposed"].get<double>();
  };
  const double nccl = tp_exposed(" --set parallel.sequence_parallel=false");
  const double best = tp_exposed(" --set parallel.sequence_parallel=false --set collectives.algorithm=best");
  CHECK(nccl < 0.9 * best);
  CHECK(tp_exposed("") == tp_exposed(" --set collectives.algorithm=best"));
}
