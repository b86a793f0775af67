// libFuzzer target over every loader a user's text reaches: cluster (and, when small, its graph),
// model, GPU catalog, kernel table, and the YAML reader itself. The first byte picks the
// loader; the rest is the file. A UserError is the expected answer to bad input; anything else (a
// crash, a sanitizer report, another exception, a leak, a timeout) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "topologies/cluster.hpp"
#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/model.hpp"

using namespace clustersim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 5) {
      case 0: {
        const ClusterSpec spec = parse_cluster_spec(YamlField::load_string(text, "cluster.yaml"));
        if (spec.gpu_count() <= 4096) build_cluster(spec);  // larger graphs are valid but slow, not bugs
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
      default:  // the reader alone: strictness pass, tree, typed access
        YamlField::load_string(text, "any.yaml").expect_keys({"name"});
        break;
    }
  } catch (const UserError&) {
  }
  return 0;
}
