// `clustersim list`: every pluggable thing by name.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "collectives/collective.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/engine.hpp"
#include "topologies/fabric.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/schedule.hpp"

namespace clustersim::cli {

namespace {

constexpr const char* kDefaultCatalog = "scenarios/gpus.yaml";

/// One line per GPU: its dense peaks, its HBM, and the calibrations it has no cited source for.
void print_gpus(const GpuCatalog& catalog) {
  std::cout << "GPUs (" << catalog.file() << "):\n";
  for (const std::string& name : catalog.names()) {
    const GpuModel& gpu = *catalog.find(name);
    std::string peaks;
    for (const auto& [dtype, flops] : gpu.peak_flops_per_s) peaks += fmt::format("{}{} {:g}", peaks.empty() ? "" : ", ", dtype, flops / 1e12);
    std::string missing;
    for (const std::string& field : gpu.missing_calibrations()) missing += (missing.empty() ? "" : ", ") + field;
    std::cout << fmt::format("  {:<14} {} TFLOP/s; {:.0f} GiB at {:.2f} TB/s{}\n", gpu.name, peaks,
                             static_cast<double>(gpu.hbm_bytes) / (1ULL << 30), gpu.hbm_bandwidth_Bps / 1e12,
                             missing.empty() ? "" : "; uncalibrated: " + missing);
  }
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto catalog = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "list registered algorithms, protocols, fabrics, pipeline schedules and GPUs");
  cmd->add_option("--catalog", *catalog, std::string("the GPU catalog to list (default ") + kDefaultCatalog + ", if present)");
  cmd->callback([catalog, &app] {
    // Checked before printing anything, so a bad catalog leaves stdout empty.
    if (!catalog->empty()) check_input_path(*catalog, "--catalog");
    const std::string gpus = catalog->empty() ? shipped_file(kDefaultCatalog) : *catalog;
    std::optional<GpuCatalog> loaded;
    if (!catalog->empty() || std::filesystem::is_regular_file(gpus)) loaded = load_gpu_catalog(gpus);
    std::cout << "commands:\n";
    for (const CLI::App* sub : app.get_subcommands({}))
      std::cout << fmt::format("  {:<11} {}\n", sub->get_name(), sub->get_description());
    std::cout << "collective algorithms:\n";
    for (const Algorithm* a : all_algorithms()) {
      std::string ops;
      for (Op op : a->ops()) ops += (ops.empty() ? "" : ", ") + std::string(to_string(op));
      std::cout << fmt::format("  {:<18} {}  [{}{}]\n", a->name(), a->description(), ops,
                               a->in_iteration_auto() ? "" : "; not in iterations' auto");
    }
    std::cout << "algorithm choice (--algo):\n";
    std::cout << fmt::format("  {:<18} {}\n", "best",
                             "simulate every applicable algorithm and protocol per size, keep the fastest (collective's default; alias auto)");
    std::cout << fmt::format("  {:<18} {}\n", "nccl",
                             "NCCL 2.30.7's tuner: algorithm, protocol and channels from its cost model, nothing simulated "
                             "to choose (training iterations' default; a scenario's collectives.algorithm: best asks for the other)");
    std::cout << "protocols:\n";
    for (const Protocol& p : nccl_protocols())
      std::cout << fmt::format("  {:<8} {:.2f} of bandwidth, base latency ring {:.1f} us / tree {:.1f} us, "
                               "per hop NVLink {:.1f} us / network {:.1f} us\n",
                               p.name, p.bandwidth_fraction, p.base_latency_ring_s * 1e6, p.base_latency_tree_s * 1e6,
                               p.hop_latency_nvlink_s * 1e6, p.hop_latency_network_s * 1e6);
    std::cout << fmt::format("  {:<8} full bandwidth, no protocol latency (closed-form checks)\n", "ideal");
    std::cout << "fabrics:\n";
    for (const FabricBuilder* f : all_fabrics()) std::cout << fmt::format("  {:<15} {}\n", f->name(), f->description());
    std::cout << "solvers:\n";
    for (const std::string& name : solver_names())
      std::cout << fmt::format("  {:<14} {}\n", name, solver_description(*find_solver(name)));
    std::cout << "pipeline schedules:\n";
    for (const Schedule* s : all_schedules()) {
      const int v = s->chunks_required();
      std::cout << fmt::format("  {:<14} {} [{}]\n", s->name(), s->description(),
                               v == 0 ? "any chunks per rank" : v == 1 ? "1 chunk per rank" : fmt::format("{} chunks per rank", v));
    }
    if (loaded) print_gpus(*loaded);
  });
}

}  // namespace clustersim::cli
