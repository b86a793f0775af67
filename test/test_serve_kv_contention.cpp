// KV caches between disaggregated pools share the fabric (workloads/serving/kv_transfers.hpp):
// each GPU's shard goes to its counterpart, shards in flight split each link max-min, and a
// transfer lands when its last shard is through plus that shard's path latency. Closed forms on a
// single switch with ideal links: a NIC carries 400 Gb/s = 50 GB/s.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "simulator/serve_report.hpp"
#include "simulator/serve_sim.hpp"
#include "support.hpp"
#include "workloads/serving/comm_cost.hpp"
#include "workloads/serving/kv_transfers.hpp"
#include "workloads/serving/serving_spec.hpp"

using namespace clustersim;

namespace {

constexpr double kNic_Bps = 50e9;
constexpr double kShard_bytes = 1e9;

// Four nodes of two GPUs, each GPU with its own NIC, on one switch.
const char* const kNicPerGpu = R"(
name: nic-per-gpu
gpu: H100-SXM
link_types:
  ideal: {bandwidth_efficiency: 1.0}
node:
  gpus: 2
  scale_up: {topology: nvswitch, link_type: ideal, bandwidth_GBps: 100, latency_us: 1}
  nics: {count: 2, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1, gpus: [0, 1]}
  pcie: {link_type: ideal, bandwidth_GBps: 64, latency_us: 0.5}
fabric: {type: single_switch, nodes: 4, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1}
)";

// Two nodes of eight GPUs behind one NIC each: the uniform switch of support.hpp, twice.
std::string shared_nic_yaml() {
  return test::replaced_all(test::kUniformSwitchYaml, "nodes: 1,", "nodes: 2,", "the uniform switch");
}

/// Runs the wake-ups until nothing moves; each landing as (request, time).
std::vector<std::pair<long, Seconds>> drain(KvTransfers& kv) {
  std::vector<std::pair<long, Seconds>> out;
  while (kv.next_end_s() < 1e300)
    for (const auto& landed : kv.advance(kv.next_end_s())) out.push_back(landed);
  std::sort(out.begin(), out.end());
  return out;
}

/// The latest path latency over the pairs (each shard lands at its own end plus its latency).
Seconds latency_s(ServingComm& comm, const std::vector<int>& from, const std::vector<int>& to) {
  Seconds worst = 0;
  for (std::size_t i = 0; i < from.size(); ++i) worst = std::max(worst, comm.path(from[i], to[i]).second);
  return worst;
}

}  // namespace

TEST_CASE("a KV transfer alone lands after its shard over the NIC plus the path latency", "[serve][kv]") {
  const Cluster c = test::cluster_from_yaml(kNicPerGpu);
  ServingComm comm(c);
  REQUIRE(comm.path(0, 2).first == Approx(kNic_Bps).epsilon(1e-12));
  KvTransfers kv(c, comm);
  const Seconds want = kShard_bytes / kNic_Bps + latency_s(comm, {0, 1}, {2, 3});
  CHECK(kv.start(0, 7, {0, 1}, {2, 3}, kShard_bytes) == Approx(want).epsilon(1e-12));
  const auto landed = drain(kv);
  REQUIRE(landed.size() == 1);
  CHECK(landed[0].first == 7);
  CHECK(landed[0].second == Approx(want).epsilon(1e-12));
}

TEST_CASE("two KV transfers into one replica at once halve each other's NICs: both land at twice the alone time", "[serve][kv]") {
  const Cluster c = test::cluster_from_yaml(kNicPerGpu);
  ServingComm comm(c);
  KvTransfers kv(c, comm);
  const Seconds alone = kShard_bytes / kNic_Bps;
  CHECK(kv.start(0, 1, {0, 1}, {4, 5}, kShard_bytes) == Approx(alone + latency_s(comm, {0, 1}, {4, 5})).epsilon(1e-12));
  CHECK(kv.start(0, 2, {2, 3}, {4, 5}, kShard_bytes) == Approx(alone + latency_s(comm, {2, 3}, {4, 5})).epsilon(1e-12));
  const auto landed = drain(kv);
  REQUIRE(landed.size() == 2);
  CHECK(landed[0].second == Approx(2 * alone + latency_s(comm, {0, 1}, {4, 5})).epsilon(1e-12));
  CHECK(landed[1].second == Approx(2 * alone + latency_s(comm, {2, 3}, {4, 5})).epsilon(1e-12));
}

