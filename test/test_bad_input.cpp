// Bad input, through the real binary: every user error is one line on stderr that names the file,
// the line and the field, and the exit status is 2. No crash, no backtrace, no silent default.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "one_line_error.hpp"
#include "support.hpp"

using clustersim::test::line_of;

namespace {

using clustersim::test::CliResult;
using clustersim::test::run_cli;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

const std::string kSuperpod = "scenarios/clusters/dgx-h100-superpod.yaml";   // rail-optimized, 2 tiers
const std::string kFatTree = "scenarios/clusters/dgx-a100-fat-tree.yaml";    // fat-tree, 3 tiers

/// How every user error starts: "error: FILE[:LINE]: [FIELD: ]".
std::string error_prefix(const std::string& file, int line, const std::string& field) {
  std::string out = "error: " + file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  return out;
}

using clustersim::test::require_one_line_error;

/// A shipped cluster file with one edit, and what the error must name: the line of `at` in the edited
/// text (so the line follows from the edit) and the field path (empty for a YAML syntax error).
struct BadCluster {
  std::string shipped;
  std::string from, to;
  std::string at;
  std::string field;
};

/// Runs `collective` on the edited cluster and checks the one error line.
void expect_cluster_error(const BadCluster& bad, const std::string& expected) {
  const std::string original = clustersim::test::shipped_with(bad.shipped, "", "");
  line_of(original, bad.from);  // the edit happens in exactly one place
  const std::string text = clustersim::test::shipped_with(bad.shipped, bad.from, bad.to);
  const std::string file = clustersim::test::temp_file(text);
  const CliResult r = run_cli("collective --cluster " + file + " --gpus 8");
  require_one_line_error(r, error_prefix(file, line_of(text, bad.at), bad.field), expected);
  std::remove(file.c_str());
}

/// Runs the CLI with `args` and checks the one error line names `where` (a file or "command line").
void expect_cli_error(const std::string& args, const std::string& where, const std::string& field,
                      const std::string& expected) {
  require_one_line_error(run_cli(args), error_prefix(where, 0, field), expected);
}

const std::string kNicGpus = "gpus: [0, 1, 2, 3, 4, 5, 6, 7]";

}  // namespace

// ----- cluster files -----

TEST_CASE("malformed YAML is reported at the line of the syntax error") {
  expect_cluster_error({kSuperpod, kNicGpus + "}", kNicGpus + "]}", "7]]}", ""}, "malformed YAML");
}

TEST_CASE("an unknown key is rejected with the keys allowed there") {
  expect_cluster_error({kSuperpod, "latency_us: 0.6, gpus:", "latency_us: 0.6, speed: 400, gpus:", "speed: 400",
                        "node.nics.speed"},
                       "unknown key (expected one of: count, ports, link_type, bandwidth_Gbps, latency_us, gpus)");
}

TEST_CASE("a word where an integer belongs is a type error") {
  expect_cluster_error({kSuperpod, "  gpus: 8\n", "  gpus: eight\n", "gpus: eight", "node.gpus"},
                       "expected an integer, got 'eight'");
}

TEST_CASE("a missing required field is reported at the mapping that lacks it") {
  expect_cluster_error({kFatTree, "  nodes: 384\n", "", "fabric:", "fabric.nodes"}, "missing required field");
}

TEST_CASE("a negative bandwidth is rejected") {
  expect_cluster_error({kSuperpod, "bandwidth_Gbps: 400, latency_us: 0.6", "bandwidth_Gbps: -400, latency_us: 0.6",
                        "-400", "node.nics.bandwidth_Gbps"},
                       "expected a number from 0.001 to 1e+06 Gb/s, got '-400'");
}

TEST_CASE("a zero bandwidth is rejected") {
  expect_cluster_error({kSuperpod, "bandwidth_GBps: 64", "bandwidth_GBps: 0", "bandwidth_GBps: 0",
                        "node.pcie.bandwidth_GBps"},
                       "expected a number from 0.001 to 1e+06 GB/s, got '0'");
}

TEST_CASE("a link type not declared under link_types is rejected") {
  expect_cluster_error({kSuperpod, "link_type: ndr, ", "link_type: xdr, ", "xdr", "node.nics.link_type"},
                       "expected a link type declared under link_types");
}

TEST_CASE("a bandwidth efficiency above 1 is rejected") {
  expect_cluster_error({kSuperpod, "bandwidth_efficiency: 0.94", "bandwidth_efficiency: 1.2", "1.2",
                        "link_types.ndr.bandwidth_efficiency"},
                       "expected a number from 0.001 to 1 (a fraction of line rate), got '1.2'");
}

TEST_CASE("the NICs' GPU list must have one entry per NIC") {
  expect_cluster_error({kSuperpod, kNicGpus, "gpus: [0, 1, 2, 3]", "[0, 1, 2, 3]", "node.nics.gpus"},
                       "expected one GPU index per NIC (8)");
}

TEST_CASE("a NIC next to a GPU the node does not have is rejected") {
  expect_cluster_error({kSuperpod, kNicGpus, "gpus: [0, 1, 2, 3, 4, 5, 6, 8]", "6, 8]", "node.nics.gpus[7]"},
                       "expected a GPU index in [0, 8)");
}

