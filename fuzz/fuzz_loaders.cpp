// libFuzzer target over every loader a user's text reaches: cluster (and, when small, its graph),
// model, GPU catalog, kernel table, the YAML reader itself, a whole scenario (with the shipped
// clusters, models and catalog beside it), `--set` overrides (one a line) of a shipped scenario, a
// serving file, a request trace (CSV and JSONL), nccl-tests output (`calibrate`), a calibration
// file, a price catalog, a multi-job file and a serving validation file.
// The first byte picks the loader; the rest is the file. A UserError is the expected answer to bad
// input; anything else (a crash, a sanitizer report, another exception, a leak, a timeout) is a
// finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "simulator/nccl_tests_text.hpp"
#include "simulator/price_catalog.hpp"
#include "simulator/serve_validation.hpp"
#include "topologies/cluster.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/calibration_file.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/jobs.hpp"
#include "workloads/model.hpp"
#include "workloads/scenario.hpp"
#include "workloads/serving/request_stream.hpp"
#include "workloads/serving/serving_spec.hpp"

using namespace clustersim;
namespace fs = std::filesystem;

namespace {

/// Where a fuzzed scenario is written: <dir>/d/scenario.yaml, with the shipped clusters, models and
/// catalog linked in both <dir>/d and <dir>, so that `clusters/x.yaml` and `../clusters/x.yaml`
/// (the shipped scenarios' two spellings) both resolve.
fs::path scenario_dir;

fs::path make_scenario_dir() {
  const fs::path shipped = fs::path(CLUSTERSIM_SOURCE_DIR) / "scenarios";
  std::string pattern = (fs::temp_directory_path() / "clustersim-fuzz-XXXXXX").string();
  const fs::path dir = mkdtemp(pattern.data());
  fs::create_directory(dir / "d");
  for (const fs::path& at : {dir, dir / "d"})
    for (const char* name : {"clusters", "models", "gpus.yaml", "prices.yaml"}) fs::create_symlink(shipped / name, at / name);
  return dir / "d";
}

/// Writes the input as <scenario_dir>/name, for the loaders that take a path.
std::string write_input(const char* name, const std::string& text) {
  const fs::path file = scenario_dir / name;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  return file.string();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  scenario_dir = make_scenario_dir();
  std::atexit([] { fs::remove_all(scenario_dir.parent_path()); });  // removes the links, not what they name
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 15) {
      case 0: {
        const ClusterSpec spec = parse_cluster_spec(YamlField::load_string(text, "cluster.yaml"));
        // Larger graphs are valid but slow (a shipped 1016-GPU cluster takes 0.2 s under ASan), not bugs.
        if (spec.gpu_count() <= 256) build_cluster(spec);
        break;
      }
      case 1:
        parse_model_spec(YamlField::load_string(text, "model.yaml"));
        break;
      case 2:
        parse_gpu_catalog(YamlField::load_string(text, "gpus.yaml"));
        break;
      case 3:
        parse_kernel_table(text, "kernels.csv");
        break;
      case 4:  // the reader alone: strictness pass, tree, typed access
        YamlField::load_string(text, "any.yaml").expect_keys({"name"});
        break;
      case 5:
        load_scenario(write_input("scenario.yaml", text));
        break;
      case 7:
        load_serving(write_input("serving.yaml", text));
        break;
      case 8:
        parse_request_trace(text, "trace.csv", false);
        break;
      case 9:
        parse_request_trace(text, "trace.jsonl", true);
        break;
      case 10:
        parse_nccl_tests(text, "all_reduce_perf.txt", std::nullopt);
        break;
      case 11:
        parse_calibration(YamlField::load_string(text, "calibration.yaml"));
        break;
      case 12:
        load_price_catalog(write_input("my-prices.yaml", text));
        break;
      case 13:
        load_jobs_scenario(write_input("jobs.yaml", text));
        break;
      case 14:
        load_serve_validation(write_input("serve-rows.yaml", text));
        break;
      default: {  // 6: --set overrides, one a line, of a shipped scenario
        std::vector<std::string> overrides;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) overrides.push_back(line);
        load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/gpt3-175b-a100-1024.yaml", overrides);
        break;
      }
    }
  } catch (const UserError&) {
  }
  return 0;
}
