// Bad fabric input through the real binary: one line naming file, line and field, exit status 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// `shipped` with `from` replaced by `to`, run through `topology`: the error must sit at the line
/// of `at` in the edited text, name `field` and say `expected`.
void expect_error(const std::string& shipped, const std::string& from, const std::string& to, const std::string& at,
                  const std::string& field, const std::string& expected) {
  const std::string text = clustersim::test::shipped_with(shipped, from, to);
  const std::string file = clustersim::test::temp_file(text);
  const clustersim::test::CliResult r = clustersim::test::run_cli("topology " + file);
  INFO(r.stderr_text);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
  const std::string where = "error: " + file + ":" + std::to_string(clustersim::test::line_of(text, at)) + ": " + field + ": ";
  CHECK_THAT(r.stderr_text, StartsWith(where) && Contains(expected));
  std::remove(file.c_str());
}

const std::string kDualPlane = "scenarios/clusters/hpn-dual-plane.yaml";
const std::string kRailOnly = "scenarios/clusters/rail-only-h100-16k.yaml";
const std::string kFatTree = "scenarios/clusters/dgx-a100-fat-tree.yaml";

}  // namespace

TEST_CASE("a plane count that does not divide the NIC ports is named at fabric.planes") {
  expect_error(kDualPlane, "planes: 2 ", "planes: 3 ", "planes: 3", "fabric.planes",
               "expected a plane count that divides the NIC's ports (node.nics.ports: 2), got 3");
}

TEST_CASE("a multi-plane fabric without planes is a missing field") {
  expect_error(kDualPlane, "  planes: 2 ", "  # planes: 2 ", "fabric:", "fabric.planes", "missing required field");
}

TEST_CASE("planes on a fabric without planes, and NIC ports it would not wire, are rejected") {
  expect_error(kFatTree, "  nodes: 384\n", "  nodes: 384\n  planes: 2\n", "planes: 2", "fabric.planes",
               "expected no planes: only multi_plane fabrics have it");
  expect_error(kFatTree, "nics: {count: 8,", "nics: {count: 8, ports: 2,", "type: fat_tree", "fabric.type",
               "expected multi_plane for NICs of 2 ports");
}

TEST_CASE("an unknown routing policy is rejected with the known ones") {
  expect_error(kRailOnly, "  nodes: 2048\n", "  nodes: 2048\n  routing: random\n", "routing: random",
               "fabric.routing", "ecmp, adaptive, spray, valiant");
}

TEST_CASE("Valiant routing on a fabric without groups is rejected at fabric.routing") {
  expect_error(kRailOnly, "  nodes: 2048\n", "  nodes: 2048\n  routing: valiant\n", "routing: valiant",
               "fabric.routing", "expected ecmp, adaptive or spray on a rail_only fabric");
}

TEST_CASE("queue pairs per connection: a count outside 1 to 64, or under routing other than ecmp, is named") {
  expect_error(kFatTree, "  nodes: 384\n", "  nodes: 384\n  qps_per_connection: 0\n", "qps_per_connection: 0",
               "fabric.qps_per_connection", "expected an integer from 1 to 64");
  expect_error(kFatTree, "  nodes: 384\n", "  nodes: 384\n  qps_per_connection: 65\n", "qps_per_connection: 65",
               "fabric.qps_per_connection", "expected an integer from 1 to 64");
  expect_error(kFatTree, "  nodes: 384\n", "  nodes: 384\n  qps_per_connection: 2.5\n", "qps_per_connection: 2.5",
               "fabric.qps_per_connection", "expected an integer");
  // Written before or after the routing it conflicts with, the error is at the queue pairs.
  expect_error(kFatTree, "  nodes: 384\n", "  nodes: 384\n  routing: spray\n  qps_per_connection: 16\n",
               "qps_per_connection: 16", "fabric.qps_per_connection",
               "expected 1 under routing: spray: queue pairs are hashed onto paths only under routing: ecmp");
  expect_error(kFatTree, "  nodes: 384\n", "  nodes: 384\n  qps_per_connection: 16\n  routing: adaptive\n",
               "qps_per_connection: 16", "fabric.qps_per_connection", "expected 1 under routing: adaptive");
}

TEST_CASE("a rail-only rail that does not fit its tiers is named at fabric.tiers") {
  // 2048 nodes on one 64-port switch per rail, once the spine tier is deleted.
  expect_error(kRailOnly, "    - {radix: 64}                        # 32 rail spines\n", "", "tiers:", "fabric.tiers",
               "cannot build a rail: a single-tier tree takes at most its radix (64) ports, got 2048; add a tier");
}

TEST_CASE("a torus whose dimensions do not multiply to its node count is named at fabric.dims") {
  expect_error("scenarios/clusters/torus-h100-4x4x4.yaml", "dims: [4, 4, 4]", "dims: [4, 4, 3]", "dims:", "fabric.dims",
               "expected dimensions whose product is the node count (fabric.nodes: 64), got 4 x 4 x 3 = 48");
}

TEST_CASE("a dragonfly with more groups than its global links can join is named at fabric.groups") {
  expect_error("scenarios/clusters/dragonfly-h100.yaml", "groups: 9", "groups: 10", "groups: 10", "fabric.groups",
               "expected at most routers_per_group x global_links + 1 = 9 groups, got 10");
}

TEST_CASE("a two-level NVSwitch whose domain size does not divide the node is named at second_level.domain_gpus") {
  const std::string nvl576 = "scenarios/clusters/gb200-nvl576.yaml";
  expect_error(nvl576, "domain_gpus: 72,", "domain_gpus: 100,", "domain_gpus: 100", "node.scale_up.second_level.domain_gpus",
               "expected a number of GPUs that divides node.gpus (576) into two or more first-level domains, got 100");
  expect_error(nvl576, "oversubscription: 1}", "oversubscription: 0}", "domain_gpus: 72",
               "node.scale_up.second_level.oversubscription", "expected");
  expect_error(nvl576, "second_level: {domain_gpus: 72,", "second_level: {domains: 8, domain_gpus: 72,", "domain_gpus: 72",
               "node.scale_up.second_level.domains", "unknown key (expected one of: domain_gpus, oversubscription)");
}
