// Files are found relative to the file that names them: a cluster anywhere finds the gpus.yaml
// beside it (or in the folder above, the shipped layout), `--catalog` overrides both, and every
// command runs from a directory that holds nothing of the repository.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support.hpp"
#include "workloads/scenario.hpp"

using namespace clustersim;
using clustersim::test::source_path;
namespace fs = std::filesystem;

namespace {

/// A fresh folder with a copy of the shipped A100 SuperPOD as my-cluster.yaml, the shipped catalog
/// beside it, and scenario.yaml (Korthikanti's 22B on 8 GPUs) naming both by relative paths.
/// Removed at the end.
class Folder {
 public:
  Folder() {
    std::string pattern = (fs::temp_directory_path() / "clustersim-catalog-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    root_ = pattern;
    fs::copy_file(source_path("scenarios/clusters/dgx-a100-superpod.yaml"), root_ / "my-cluster.yaml");
    fs::copy_file(source_path("scenarios/gpus.yaml"), root_ / "gpus.yaml");
    std::string text = test::shipped_with("scenarios/validation/korthikanti-22b-full.yaml",
                                          "cluster: ../clusters/dgx-a100-superpod.yaml", "cluster: my-cluster.yaml");
    text = test::replaced_all(text, "model: ../models/", "model: " + source_path("scenarios/models/"), "scenario");
    std::ofstream(root_ / "scenario.yaml") << text;
  }
  ~Folder() { fs::remove_all(root_); }
  Folder(const Folder&) = delete;
  Folder& operator=(const Folder&) = delete;
  std::string path(const std::string& name) const { return (root_ / name).string(); }

  /// The CLI run with this folder as the working directory.
  test::CliResult run_here(const std::string& args) const {
    const fs::path before = fs::current_path();
    fs::current_path(root_);
    const test::CliResult r = test::run_cli(args);
    fs::current_path(before);
    return r;
  }

 private:
  fs::path root_;
};

}  // namespace

TEST_CASE("A cluster outside scenarios/clusters finds the GPU catalog beside it", "[catalog]") {
  Folder f;
  const ScenarioSpec s = load_scenario(f.path("scenario.yaml"));
  CHECK(s.catalog_file == f.path("gpus.yaml"));
  CHECK(s.gpu.name == "A100-SXM-80GB");
  // The shipped layout still reads scenarios/gpus.yaml, the folder above clusters/.
  CHECK(load_scenario(source_path("scenarios/gpt3-175b-a100-1024.yaml")).catalog_file == source_path("scenarios/gpus.yaml"));
}

TEST_CASE("run and compare work from the scenario's folder with relative paths, and --catalog overrides", "[catalog]") {
  Folder f;
  // A copy of the catalog elsewhere, under another name.
  const std::string other = test::temp_file(test::shipped_with("scenarios/gpus.yaml", "", ""));
  auto run = f.run_here("run scenario.yaml --json -");
  INFO(run.stderr_text);
  REQUIRE(run.exit_code == 0);
  const auto j = nlohmann::json::parse(run.stdout_text);
  // Paths as the scenario resolved them: relative to the working directory, as the scenario's were.
  CHECK(j.at("config").at("cluster_file") == "my-cluster.yaml");
  CHECK(j.at("config").at("catalog") == "gpus.yaml");
  const auto c = f.run_here("run scenario.yaml --catalog " + other + " --json -");
  INFO(c.stderr_text);
  REQUIRE(c.exit_code == 0);
  CHECK(nlohmann::json::parse(c.stdout_text).at("config").at("catalog") == fs::path(other).lexically_normal().string());
  const auto cmp = f.run_here("compare scenario.yaml --schedules 1f1b --json -");
  INFO(cmp.stderr_text);
  CHECK(cmp.exit_code == 0);
}

TEST_CASE("a --catalog that cannot be read, or lacks the cluster's GPU, is one line, exit 2", "[catalog]") {
  Folder f;
  const auto missing = f.run_here("run scenario.yaml --catalog no-such.yaml");
  CHECK(missing.exit_code == 2);
  CHECK(missing.stdout_text.empty());
  CHECK_THAT(missing.stderr_text, Catch::StartsWith("error: no-such.yaml: --catalog: "));
  const std::string renamed = test::temp_file(test::shipped_with("scenarios/gpus.yaml", "name: A100-SXM-80GB", "name: A100-renamed"));
  const auto lacking = f.run_here("run scenario.yaml --catalog " + renamed);
  CHECK(lacking.exit_code == 2);
  // At the cluster's gpu: field, relative to the working directory as the scenario named it.
  CHECK_THAT(lacking.stderr_text, Catch::StartsWith("error: my-cluster.yaml:") &&
                                      Catch::Contains(": gpu: expected a GPU from " + renamed + " (A100-renamed,"));
}

TEST_CASE("collective, topology, calibrate and list run from a folder with only a cluster in it", "[catalog]") {
  Folder f;
  for (const std::string args : {"collective --cluster my-cluster.yaml --gpus 8 -b 1M -e 1M --json -",
                                 "topology my-cluster.yaml --json -", "topology --cluster my-cluster.yaml --json -",
                                 "list --catalog gpus.yaml --json -"}) {
    const auto r = f.run_here(args);
    INFO(args << "\n" << r.stderr_text);
    CHECK(r.exit_code == 0);
    CHECK(nlohmann::json::accept(r.stdout_text));
  }
}