TEST_CASE("an unknown fabric type is rejected with the known ones") {
  expect_cluster_error({kSuperpod, "type: rail_optimized", "type: hypercube", "hypercube", "fabric.type"},
                       "expected a fabric type, one of: single_switch, fat_tree, rail_optimized");
}

TEST_CASE("a scalable unit larger than a rail leaf's down ports cannot be built") {
  expect_cluster_error({kSuperpod, "nodes_per_unit: 32", "nodes_per_unit: 40", "nodes_per_unit",
                        "fabric.nodes_per_unit"},
                       "expected at most the leaf's 32 down ports");
}

TEST_CASE("a 2-tier fat-tree with more leaves than its spines can take cannot be built") {
  // Dropping the core tier leaves its comment behind, on a line of its own.
  expect_cluster_error({kFatTree, "- {radix: 40}", "", "tiers:", "fabric.tiers"},
                       "cannot build: too many leaves (154) for spines of radix 40; add a core tier");
}

TEST_CASE("a count too large for the simulator is rejected, not wrapped around") {
  expect_cluster_error({kSuperpod, "nodes: 127", "nodes: 4294967423", "4294967423", "fabric.nodes"},
                       "expected an integer from 1 to 4194304 nodes, got '4294967423'");
}

TEST_CASE("a cluster beyond the simulator's GPU bound is rejected") {
  expect_cluster_error({kSuperpod, "nodes: 127", "nodes: 1000000", "1000000", "fabric.nodes"},
                       "expected at most 4194304 GPUs in all");
}

TEST_CASE("a field the fabric type does not use is an error and not ignored") {
  expect_cluster_error({kFatTree, "  nodes: 384\n", "  nodes: 384\n  nodes_per_unit: 20\n", "nodes_per_unit",
                        "fabric.nodes_per_unit"},
                       "only rail_optimized fabrics have scalable units");
}

TEST_CASE("a tier whose oversubscription leaves no up ports is named") {
  expect_cluster_error({kSuperpod, "{radix: 64, oversubscription: 1}", "{radix: 64, oversubscription: 1000}",
                        "oversubscription: 1000", "fabric.tiers[0]"},
                       "leave ports both down and up");
}

// ----- command line -----

TEST_CASE("asking for more GPUs than the cluster has names the cluster's size") {
  const std::string cluster = clustersim::test::source_path(kSuperpod);
  expect_cli_error("collective --cluster " + cluster + " --gpus 100000", cluster, "--gpus",
                   "expected 2 to 1016 GPUs (the cluster has 1016), got 100000");
}

TEST_CASE("an algorithm that does not exist is rejected with the known ones") {
  expect_cli_error("collective --cluster " + clustersim::test::source_path(kSuperpod) + " --gpus 16 --algo nope",
                   "command line", "--algo", "expected best (alias auto), nccl or one of: ");
}

TEST_CASE("an algorithm that does not implement the op is rejected") {
  const std::string cluster = clustersim::test::source_path(kSuperpod);
  expect_cli_error("collective --cluster " + cluster + " --gpus 16 --algo tree --op all_gather", cluster, "--algo",
                   "tree does not implement all_gather");
}

TEST_CASE("PXN is rejected on a fabric without rails") {
  const std::string cluster = clustersim::test::source_path(kFatTree);
  expect_cli_error("collective --cluster " + cluster + " --gpus 16 --algo pxn --op all_to_all", cluster, "--algo",
                   "pxn needs a rail-optimized fabric; fat_tree has no rails");
}

TEST_CASE("deepep is rejected on part of a node and for other ops") {
  const std::string cluster = clustersim::test::source_path("scenarios/clusters/h800-deepseek.yaml");
  expect_cli_error("collective --cluster " + cluster + " --gpus 12 --algo deepep --op all_to_all", cluster, "--algo",
                   "deepep needs whole nodes: 12 GPUs is not a multiple of 8 per node");
  expect_cli_error("collective --cluster " + cluster + " --gpus 16 --algo deepep --op all_reduce", cluster, "--algo",
                   "deepep does not implement all_reduce");
}

TEST_CASE("NVLS is rejected on a cluster whose NVSwitch declares no NVLink SHARP") {
  const std::string cluster = clustersim::test::source_path(kFatTree);  // A100: NVSwitch gen 2
  expect_cli_error("collective --cluster " + cluster + " --gpus 8 --algo nvls", cluster, "--algo",
                   "nvls needs an NVLS-capable NVSwitch (node.scale_up.nvls: true in ");
  expect_cli_error("collective --cluster " + cluster + " --gpus 16 --algo nvls_tree", cluster, "--algo",
                   "nvls_tree needs an NVLS-capable NVSwitch");
}