TEST_CASE("KV transfers on disjoint NICs do not slow each other", "[serve][kv]") {
  const Cluster c = test::cluster_from_yaml(kNicPerGpu);
  ServingComm comm(c);
  KvTransfers kv(c, comm);
  kv.start(0, 1, {0, 1}, {2, 3}, kShard_bytes);
  kv.start(0, 2, {4, 5}, {6, 7}, kShard_bytes);
  const auto landed = drain(kv);
  REQUIRE(landed.size() == 2);
  CHECK(landed[0].second == Approx(kShard_bytes / kNic_Bps + latency_s(comm, {0, 1}, {2, 3})).epsilon(1e-12));
  CHECK(landed[1].second == Approx(kShard_bytes / kNic_Bps + latency_s(comm, {4, 5}, {6, 7})).epsilon(1e-12));
}

TEST_CASE("a KV transfer that starts halfway through another shares the rest, then the later one runs alone", "[serve][kv]") {
  const Cluster c = test::cluster_from_yaml(kNicPerGpu);
  ServingComm comm(c);
  KvTransfers kv(c, comm);
  const Seconds t1 = kShard_bytes / 2 / kNic_Bps;  // the first has half of its bytes through
  kv.start(0, 1, {0, 1}, {4, 5}, kShard_bytes);
  // Nothing ends before the second starts.
  CHECK(kv.next_end_s() == Approx(2 * t1).epsilon(1e-12));
  CHECK(kv.advance(t1).empty());
  kv.start(t1, 2, {2, 3}, {4, 5}, kShard_bytes);
  // The first's other half at half the NIC: t1 + (B/2) / (C/2). The second has then moved B/2 and
  // sends its other half alone: + (B/2) / C.
  const Seconds first_through = t1 + (kShard_bytes / 2) / (kNic_Bps / 2);
  const Seconds second_through = first_through + (kShard_bytes / 2) / kNic_Bps;
  const auto landed = drain(kv);
  REQUIRE(landed.size() == 2);
  CHECK(landed[0].second == Approx(first_through + latency_s(comm, {0, 1}, {4, 5})).epsilon(1e-12));
  CHECK(landed[1].second == Approx(second_through + latency_s(comm, {2, 3}, {4, 5})).epsilon(1e-12));
}

TEST_CASE("a node with one NIC carries its eight GPUs' shards through it: eight shards over one NIC", "[serve][kv]") {
  const Cluster c = test::cluster_from_yaml(shared_nic_yaml());
  ServingComm comm(c);
  KvTransfers kv(c, comm);
  const std::vector<int> from = {0, 1, 2, 3, 4, 5, 6, 7}, to = {8, 9, 10, 11, 12, 13, 14, 15};
  const Seconds want = 8 * kShard_bytes / kNic_Bps + latency_s(comm, from, to);
  CHECK(kv.start(0, 3, from, to, kShard_bytes) == Approx(want).epsilon(1e-12));
  const auto landed = drain(kv);
  REQUIRE(landed.size() == 1);
  CHECK(landed[0].second == Approx(want).epsilon(1e-12));
}

TEST_CASE("serve: four prefill replicas into one decode replica queue on its NICs, and the run repeats itself", "[serve][kv]") {
  const std::string file = test::source_path("scenarios/serving/llama3-70b-h100-disagg.yaml");
  const std::vector<std::string> sets = {"serving.disaggregated.prefill_replicas=4", "serving.disaggregated.decode_replicas=1",
                                         "serving.requests.rate_per_s=12", "serving.requests.duration_s=20"};
  const ServingSpec s = load_serving(file, sets);
  const ServeResult a = simulate_serving(s), b = simulate_serving(s);
  const ServeSummary m = summarize_serving(s, a);
  REQUIRE(a.kv_transfers == long(a.requests.size()));
  INFO("KV transfer mean " << m.kv_transfer_mean_s << " s, alone " << m.kv_transfer_alone_mean_s << " s");
  // The four prefill replicas' shards meet on the decode replica's eight NICs.
  CHECK(m.kv_transfer_mean_s > m.kv_transfer_alone_mean_s * 1.001);
  for (std::size_t i = 0; i < a.requests.size(); ++i) CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
}
