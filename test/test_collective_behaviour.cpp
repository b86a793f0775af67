// How the collectives are placed on a real fabric: PXN keeps traffic on rails, rings spread their
// channels over every NIC, auto picks the fastest candidate, and results are deterministic.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "collectives/collective.hpp"
#include "collectives/pipeline.hpp"
#include "collectives/point_to_point.hpp"
#include "simulator/collective_sweep.hpp"
#include "support.hpp"

using namespace clustersim;

namespace {

const Cluster& superpod() { return test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml"); }

std::vector<int> first_gpus(int count) {
  std::vector<int> r;
  for (int g = 0; g < count; ++g) r.push_back(g);
  return r;
}

CollectiveRequest request(Op op, std::vector<int> ranks, Bytes size) {
  CollectiveRequest req;
  req.op = op;
  req.ranks = std::move(ranks);
  req.size_bytes = size;
  req.channels = 16;
  req.protocol = *find_protocol("Simple");
  return req;
}

/// Does a flow cross any link that touches a switch above the leaves?
bool crosses_spine(const Cluster& c, const Flow& f) {
  for (LinkDir d : f.links) {
    const Link& l = c.links[link_of(d)];
    if (c.graph[l.a].tier >= 2 || c.graph[l.b].tier >= 2) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("pxn all-to-all never leaves its rail while direct all-to-all crosses the spines") {
  // Two nodes of one scalable unit: GPU i's NIC is on rail i. Direct sends from GPU 0 to GPU 9 leave
  // on rail 0 and arrive on rail 1, so they climb to a spine; PXN first moves them over NVLink to
  // GPU 1, whose NIC is on rail 1, and they stay on leaf 1.
  const Router router(superpod());
  const auto req = request(Op::all_to_all, first_gpus(16), 1 << 20);
  const FlowGraph pxn = find_algorithm("pxn")->lower(router, req);  // summed per link: no link on a spine
  for (const Flow& f : pxn.flows) CHECK_FALSE(crosses_spine(superpod(), f));
  // One flow per pair to count the pairs that climb.
  const FlowGraph direct = lower_uniform_all_to_all(router, req.ranks, double(req.size_bytes) / 16, req.protocol, false,
                                                    AllToAllFlows::per_pair);
  REQUIRE(direct.flows.size() == 16 * 15);
  int direct_spine = 0;
  for (const Flow& f : direct.flows) direct_spine += crosses_spine(superpod(), f);
  // Of the 2 x 8 x 8 inter-node pairs, all but the 16 same-rail ones change rails.
  CHECK(direct_spine == 2 * 8 * 8 - 16);
}

TEST_CASE("pxn does not apply to a fabric without rails") {
  const Cluster c = load_cluster(test::source_path("scenarios/clusters/roce-3tier-clos.yaml"));
  const auto why = find_algorithm("pxn")->not_applicable(c, request(Op::all_to_all, first_gpus(16), 1024));
  REQUIRE(why.has_value());
  CHECK_THAT(*why, Catch::Contains("rail"));
  CHECK(find_algorithm("pxn")->not_applicable(c, request(Op::all_reduce, first_gpus(16), 1024)).has_value());
}

TEST_CASE("every ring channel visits each rank once and the channels spread over all rails") {
  const std::vector<int> ranks = first_gpus(64);  // 8 nodes
  std::map<int, int> inter_node_hops_per_rail;
  for (int ch = 0; ch < 16; ++ch) {
    const std::vector<int> order = ring_order(superpod(), ranks, ch);
    CHECK(std::set<int>(order.begin(), order.end()).size() == ranks.size());
    for (std::size_t i = 0; i + 1 < order.size(); ++i)
      if (superpod().node_of_gpu(order[i]) != superpod().node_of_gpu(order[i + 1])) {
        // Inter-node hops stay on one rail: the sender's NIC rail is the receiver's.
        CHECK(superpod().local_of_gpu(order[i]) == superpod().local_of_gpu(order[i + 1]));
        ++inter_node_hops_per_rail[superpod().local_of_gpu(order[i])];
      }
  }
  // 16 channels x 7 inner node boundaries, spread evenly: 14 hops on each of the 8 rails.
  REQUIRE(inter_node_hops_per_rail.size() == 8);
  for (auto [rail, hops] : inter_node_hops_per_rail) CHECK(hops == 14);
}

TEST_CASE("auto picks the fastest algorithm and protocol for every size") {
  const Router router(superpod());
  FabricEngine engine(superpod());
  SweepSpec spec;
  spec.op = Op::all_reduce;
  spec.ranks = first_gpus(16);
  spec.channels = 16;
  spec.sizes_bytes = {1024, 1 << 20, 1 << 28};
  const std::vector<SweepRow> chosen = run_sweep(engine, router, spec);
  for (std::size_t i = 0; i < chosen.size(); ++i)
    for (const char* algo : {"ring", "tree"})
      for (const Protocol& p : nccl_protocols()) {
        const auto req = CollectiveRequest{Op::all_reduce, spec.ranks, chosen[i].size_bytes, 16, p, 0};
        // Runs start at different engine clocks, so equal times may differ in the last bits.
        CHECK(chosen[i].time_s <= time_collective(engine, router, *find_algorithm(algo), req) * (1 + 1e-12));
      }
  // Small messages are latency-bound: a low-latency protocol wins. Large ones: Simple's full bandwidth.
  CHECK(chosen.front().protocol == "LL");
  CHECK(chosen.back().protocol == "Simple");
}

TEST_CASE("the collective command prints the same bytes on every run") {
  const std::string args =
      "collective --cluster " + test::source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
      " --gpus 16 --op all_reduce --algo auto -b 8 -e 64M -f 8";
  const auto first = test::run_cli(args), second = test::run_cli(args);
  REQUIRE(first.exit_code == 0);
  CHECK(first.stdout_text == second.stdout_text);
  CHECK_THAT(first.stdout_text, Catch::Contains("busbw") && Catch::Contains("Avg bus bandwidth"));
}

TEST_CASE("the collective command writes its rows as JSON") {
  const std::string json = test::temp_file("", ".json");
  const auto r = test::run_cli("collective --cluster " + test::source_path("scenarios/clusters/dgx-h100-superpod.yaml") +
                               " --gpus 8 --op all_gather --algo ring -b 1M -e 4M -f 2 --json " + json);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(test::read_file(json), Catch::Contains("\"size_bytes\": 1048576") && Catch::Contains("\"size_bytes\": 4194304") &&
                          Catch::Contains("\"busbw_GBps\""));
}

TEST_CASE("list names every registered algorithm, protocol and fabric") {
  const auto r = test::run_cli("list");
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"ring", "tree", "direct", "pxn", "deepep", "LL128", "Simple", "rail_optimized", "fat_tree", "single_switch"})
    CHECK_THAT(r.stdout_text, Catch::Contains(name));
}
