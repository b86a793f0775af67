// YamlField: typed, path- and line-tracking access to YAML; and every shipped cluster file loading.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"
#include "topologies/cluster.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"

using clustersim::test::error_of;

namespace {

using clustersim::UserError;
using clustersim::YamlField;
using Catch::Matchers::Contains;

YamlField yaml(const std::string& text) { return YamlField::load_string(text, "t.yaml"); }

void check_error(const UserError& e, int line, const std::string& path, const std::string& expected) {
  INFO(e.what());
  CHECK(e.file() == "t.yaml");
  CHECK(e.line() == line);
  CHECK(e.field_path() == path);
  CHECK_THAT(e.what(), Contains(expected));
}

const char* const kNode =
    "# a comment\n"                                        // 1
    "node:\n"                                              // 2
    "  gpus: 8\n"                                          // 3
    "  name: dgx\n"                                        // 4
    "  ratio: 0.5\n"                                       // 5
    "  nvlink: true\n"                                     // 6
    "  nics:\n"                                            // 7
    "    count: 4\n"                                       // 8
    "    gpus: [0, 2, 4, 6]\n"                             // 9
    "  tiers:\n"                                           // 10
    "    - {radix: 64}\n"                                  // 11
    "    - {radix: 32}\n";                                 // 12

std::vector<std::string> shipped_clusters() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(clustersim::test::source_path("scenarios/clusters")))
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().string());
  return out;
}

}  // namespace

// ----- YamlField -----

TEST_CASE("typed access reads integers, numbers, strings, booleans and integer lists") {
  const YamlField node = yaml(kNode).child("node");
  CHECK(node.child("gpus").as_integer() == 8);
  CHECK(node.child("gpus").as_positive_integer() == 8);
  CHECK(node.child("gpus").as_number() == 8.0);
  CHECK(node.child("name").as_string() == "dgx");
  CHECK(node.child("ratio").as_positive() == 0.5);
  CHECK(node.child("nvlink").as_bool());
  CHECK(node.child("nics").child("gpus").as_integer_list() == std::vector<long>{0, 2, 4, 6});
  CHECK(node.child("name").as_choice({"hgx", "dgx"}) == "dgx");
  CHECK(node.child("nics").is_map());
  CHECK(node.child("tiers").is_sequence());
  CHECK(node.child("tiers").size() == 2);
}

TEST_CASE("paths name nested fields and list elements") {
  const YamlField nics = yaml(kNode).child("node").child("nics");
  CHECK(nics.path() == "node.nics");
  CHECK(nics.child("gpus").element(3).path() == "node.nics.gpus[3]");
  CHECK(nics.child("gpus").element(3).as_integer() == 6);
  CHECK(yaml(kNode).child("node").child("tiers").element(1).child("radix").path() == "node.tiers[1].radix");
}

TEST_CASE("lines are 1-based and a field is on its key's line") {
  const YamlField node = yaml(kNode).child("node");
  CHECK(node.line() == 2);
  CHECK(node.child("gpus").line() == 3);
  CHECK(node.child("nics").line() == 7);  // not 8, where the block mapping's first entry is
  CHECK(node.child("nics").child("gpus").element(3).line() == 9);
  CHECK(node.child("tiers").line() == 10);
  CHECK(node.child("tiers").element(1).line() == 12);
  CHECK(node.child("tiers").element(1).child("radix").line() == 12);
}

TEST_CASE("an absent optional field is not found, and a required one names its path and its parent's line") {
  const YamlField nics = yaml(kNode).child("node").child("nics");
  CHECK_FALSE(nics.find("speed").has_value());
  CHECK(nics.find("count").has_value());
  check_error(error_of([&] { nics.child("speed"); }), 7, "node.nics.speed", "missing required field");
}

TEST_CASE("a key with no value is an error, not a default") {
  check_error(error_of([] { yaml("a: 1\nb:\n").find("b"); }), 2, "b", "expected a value");
}

TEST_CASE("an unknown key is rejected at its line, naming the allowed keys") {
  const YamlField nics = yaml(kNode).child("node").child("nics");
  CHECK_NOTHROW(nics.expect_keys({"count", "gpus"}));
  check_error(error_of([&] { nics.expect_keys({"count", "link_type"}); }), 9, "node.nics.gpus",
              "unknown key (expected one of: count, link_type)");
}

TEST_CASE("a key that is not a name is rejected, not crashed on") {
  check_error(error_of([] { yaml("top:\n  ? [a, b]\n  : 1\n").child("top").expect_keys({"a"}); }), 2, "top",
              "expected field names");
}

TEST_CASE("a value of the wrong type names what was expected and what was found") {
  const YamlField node = yaml(kNode).child("node");
  check_error(error_of([&] { node.child("name").as_integer(); }), 4, "node.name", "expected an integer, got 'dgx'");
  check_error(error_of([&] { node.child("ratio").as_integer(); }), 5, "node.ratio", "expected an integer, got '0.5'");
  check_error(error_of([&] { node.child("name").as_number(); }), 4, "node.name", "expected a number, got 'dgx'");
  check_error(error_of([&] { node.child("nics").as_string(); }), 7, "node.nics", "expected a string, got a mapping");
  check_error(error_of([&] { node.child("gpus").as_bool(); }), 3, "node.gpus", "expected true or false");
  check_error(error_of([&] { node.child("gpus").size(); }), 3, "node.gpus", "expected a list, got '8'");
  check_error(error_of([&] { node.child("gpus").child("x"); }), 3, "node.gpus", "expected a mapping, got '8'");
  check_error(error_of([&] { node.child("name").as_choice({"hgx", "mgx"}); }), 4, "node.name",
              "expected one of: hgx, mgx; got 'dgx'");
}

