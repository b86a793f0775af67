// Step-by-step algorithms and the hierarchical all-reduce in closed form. A step whose messages
// all cross disjoint links of bandwidth B after latency a takes a + bytes/B, and steps follow one
// another, so an algorithm takes (steps) a + (bytes a rank sends in all) / B:
//   recursive doubling all-reduce   log2 n (a + S/B)
//   recursive doubling all-gather   log2 n a + (n-1)/n S/B
//   halving-doubling all-reduce     2 log2 n a + 2(n-1)/n S/B   (Rabenseifner)
//   recursive halving reduce-scatter  log2 n a + (n-1)/n S/B
//   PAT all-gather / reduce-scatter ceil(log2 n) a + (n-1)/n S/B, one GPU per node
// and the hierarchical all-reduce is three rings one after another.
#include <catch2/catch.hpp>

#include <cmath>

#include "collectives/collective.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr double kBandwidth = 100e9;  // NVLink, B
constexpr double kHopLatency = 2e-6;  // GPU to GPU through the NVSwitch, a

const char* kUniformSwitch = clustersim::test::kUniformSwitchYaml;

// GPUs a node on one switch, a 400 Gb/s NIC (50 GB/s) each. A hop between nodes: PCIe, NIC
// port, NIC port, PCIe.
constexpr double kNicBandwidth = 50e9;
constexpr double kNetHopLatency = 0.5e-6 + 1e-6 + 1e-6 + 0.5e-6;

std::string nodes_of(int gpus, int nodes) {
  std::string nic_gpus;
  for (int g = 0; g < gpus; ++g) nic_gpus += (g ? ", " : "") + std::to_string(g);
  return R"(
name: nodes
gpu: H100-SXM
link_types:
  ideal: {bandwidth_efficiency: 1.0}
node:
  gpus: )" + std::to_string(gpus) + R"(
  scale_up: {topology: nvswitch, link_type: ideal, bandwidth_GBps: 100, latency_us: 1}
  nics: {count: )" + std::to_string(gpus) + R"(, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1, gpus: [)" +
         nic_gpus + R"(]}
  pcie: {link_type: ideal, bandwidth_GBps: 640, latency_us: 0.5}
fabric: {type: single_switch, nodes: )" + std::to_string(nodes) + R"(, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1}
)";
}

using clustersim::test::request;  // ranks 0 .. n-1 (support.hpp)

Seconds in_node(Op op, const char* algorithm, Bytes size, int channels = 1) {
  static const Cluster cluster = test::cluster_from_yaml(kUniformSwitch);
  static const Router router(cluster);
  static FabricEngine engine(cluster);
  return makespan(engine.run(find_algorithm(algorithm)->lower(router, request(op, 8, size, channels))));
}

void check_exact(Seconds simulated, Seconds closed_form) {
  INFO("simulated " << simulated << " s, closed form " << closed_form << " s");
  CHECK(std::abs(simulated - closed_form) / closed_form < 1e-9);
}

const double n = 8, log2n = 3;
const Bytes kSizes[] = {8 * 1024, 8 * 1024 * 1024, 1024ULL * 1024 * 1024};

}  // namespace

TEST_CASE("recursive doubling all-reduce takes log2 n (a + S/B)") {
  for (Bytes s : kSizes) check_exact(in_node(Op::all_reduce, "recursive_doubling", s), log2n * (kHopLatency + s / kBandwidth));
}

TEST_CASE("recursive doubling all-gather takes log2 n a + (n-1)S/(nB)") {
  for (Bytes s : kSizes)
    check_exact(in_node(Op::all_gather, "recursive_doubling", s, 2), log2n * kHopLatency + (n - 1) * s / (n * kBandwidth));
}

TEST_CASE("halving-doubling all-reduce takes 2 log2 n a + 2(n-1)S/(nB), the ring's bandwidth in log steps") {
  for (Bytes s : kSizes)
    check_exact(in_node(Op::all_reduce, "halving_doubling", s), 2 * log2n * kHopLatency + 2 * (n - 1) * s / (n * kBandwidth));
}

