// clustersim search's bad input, through the real binary: one line naming the option (or the
// scenario, for a space with no valid configuration, with the rule that removed the last ones),
// exit status 2, nothing on stdout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "one_line_error.hpp"
#include "support.hpp"

namespace {

using clustersim::test::CliResult;
using clustersim::test::run_cli;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

const std::string kScenario = clustersim::test::source_path("scenarios/validation/narayanan-1.7b.yaml");
using clustersim::test::require_one_line_error;

}  // namespace

TEST_CASE("search: a --vary dimension that does not exist is named with the ones that do") {
  require_one_line_error(run_cli("search " + kScenario + " --vary tp,pipeline -q"), "error: command line: --vary: ",
                         "expected dimensions from tp,pp,dp,cp,ep,vpp,microbatch,recompute,zero,schedule; got 'pipeline'");
}

TEST_CASE("search: --top and -j out of range or not integers") {
  require_one_line_error(run_cli("search " + kScenario + " --top -1 -q"), "error: command line: --top: ", "from 0 to 10000");
  require_one_line_error(run_cli("search " + kScenario + " --top many -q"), "error: command line: --top: ", "integer");
  require_one_line_error(run_cli("search " + kScenario + " -j 0 -q"), "error: command line: -j: ", "from 1 to 256");
  require_one_line_error(run_cli("search " + kScenario + " -j 1.5 -q"), "error: command line: -j: ", "integer");
}

TEST_CASE("search: a space with no valid configuration names the rule that removed the last ones") {
  // 32 GPUs of one replica each (tp x pp = 1): a global batch of 1000 sequences is never a
  // multiple of microbatch x 32, so the batch rule removes every layout the earlier rules kept.
  require_one_line_error(run_cli("search " + kScenario + " --vary microbatch --global-batch 1000 -q"),
                         "error: " + kScenario + ": search: ", "batch removed the last of them");
  // GPT-3 175B on one 8-GPU node: every layout that the divisibility rules leave runs out of memory.
  const std::string gpt3 = clustersim::test::source_path("scenarios/gpt3-175b-a100-1024.yaml");
  require_one_line_error(run_cli("search " + gpt3 + " --set gpus=8 --set parallel.pp=1 --set parallel.dp=1 "
                                 "--set parallel.virtual_stages=1 --set schedule=1f1b --set global_batch=8 --vary tp,pp,recompute,zero -q"),
                         "error: " + gpt3 + ": search: ", "memory removed the last of them");
}

TEST_CASE("search: a multimodal model is refused at its scenario's model, not screened wrongly") {
  const std::string vlm = clustersim::test::source_path("scenarios/vlm-llava-llama3-70b-h100-1024.yaml");
  require_one_line_error(run_cli("search " + vlm + " --vary tp -q"), "error: " + vlm + ": model: ",
                         "search does not screen multimodal models yet");
}
