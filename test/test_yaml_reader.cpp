// YamlField: typed, path- and line-tracking access to YAML; and every shipped cluster file loading.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"
#include "topologies/cluster.hpp"
#include "topologies/input_file.hpp"
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
  CHECK(node.child("gpus").as_integer_in(1, 8) == 8);
  CHECK(node.child("gpus").as_number() == 8.0);
  CHECK(node.child("name").as_string() == "dgx");
  CHECK(node.child("ratio").as_number_in(0.5, 1) == 0.5);
  CHECK(node.child("nvlink").as_bool());
  CHECK(node.child("nics").child("gpus").as_integer_list(0, 7) == std::vector<long>{0, 2, 4, 6});
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
              "expected a field name as a key, got a list");
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

TEST_CASE("ranges reject values outside them, naming the range and the unit") {
  const YamlField f = yaml("zero: 0\nneg: -1.5\nnan: .nan\nhuge: 1e308\ntiny: 1e-300\n");
  CHECK(f.child("zero").as_number_in(0, 1) == 0.0);
  check_error(error_of([&] { f.child("zero").as_number_in(1e-3, 1e6, "GB/s"); }), 1, "zero",
              "expected a number from 0.001 to 1e+06 GB/s, got '0'");
  check_error(error_of([&] { f.child("zero").as_integer_in(1, 8); }), 1, "zero", "expected an integer from 1 to 8, got '0'");
  check_error(error_of([&] { f.child("neg").as_number_in(0, 10, "us"); }), 2, "neg", "expected a number from 0 to 10 us, got '-1.5'");
  check_error(error_of([&] { f.child("nan").as_number(); }), 3, "nan", "expected a number");
  check_error(error_of([&] { f.child("huge").as_number_in(0, 1e6); }), 4, "huge", "got '1e308'");
  check_error(error_of([&] { f.child("tiny").as_number_in(1e-3, 1); }), 5, "tiny", "got '1e-300'");
}

TEST_CASE("integers are decimal digits: fractions, exponents, hex and overflow are rejected, not truncated") {
  const YamlField f = yaml("a: 1.5\nb: 1e300\nc: 0x10\nd: 99999999999999999999\ne: 010\nf: -7\ng: +3\n");
  check_error(error_of([&] { f.child("a").as_integer(); }), 1, "a", "expected an integer, got '1.5'");
  check_error(error_of([&] { f.child("b").as_integer(); }), 2, "b", "expected an integer, got '1e300'");
  check_error(error_of([&] { f.child("c").as_integer(); }), 3, "c", "expected an integer, got '0x10'");
  check_error(error_of([&] { f.child("d").as_integer(); }), 4, "d", "too large to count");
  CHECK(f.child("e").as_integer() == 10);  // decimal, not yaml-cpp's octal 8
  CHECK(f.child("f").as_integer() == -7);
  CHECK(f.child("g").as_integer() == 3);
}

TEST_CASE("a key given twice is an error at the second, naming the first line") {
  check_error(error_of([] { yaml("a: 1\nb:\n  c: 2\n  d: 3\n  c: 4\n"); }), 5, "b.c",
              "duplicate key: 'c' is already given at line 3");
  check_error(error_of([] { yaml("a: {x: 1, y: 2, x: 3}\n"); }), 1, "a.x", "duplicate key: 'x' is already given at line 1");
  check_error(error_of([] { yaml("a: 1\nl:\n  - {n: 1}\n  - {n: 2, n: 3}\na: 2\n"); }), 4, "l[1].n", "duplicate key");
  CHECK(yaml("l:\n  - {n: 1}\n  - {n: 2}\n").child("l").size() == 2);  // the same key in two list items is fine
}

TEST_CASE("a second document or text after the end marker is an error naming both lines") {
  check_error(error_of([] { yaml("a: 1\n---\nb: 2\n"); }), 2, "", "a second one starts here (after the first, from line 1)");
  check_error(error_of([] { yaml("a: 1\n...\ngarbage\n"); }), 3, "", "expected one YAML document");
  CHECK(yaml("---\na: 1\n...\n# a comment after the end\n").child("a").as_integer() == 1);
}

TEST_CASE("aliases, deep nesting and too many values are refused before anything walks them") {
  check_error(error_of([] { yaml("a: &x [1, 2]\nb: [*x, *x]\n"); }), 2, "b[0]", "anchors and aliases are not supported");
  const std::string deep = "top: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  check_error(error_of([&] { yaml(deep); }), 1, "top", "nested more than 32 levels deep");
  std::string many = "l: [";
  for (int i = 0; i < 200'001; ++i) many += "1,";
  many += "1]\n";
  check_error(error_of([&] { yaml(many); }), 1, "", "more than 200000 values");
}

TEST_CASE("a syntax error names the field it is in") {
  const UserError e = error_of([] { yaml("node:\n  nics:\n    count: [1, 2\n  pcie: 3\n"); });
  CHECK(e.line() == 4);
  CHECK(e.field_path() == "node.pcie");
  CHECK_THAT(e.what(), Contains("malformed YAML"));
}

TEST_CASE("a syntax error after a bare list dash is still one error with a line") {
  // Found by `make fuzz`: finding the field path of the error's line ran past a "- " line's end.
  const UserError e = error_of([] { yaml(std::string("\n - \n\0\0\0\0\0\0\0i; i", 16)); });
  CHECK(e.line() > 0);
  CHECK_THAT(e.what(), Contains("malformed YAML"));
}

TEST_CASE("an input larger than the size bound is refused without reading it whole") {
  const std::string big = clustersim::test::temp_file(std::string(clustersim::kMaxInputBytes + 1, '#'));
  const UserError huge = error_of([&] { YamlField::load_file(big, "--cluster"); });
  CHECK(huge.file() == big);
  CHECK(huge.field_path() == "--cluster");
  CHECK_THAT(huge.what(), Contains("larger than 4 MiB"));
  std::remove(big.c_str());
  const UserError endless = error_of([] { YamlField::load_file("/dev/zero"); });
  CHECK(endless.file() == "/dev/zero");
  CHECK_THAT(endless.what(), Contains("larger than 4 MiB"));
  const UserError dir = error_of([] { YamlField::load_file("/tmp"); });
  CHECK_THAT(dir.what(), Contains("a directory, not a file"));
}

TEST_CASE("malformed YAML is a UserError at the line of the syntax error") {
  check_error(error_of([] { yaml("a: 1\nb: [1, 2\nc: 3\n"); }), 3, "c", "malformed YAML");
  check_error(error_of([] { yaml("a: 1\nb: [1, 2]]\n"); }), 2, "b", "malformed YAML");
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