TEST_CASE("sign checks reject zero and negatives where they do not belong") {
  const YamlField f = yaml("zero: 0\nneg: -1.5\nnan: .nan\n");
  CHECK(f.child("zero").as_non_negative() == 0.0);
  check_error(error_of([&] { f.child("zero").as_positive(); }), 1, "zero", "expected a positive number, got '0'");
  check_error(error_of([&] { f.child("zero").as_positive_integer(); }), 1, "zero", "expected a positive integer");
  check_error(error_of([&] { f.child("neg").as_non_negative(); }), 2, "neg", "expected a number >= 0, got '-1.5'");
  check_error(error_of([&] { f.child("nan").as_number(); }), 3, "nan", "expected a number");
}

TEST_CASE("malformed YAML is a UserError at the line of the syntax error") {
  check_error(error_of([] { yaml("a: 1\nb: [1, 2\nc: 3\n"); }), 3, "", "malformed YAML");
  check_error(error_of([] { yaml("a: 1\nb: [1, 2]]\n"); }), 2, "", "malformed YAML");
}

TEST_CASE("a file that is not a mapping at the top level is rejected") {
  check_error(error_of([] { yaml("- 1\n- 2\n"); }), 1, "", "expected a mapping at the top level");
  check_error(error_of([] { yaml(""); }), 1, "", "expected a mapping at the top level");
}

TEST_CASE("a file that cannot be opened is a UserError naming it") {
  const UserError e = error_of([] { YamlField::load_file("/nonexistent/cluster.yaml"); });
  CHECK(e.file() == "/nonexistent/cluster.yaml");
  CHECK_THAT(e.what(), Contains("cannot open file"));
}

// ----- shipped cluster files -----

TEST_CASE("every shipped cluster file loads and builds") {
  const std::vector<std::string> files = shipped_clusters();
  REQUIRE(files.size() >= 4);
  for (const std::string& file : files) {
    INFO(file);
    const clustersim::ClusterSpec spec = clustersim::load_cluster_spec(file);
    CHECK(spec.file == file);
    const clustersim::Cluster cluster = clustersim::build_cluster(spec);
    CHECK(cluster.gpu_count() == spec.gpu_count());
    CHECK(cluster.nic_vertex.size() == static_cast<std::size_t>(spec.fabric.nodes * spec.node.nics));
    CHECK_FALSE(cluster.switches.empty());
  }
}

TEST_CASE("cluster fields are read in their units: Gb/s and GB/s to bytes/s, us to s") {
  const clustersim::ClusterSpec spec =
      clustersim::load_cluster_spec(clustersim::test::source_path("scenarios/clusters/dgx-h100-superpod.yaml"));
  CHECK(spec.name == "dgx-h100-superpod");
  CHECK(spec.node.gpus == 8);
  CHECK(spec.node.scale_up == clustersim::ScaleUp::nvswitch);
  CHECK(spec.node.scale_up_link.bandwidth_Bps == Approx(450e9));  // 450 GB/s
  CHECK(spec.node.scale_up_link.latency_s == Approx(0.25e-6));   // 0.25 us
  CHECK(spec.node.nics == 8);
  CHECK(spec.node.nic_link.type == "ndr");
  CHECK(spec.node.nic_link.bandwidth_Bps == Approx(50e9));        // 400 Gb/s
  CHECK(spec.node.nic_link.latency_s == Approx(0.6e-6));
  CHECK(spec.node.nic_gpu == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(spec.node.pcie_link.bandwidth_Bps == Approx(64e9));
  CHECK(spec.efficiency("ndr") == Approx(0.94));
  CHECK(spec.efficiency("nvlink4") == Approx(0.822));
  CHECK(spec.fabric.type == "rail_optimized");
  CHECK(spec.fabric.nodes == 127);
  CHECK(spec.fabric.nodes_per_unit == 32);
  CHECK(spec.fabric.switch_link.bandwidth_Bps == Approx(50e9));
  CHECK(spec.fabric.switch_link.latency_s == Approx(0.3e-6));
  REQUIRE(spec.fabric.tiers.size() == 2);
  CHECK(spec.fabric.tiers[0].radix == 64);
  CHECK(spec.fabric.tiers[1].oversubscription == 1.0);  // the documented default when absent
  CHECK(spec.gpu_count() == 1016);
}

TEST_CASE("a fat-tree's oversubscription is read per tier") {
  const clustersim::ClusterSpec spec =
      clustersim::load_cluster_spec(clustersim::test::source_path("scenarios/clusters/roce-3tier-clos.yaml"));
  REQUIRE(spec.fabric.tiers.size() == 3);
  CHECK(spec.fabric.tiers[1].oversubscription == 3.0);
  CHECK(spec.node.nic_link.bandwidth_Bps == Approx(50e9));
  CHECK(spec.node.nic_link.latency_s == Approx(1.0e-6));
}
