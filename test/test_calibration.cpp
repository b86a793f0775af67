// Large-message bus bandwidth on the shipped clusters against published measurements
// (../shared/reference/published.yaml, collective_busbw.points), within 10%. Each link type has one
// efficiency, fixed in its cluster file (scenarios/README.md says which point set it); the
// multi-node A100 ring is a prediction from the HDR per-NIC point, not a fit.
#include <catch2/catch.hpp>

#include "collectives/collective.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

constexpr Bytes kLarge = 8ULL << 30;  // nccl-tests' -e 8G: well into the bandwidth-bound regime

double busbw_GBps(const std::string& cluster_file, Op op, const std::string& algorithm, std::vector<int> ranks,
                  Bytes size_bytes = kLarge) {
  const Cluster& cluster = test::shipped_cluster(cluster_file);
  const Router router(cluster);  // per call: the cases use different clusters in one process
  FabricEngine engine(cluster);
  CollectiveRequest req;
  req.op = op;
  req.ranks = std::move(ranks);
  req.size_bytes = size_bytes;
  req.channels = 2 * cluster.nics_per_node();  // as `clustersim collective` defaults
  req.protocol = *find_protocol("Simple");
  const Seconds t = makespan(engine.run(find_algorithm(algorithm)->lower(router, req)));
  const int n = static_cast<int>(req.ranks.size());
  return static_cast<double>(size_bytes) / t / 1e9 * bus_bandwidth_factor(op, n);
}

std::vector<int> first_gpus(int count) {
  std::vector<int> r;
  for (int g = 0; g < count; ++g) r.push_back(g);
  return r;
}

void check_within_10_percent(double simulated, double published) {
  INFO("simulated " << simulated << " GB/s, published " << published << " GB/s");
  CHECK(std::abs(simulated - published) / published <= 0.10);
}

}  // namespace

TEST_CASE("8x H100 ring all-reduce busbw is within 10% of 370 GB/s") {
  // NVIDIA maintainer, nccl-tests issue 212.
  check_within_10_percent(busbw_GBps("scenarios/clusters/dgx-h100-superpod.yaml", Op::all_reduce, "ring", first_gpus(8)), 370);
}

TEST_CASE("8x B200 ring all-reduce busbw reproduces nvlink5's calibration point, 698.39 GB/s at 32 GiB") {
  // together-nccl-tests, baselines/flapping-airplanes/2026-05-12 (NCCL 2.28.9, NCCL_ALGO=Ring): the
  // point dgx-b200-superpod.yaml's 0.777 was set from, so the shipped file must give it back (to
  // the efficiency's three digits) where the other calibrations hold their 10%.
  const double simulated = busbw_GBps("scenarios/clusters/dgx-b200-superpod.yaml", Op::all_reduce, "ring", first_gpus(8), 32ULL << 30);
  INFO("simulated " << simulated << " GB/s");
  CHECK(std::abs(simulated - 698.39) / 698.39 <= 0.001);
}

TEST_CASE("8x A100 ring all-reduce busbw is within 10% of 232 GB/s") {
  // User report, nccl-tests issue 175.
  check_within_10_percent(busbw_GBps("scenarios/clusters/dgx-a100-superpod.yaml", Op::all_reduce, "ring", first_gpus(8)), 232);
}

TEST_CASE("multi-node DGX A100 ring all-reduce over 8x HDR is within 10% of 192 GB/s") {
  // NVIDIA, nccl issue 812, on a DGX A100 SuperPOD. Eight nodes of one scalable unit.
  check_within_10_percent(busbw_GBps("scenarios/clusters/dgx-a100-superpod.yaml", Op::all_reduce, "ring", first_gpus(64)), 192);
}

TEST_CASE("one NDR NIC carries within 10% of 47 GB/s between two nodes") {
  // nccl-tests issues 267 and 290: 46-49 GB/s per ConnectX-7 NIC. GPU 0 of node 0 to GPU 0 of node 1.
  check_within_10_percent(busbw_GBps("scenarios/clusters/dgx-h100-superpod.yaml", Op::send_recv, "direct", {0, 8}), 47);
}

TEST_CASE("one HDR NIC carries within 10% of 24 GB/s between two nodes") {
  // nccl issue 412.
  check_within_10_percent(busbw_GBps("scenarios/clusters/dgx-a100-superpod.yaml", Op::send_recv, "direct", {0, 8}), 24);
}
