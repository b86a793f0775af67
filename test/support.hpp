#pragma once
// Shared test helpers: paths into the source tree, cluster YAML built in the test, running the CLI.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "collectives/collective.hpp"
#include "topologies/cluster.hpp"
#include "topologies/router.hpp"
#include "topologies/user_error.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/model.hpp"

namespace clustersim::test {

/// Absolute path of a file in the source tree, e.g. source_path("scenarios/clusters/x.yaml").
std::string source_path(const std::string& relative);
/// Absolute path of the built clustersim binary.
std::string binary_path();

/// A shipped cluster file, loaded once per process and kept (tests share it with their engines).
const Cluster& shipped_cluster(const std::string& relative);

/// The shipped GPU catalog (scenarios/gpus.yaml), loaded once, and one GPU of it (a GPU missing
/// from it fails the test).
const GpuCatalog& shipped_catalog();
const GpuModel& shipped_gpu(const std::string& name);

/// A shipped model, scenarios/models/<name>.yaml.
ModelSpec shipped_model(const std::string& name);

/// |got - want| / want.
double relative_error(double got, double want);

/// Two-tier fat tree: leaves of 4 ports (2 down, 2 up), spines of 2 ports, so nodes 0,1 sit on
/// leaf 0, nodes 2,3 on leaf 1, and each leaf has one link to each of two spines. One GPU and one
/// NIC per node; link rates differ so the bottleneck is unambiguous.
extern const char* const kSmallFatTreeYaml;

/// One node of 8 GPUs on an NVSwitch whose links all run at 100 GB/s with 1 us latency (a GPU to
/// GPU hop: 2 us), every efficiency 1: collectives' closed forms read straight off it.
extern const char* const kUniformSwitchYaml;

/// A collective over ranks 0 .. n-1 of `size` bytes on `channels` channels under `protocol`.
CollectiveRequest request(Op op, int n, Bytes size, int channels, const char* protocol = "ideal");

/// A cluster from YAML text (named `name` in errors).
Cluster cluster_from_yaml(const std::string& yaml, const std::string& name = "test.yaml");

/// The fabric switches a route enters, by name, in order.
std::vector<std::string> switches_on(const Cluster& c, const Route& r);

/// A flow of `size` bytes from src to dst over route `r`, paying its latency.
Flow flow_on(const Route& r, int src_gpu, int dst_gpu, Bytes size);

/// The whole text of a file; one that cannot be read fails the test.
std::string read_file(const std::string& path);

/// `text` with every occurrence of `from` replaced by `to`; `from` missing from it fails the test
/// (`what` names the text in the message).
std::string replaced_all(std::string text, const std::string& from, const std::string& to, const std::string& what);

/// The text of a shipped file with every occurrence of `from` replaced by `to`.
std::string shipped_with(const std::string& relative, const std::string& from, const std::string& to);

/// A fresh folder laid out as scenarios/ is: the shipped GPU catalog, `cluster_yaml` as
/// clusters/cluster.yaml and, as scenario.yaml, Megatron's 1.7B on 32 GPUs of that cluster (1F1B,
/// global batch 16, microbatch 1, bf16, selective recompute) with `parallel` as its layout and
/// `extra` appended as written. Returns the scenario's path.
std::string small_megatron_scenario(const std::string& tag, const std::string& cluster_yaml, const std::string& parallel,
                                    const std::string& extra = "");

struct CliResult {
  int exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
};
/// Runs the built clustersim binary with `args` (a shell-quoted string).
CliResult run_cli(const std::string& args);
/// The same, killed after `timeout_s` (exit status 124), so a hang fails a test instead of the suite.
CliResult run_cli_bounded(const std::string& args, int timeout_s);

/// Runs `clustersim <args> --json <a temporary file>`, requires it to succeed, and returns the JSON.
nlohmann::json cli_json(const std::string& args);

/// The UserError that `f` throws; anything else (or nothing) fails the test.
UserError error_of(const std::function<void()>& f);

/// 1-based line of the one occurrence of `needle` in `text`; absent or repeated fails the test.
int line_of(const std::string& text, const std::string& needle);

/// Writes text to a fresh temporary file and returns its path.
std::string temp_file(const std::string& text, const std::string& suffix = ".yaml");

}  // namespace clustersim::test
