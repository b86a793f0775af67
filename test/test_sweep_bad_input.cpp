// clustersim sweep's bad input, through the real binary: a cluster dimension that does not exist,
// a point that cannot be built (naming the value), a price catalog entry without a source or a unit,
// a point with no valid configuration (naming the rule that removed the last ones): one line,
// exit status 2, nothing on stdout.
#include <catch2/catch.hpp>

#include <string>

#include "one_line_error.hpp"
#include "support.hpp"

namespace {

using clustersim::test::require_one_line_error;
using clustersim::test::run_cli;

const std::string kScenario = clustersim::test::source_path("scenarios/validation/narayanan-1.7b.yaml");
const std::string kSweep = "sweep " + kScenario + " --vary pp --top 1 -q ";

}  // namespace

TEST_CASE("sweep: a cluster dimension that does not exist is named with the ones that do", "[sweep]") {
  require_one_line_error(run_cli(kSweep + "--vary-cluster spine_count=4,8"), "error: command line: --vary-cluster: ",
                         "expected a dimension among cluster, gpu, gpus_per_node, nics_per_node, nic_Gbps, fabric, rails, "
                         "oversubscription.N, radix.N, switches.N (N: the tier, 1 to 3); got 'spine_count'");
  require_one_line_error(run_cli(kSweep + "--vary-cluster oversubscription.7=2"), "error: command line: --vary-cluster: ",
                         "got 'oversubscription.7'");
  require_one_line_error(run_cli(kSweep + "--vary-cluster nic_Gbps"), "error: command line: --vary-cluster: ",
                         "expected NAME=VALUE,VALUE,...");
  require_one_line_error(run_cli(kSweep + "--vary-cluster nic_Gbps=200,,400"), "error: command line: --vary-cluster: ",
                         "nic_Gbps: expected a value between commas");
  require_one_line_error(run_cli(kSweep + "--vary-cluster rails=yes"), "error: command line: --vary-cluster: ",
                         "rails: expected true or false; got 'yes'");
  require_one_line_error(run_cli(kSweep + "--vary-cluster gpu=B200 --vary-cluster gpu=H100-SXM"),
                         "error: command line: --vary-cluster: ", "expected each dimension once; 'gpu' is given twice");
}

TEST_CASE("sweep: a point that cannot be built says which point and what the cluster expected", "[sweep]") {
  require_one_line_error(run_cli(kSweep + "--vary-cluster nic_Gbps=200,fast"), "error: command line: --vary-cluster: ",
                         "point nic_Gbps=fast cannot be built: node.nics.bandwidth_Gbps: expected a number");
  require_one_line_error(run_cli(kSweep + "--vary-cluster gpu=H900"), "error: command line: --vary-cluster: ",
                         "point gpu=H900 cannot be built: gpu: ");
  require_one_line_error(run_cli(kSweep + "--vary-cluster gpus_per_node=0"), "error: command line: --vary-cluster: ",
                         "point gpus_per_node=0: gpus_per_node: expected a whole number of at least 1, got '0'");
  // The procurement fat tree has two tiers.
  const std::string fat_tree = clustersim::test::source_path("scenarios/procurement/llama3-70b-1024.yaml");
  require_one_line_error(run_cli("sweep " + fat_tree + " --vary-cluster radix.3=64 -q"), "error: command line: --vary-cluster: ",
                         "point radix.3=64: radix.3: the cluster");
  // Its leaves have 32 uplinks each: 12 spines cannot take an equal share, and the leaves' count
  // follows from the NICs.
  require_one_line_error(run_cli("sweep " + fat_tree + " --vary-cluster switches.2=16,12 -q"), "error: command line: --vary-cluster: ",
                         "point switches.2=12 cannot be built: fabric.tiers: cannot build: 12 spines do not divide the 32 "
                         "uplinks of each switch below evenly");
  require_one_line_error(run_cli("sweep " + fat_tree + " --vary-cluster switches.1=4 -q"), "error: command line: --vary-cluster: ",
                         "point switches.1=4 cannot be built: fabric.tiers[0].switches: expected switches only on a tier above the leaves");
}

TEST_CASE("sweep: a price catalog entry without a source, a date or a unit is an error at its line", "[sweep]") {
  const std::string shipped = clustersim::test::read_file(clustersim::test::source_path("scenarios/prices.yaml"));
  const std::string no_source = clustersim::test::temp_file(clustersim::test::replaced_all(
      shipped, "    source: \"'H100 Freakonomics' spreadsheet (above): the rest of $1,280 a link after two optics\"\n", "",
      "prices.yaml"));
  require_one_line_error(run_cli(kSweep + "--prices " + no_source), "error: " + no_source + ":",
                         "cables[0].source: missing required field");
  const std::string no_unit = clustersim::test::temp_file(
      clustersim::test::replaced_all(shipped, "    price_usd: 80\n", "    price: 80\n", "prices.yaml"));
  require_one_line_error(run_cli(kSweep + "--prices " + no_unit), "error: " + no_unit + ":",
                         "cables[0].price: expected the unit in the key: price_usd");
  const std::string power_no_unit = clustersim::test::temp_file(
      clustersim::test::replaced_all(shipped, "    power_W: 747\n", "    power: 747\n", "prices.yaml"));
  require_one_line_error(run_cli(kSweep + "--prices " + power_no_unit), "error: " + power_no_unit + ":",
                         "switches[0].power: expected the unit in the key: power_W");
}

TEST_CASE("sweep: a point with no valid configuration names the point and the rule that removed the last ones", "[sweep]") {
  // GPT-3 175B on one 8-GPU node: every layout the divisibility rules leave runs out of memory.
  const std::string gpt3 = clustersim::test::source_path("scenarios/gpt3-175b-a100-1024.yaml");
  require_one_line_error(run_cli("sweep " + gpt3 + " --set gpus=8 --set parallel.pp=1 --set parallel.dp=1 "
                                 "--set parallel.virtual_stages=1 --set schedule=1f1b --set global_batch=8 "
                                 "--vary tp,pp,recompute,zero --vary-cluster gpu=A100-SXM-80GB -q"),
                         "error: command line: --vary-cluster: point gpu=A100-SXM-80GB: expected at least one valid configuration among ",
                         "memory removed the last of them");
}
