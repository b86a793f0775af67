// Closed forms the collectives must reproduce exactly (relative error < 1e-9) on a uniform single
// switch: n GPUs on one NVSwitch, every GPU-switch link with latency a/2 and bandwidth B per
// direction, so a GPU-to-GPU hop costs a + S/B. One channel unless stated, no protocol overhead.
#include <catch2/catch.hpp>

#include "collectives/collective.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr int kGpus = 8;
constexpr double kBandwidth = 100e9;   // B, bytes/s
constexpr double kHopLatency = 2e-6;   // a, two links of 1 us

const char* kUniformSwitch = clustersim::test::kUniformSwitchYaml;

Seconds simulate(Op op, const char* algorithm, Bytes size, int channels = 1) {
  static const Cluster cluster = test::cluster_from_yaml(kUniformSwitch);
  static const Router router(cluster);
  static FabricEngine engine(cluster);
  CollectiveRequest req;
  req.op = op;
  for (int g = 0; g < kGpus; ++g) req.ranks.push_back(g);
  req.size_bytes = size;
  req.channels = channels;
  req.protocol = ideal_protocol();
  return makespan(engine.run(find_algorithm(algorithm)->lower(router, req)));
}

void check_exact(Seconds simulated, Seconds closed_form) {
  INFO("simulated " << simulated << " s, closed form " << closed_form << " s");
  CHECK(std::abs(simulated - closed_form) / closed_form < 1e-9);
}

const double n = kGpus;
const Bytes kSizes[] = {8 * 1024, 8 * 1024 * 1024, 1024ULL * 1024 * 1024};

}  // namespace

TEST_CASE("ring all-reduce takes 2(n-1)(a + S/(nB))") {
  for (Bytes s : kSizes) check_exact(simulate(Op::all_reduce, "ring", s), 2 * (n - 1) * (kHopLatency + s / (n * kBandwidth)));
}

TEST_CASE("ring all-reduce over 4 channels takes as long as over one when they share the links") {
  // Each channel gets B/4 and moves S/4: the bandwidth term is unchanged and so is the latency.
  const Bytes s = 1024ULL * 1024 * 1024;
  check_exact(simulate(Op::all_reduce, "ring", s, 4), 2 * (n - 1) * (kHopLatency + s / (n * kBandwidth)));
}

TEST_CASE("ring all-gather and reduce-scatter take (n-1)(a + S/(nB))") {
  for (Bytes s : kSizes) {
    const Seconds expected = (n - 1) * (kHopLatency + s / (n * kBandwidth));
    check_exact(simulate(Op::all_gather, "ring", s), expected);
    check_exact(simulate(Op::reduce_scatter, "ring", s), expected);
  }
}

TEST_CASE("pipelined ring broadcast takes (n-1)a + S/B") {
  for (Bytes s : kSizes) check_exact(simulate(Op::broadcast, "ring", s), (n - 1) * kHopLatency + s / kBandwidth);
}

TEST_CASE("direct all-to-all takes a + (n-1)S/(nB)") {
  // S is each rank's send buffer (nccl-tests); every GPU sends S/n to each of n-1 peers at once
  // through its one NVSwitch port.
  for (Bytes s : kSizes) check_exact(simulate(Op::all_to_all, "direct", s), kHopLatency + (n - 1) * s / (n * kBandwidth));
}

TEST_CASE("send/recv ring shift takes a + S/B") {
  for (Bytes s : kSizes) check_exact(simulate(Op::send_recv, "direct", s), kHopLatency + s / kBandwidth);
}

TEST_CASE("tree all-reduce inside one node is a chain: 2(n-1)a + 2S/B") {
  // One node: the tree degenerates to NCCL's intra-node chain. Reduce flows up and broadcast flows
  // down at once; an inner GPU sends S to its parent and S to its child through its one NVSwitch
  // port, so the bandwidth term is 2S/B, and a chunk crosses n-1 hops up and n-1 down.
  for (Bytes s : kSizes) check_exact(simulate(Op::all_reduce, "tree", s), 2 * (n - 1) * kHopLatency + 2 * s / kBandwidth);
}

TEST_CASE("a ring longer than one flow segment still takes 2(n-1)(a + S/(nB))") {
  // 1100 GPUs on one NVSwitch: the ring is cut into flows of kMaxHopsPerFlow hops (three here),
  // which must not change its time on a uniform switch.
  std::string yaml = kUniformSwitch;
  yaml.replace(yaml.find("gpus: 8"), 7, "gpus: 1100");
  const Cluster cluster = test::cluster_from_yaml(yaml);
  const Router router(cluster);
  FabricEngine engine(cluster);
  CollectiveRequest req;
  for (int g = 0; g < 1100; ++g) req.ranks.push_back(g);
  req.size_bytes = 1100ULL * 1024 * 1024;
  req.protocol = ideal_protocol();
  const FlowGraph graph = find_algorithm("ring")->lower(router, req);
  CHECK(graph.flows.size() == 3);
  const double big_n = 1100;
  check_exact(makespan(engine.run(graph)), 2 * (big_n - 1) * (kHopLatency + req.size_bytes / (big_n * kBandwidth)));
}

TEST_CASE("rings on a full-mesh node use a different direct link per channel") {
  // 8 GPUs, each pair joined by its own link of latency a and bandwidth B per direction. Channels
  // step through the node with strides 1, 3, 5, 7, so four channels use four disjoint sets of
  // directed links and each gets a whole link: 2(n-1)(a + (S/4)/(nB)).
  std::string yaml = kUniformSwitch;
  yaml.replace(yaml.find("topology: nvswitch"), 18, "topology: full_mesh");
  yaml.replace(yaml.find("latency_us: 1}"), 14, "latency_us: 2}");
  const Cluster cluster = test::cluster_from_yaml(yaml);
  const Router router(cluster);
  FabricEngine engine(cluster);
  CollectiveRequest req;
  for (int g = 0; g < kGpus; ++g) req.ranks.push_back(g);
  req.size_bytes = 1ULL << 30;
  req.channels = 4;
  req.protocol = ideal_protocol();
  const Seconds t = makespan(engine.run(find_algorithm("ring")->lower(router, req)));
  check_exact(t, 2 * (n - 1) * (kHopLatency + req.size_bytes / 4.0 / (n * kBandwidth)));
}