TEST_CASE("NVLS across nodes, or under a protocol NCCL does not run it with, is rejected") {
  const std::string cluster = clustersim::test::source_path(kSuperpod);
  expect_cli_error("collective --cluster " + cluster + " --gpus 16 --algo nvls", cluster, "--algo",
                   "nvls runs inside one NVSwitch domain; these 16 ranks span 2 nodes (nvls_tree crosses nodes)");
  expect_cli_error("collective --cluster " + cluster + " --gpus 8 --algo nvls --proto LL", cluster, "--algo",
                   "nvls runs only NCCL's Simple protocol (or ideal), not LL");
}

TEST_CASE("nvls: true on a full-mesh node is rejected at its line") {
  expect_cluster_error({"scenarios/clusters/mi300x-cluster.yaml", "latency_us: 0.5}", "latency_us: 0.5, nvls: true}",
                        "nvls: true", "node.scale_up.nvls"},
                       "expected false or no nvls on a full_mesh scale-up");
}

TEST_CASE("PAT with more than one GPU per node and recursive algorithms on a group that is not a power of two are rejected") {
  const std::string cluster = clustersim::test::source_path(kSuperpod);
  expect_cli_error("collective --cluster " + cluster + " --gpus 16 --algo pat --op all_gather", cluster, "--algo",
                   "pat needs one GPU per node (as NCCL enables it); these 16 ranks sit on 2 nodes");
  expect_cli_error("collective --cluster " + cluster + " --gpus 24 --algo halving_doubling", cluster, "--algo",
                   "halving_doubling needs a power-of-two number of ranks, not 24");
  expect_cli_error("collective --cluster " + cluster + " --gpus 8 --algo hierarchical", cluster, "--algo",
                   "hierarchical crosses nodes; these ranks sit in one (use ring)");
}

TEST_CASE("a size with an unknown suffix is rejected") {
  expect_cli_error("collective --cluster " + clustersim::test::source_path(kSuperpod) + " --gpus 16 -b 8X",
                   "command line", "-b", "expected a size like 8, 64K, 1M or 8G, got '8X'");
}

TEST_CASE("a size too large to count in bytes is rejected, not wrapped around") {
  expect_cli_error("collective --cluster " + clustersim::test::source_path(kSuperpod) + " --gpus 16 -e 20000000000G",
                   "command line", "-e", "got '20000000000G'");
}

TEST_CASE("a channel count below 1 is rejected, not replaced by the default") {
  expect_cli_error("collective --cluster " + clustersim::test::source_path(kSuperpod) + " --gpus 16 --channels -3",
                   "command line", "", "--channels");
}

TEST_CASE("an unknown op is rejected with the known ones") {
  expect_cli_error("collective --cluster " + clustersim::test::source_path(kSuperpod) + " --gpus 16 --op all_smash",
                   "command line", "--op", "expected one of: all_reduce");
}

TEST_CASE("a missing cluster file is reported, not crashed on") {
  expect_cli_error("collective --cluster /nonexistent/cluster.yaml --gpus 8", "/nonexistent/cluster.yaml", "",
                   "cannot open file");
}

TEST_CASE("an option value the parser cannot convert is one line too") {
  expect_cli_error("collective --cluster " + clustersim::test::source_path(kSuperpod) + " --gpus eight",
                   "command line", "", "--gpus");
}

TEST_CASE("blocking pipeline transfers with a schedule other than Megatron's are an error at the field") {
  const auto r = run_cli("run " + clustersim::test::source_path("scenarios/gpt3-175b-h100-pp16.yaml") +
                         " --set schedule=zb-v --set parallel.overlap_p2p_comm=false");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.stderr_text, Contains(": parallel.overlap_p2p_comm: expected true with zb-v: blocking send/recv is modelled"));
}

TEST_CASE("a Megatron switch that is not a boolean is an error at the field") {
  for (const std::string field : {"overlap_tp_backward", "gradient_accumulation_fusion"}) {
    const auto r = run_cli("run " + clustersim::test::source_path("scenarios/gpt3-175b-h100-pp16.yaml") +
                           " --set parallel." + field + "=sometimes");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.stderr_text, Contains(": parallel." + field + ": expected true or false"));
  }
}

TEST_CASE("validate fails on a row's user error instead of reporting it as not fitting in memory") {
  // The validation rows on GB200s: the catalog has no GEMM calibration for it, an error that only
  // planning the iteration finds (in validate's child process), and not an out-of-memory row.
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "clustersim-validate-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  fs::copy(clustersim::test::source_path("scenarios"), dir, fs::copy_options::recursive);
  const std::string cluster = dir + "/clusters/dgx-a100-superpod.yaml";
  std::ofstream(cluster) << clustersim::test::shipped_with("scenarios/clusters/dgx-a100-superpod.yaml",
                                                          "gpu: A100-SXM-80GB", "gpu: GB200");
  const std::string catalog = clustersim::test::read_file(dir + "/gpus.yaml");
  const CliResult r = run_cli("validate --rows " + dir + "/validation/published.yaml --only narayanan-1.7b");
  require_one_line_error(r, error_prefix(dir + "/gpus.yaml", line_of(catalog, "- name: GB200"), "gpus[5].gemm_efficiency"),
                         "expected a gemm_efficiency calibration for GB200");
  fs::remove_all(dir);
}