TEST_CASE("recursive halving reduce-scatter takes log2 n a + (n-1)S/(nB)") {
  for (Bytes s : kSizes)
    check_exact(in_node(Op::reduce_scatter, "halving_doubling", s, 2), log2n * kHopLatency + (n - 1) * s / (n * kBandwidth));
}

TEST_CASE("PAT all-gather and reduce-scatter on one GPU per node take ceil(log2 n) a + (n-1)S/(nB)") {
  for (int nodes : {8, 6}) {
    const Cluster cluster = test::cluster_from_yaml(nodes_of(1, nodes));
    const Router router(cluster);
    FabricEngine engine(cluster);
    const double steps = std::ceil(std::log2(nodes));
    for (Bytes s : kSizes) {
      const Bytes size = s / (2 * nodes) * (2 * nodes);  // a block splits evenly over 2 channels
      const Seconds expected = steps * kNetHopLatency + (nodes - 1.0) * size / (nodes * kNicBandwidth);
      INFO(nodes << " nodes, " << size << " B");
      for (Op op : {Op::all_gather, Op::reduce_scatter})
        check_exact(makespan(engine.run(find_algorithm("pat")->lower(router, request(op, nodes, size, 2)))), expected);
    }
    // Under Simple, NCCL's PAT latency: 8 us, 4 us a step and 2.8 us a rank.
    const Bytes s = kSizes[1] / (2 * nodes) * (2 * nodes);
    check_exact(makespan(engine.run(find_algorithm("pat")->lower(router, request(Op::all_gather, nodes, s, 2, "Simple")))),
                8e-6 + 2.8e-6 * nodes + steps * (4e-6 + kNetHopLatency) + (nodes - 1.0) * s / (nodes * kNicBandwidth));
  }
}

TEST_CASE("hierarchical all-reduce is a ring reduce-scatter in nodes, a ring all-reduce per rail, a ring all-gather") {
  // 4 nodes of 4 GPUs: G = 4, N = 4. Ring phases: in a node (G-1)(a + S/(G B)); across nodes on
  // S/G each, 2(N-1)(a_net + S/(G N B_nic)).
  const double g = 4, nodes = 4;
  const Cluster cluster = test::cluster_from_yaml(nodes_of(4, 4));
  const Router router(cluster);
  FabricEngine engine(cluster);
  for (Bytes s : kSizes) {
    const double shard = static_cast<double>(s / 4);
    const Seconds intra = (g - 1) * (kHopLatency + s / (g * kBandwidth));
    const Seconds inter = 2 * (nodes - 1) * (kNetHopLatency + shard / (nodes * kNicBandwidth));
    check_exact(makespan(engine.run(find_algorithm("hierarchical")->lower(router, request(Op::all_reduce, 16, s, 1)))),
                2 * intra + inter);
  }
}

TEST_CASE("the step algorithms refuse groups they cannot run") {
  const Cluster& h100 = test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  CHECK(find_algorithm("pat")->not_applicable(h100, request(Op::all_gather, 16, 1024, 1)).has_value());
  CHECK(find_algorithm("pat")->not_applicable(h100, request(Op::all_gather, 16, 1024, 1, "LL")).has_value());
  CHECK(find_algorithm("halving_doubling")->not_applicable(h100, request(Op::all_reduce, 24, 1024, 1)).has_value());
  CHECK_FALSE(find_algorithm("halving_doubling")->not_applicable(h100, request(Op::all_reduce, 32, 1024, 1)).has_value());
  CHECK(find_algorithm("recursive_doubling")->not_applicable(h100, request(Op::reduce_scatter, 8, 1024, 1)).has_value());
  CHECK(find_algorithm("hierarchical")->not_applicable(h100, request(Op::all_reduce, 8, 1024, 1)).has_value());
  CHECK(find_algorithm("hierarchical")->not_applicable(h100, request(Op::all_reduce, 12, 1024, 1)).has_value());
}
