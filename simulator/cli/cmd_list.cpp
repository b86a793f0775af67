// `clustersim list`: every pluggable thing by name.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "collectives/collective.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/engine.hpp"
#include "topologies/fabric.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/schedule.hpp"
#include "workloads/serving/serving_choices.hpp"

namespace clustersim::cli {

namespace {

constexpr const char* kDefaultCatalog = "scenarios/gpus.yaml";

/// One line per GPU: its dense peaks, its HBM, and the calibrations it has no cited source for.
void print_gpus(const GpuCatalog& catalog, std::ostream& out) {
  out << "GPUs (" << catalog.file() << "):\n";
  for (const std::string& name : catalog.names()) {
    const GpuModel& gpu = *catalog.find(name);
    std::string peaks;
    for (const auto& [dtype, flops] : gpu.peak_flops_per_s) peaks += fmt::format("{}{} {:g}", peaks.empty() ? "" : ", ", dtype, flops / 1e12);
    std::string missing;
    for (const std::string& field : gpu.missing_calibrations()) missing += (missing.empty() ? "" : ", ") + field;
    out << fmt::format("  {:<14} {} TFLOP/s; {:.0f} GiB at {:.2f} TB/s{}\n", gpu.name, peaks,
                             static_cast<double>(gpu.hbm_bytes) / (1ULL << 30), gpu.hbm_bandwidth_Bps / 1e12,
                             missing.empty() ? "" : "; uncalibrated: " + missing);
  }
}

nlohmann::ordered_json gpus_json(const GpuCatalog& catalog) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const std::string& name : catalog.names()) {
    const GpuModel& gpu = *catalog.find(name);
    nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
    for (const auto& [dtype, flops] : gpu.peak_flops_per_s) peaks[dtype] = flops;
    out.push_back({{"name", gpu.name}, {"peak_flops_per_s", peaks}, {"hbm_bytes", gpu.hbm_bytes},
                   {"hbm_bandwidth_Bps", gpu.hbm_bandwidth_Bps}, {"uncalibrated", gpu.missing_calibrations()}});
  }
  return out;
}

/// --csv: the lists as one table, a row per registered thing. Protocols and GPUs have no
/// description in the JSON; theirs says what the text prints first.
nlohmann::ordered_json csv_rows(const nlohmann::ordered_json& j) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const char* kind : {"commands", "algorithms", "fabrics", "solvers", "schedules"})
    for (const auto& item : j[kind]) rows.push_back({{"kind", kind}, {"name", item["name"]}, {"description", item["description"]}});
  for (const auto& p : j["protocols"])
    rows.push_back({{"kind", "protocols"}, {"name", p["name"]},
                    {"description", fmt::format("{:.2f} of bandwidth", p["bandwidth_fraction"].get<double>())}});
  for (const auto& c : j["serving"])
    rows.push_back({{"kind", "serving"}, {"name", c["key"].get<std::string>() + ": " + c["name"].get<std::string>()},
                    {"description", c["description"]}});
  for (const auto& g : j["gpus"])
    rows.push_back({{"kind", "gpus"}, {"name", g["name"]},
                    {"description", fmt::format("{:.0f} GB HBM", g["hbm_bytes"].get<double>() / 1e9)}});
  return rows;
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto catalog = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "list registered algorithms, protocols, fabrics, pipeline schedules, serving choices and GPUs");
  cmd->add_option("--catalog", *catalog, std::string("the GPU catalog to list (default ") + kDefaultCatalog + ", if present)");
  auto json = std::make_shared<std::string>(), csv = std::make_shared<std::string>();
  cmd->add_option("--json", *json, "also write the lists as JSON (- or /dev/stdout: to stdout, without the text)");
  cmd->add_option("--csv", *csv, "also write one row per registered thing (kind, name, description) as CSV (- or /dev/stdout: to stdout, without the text)");
  cmd->callback([catalog, json, csv, &app] {
    // Checked before printing anything, so a bad catalog leaves stdout empty.
    if (!catalog->empty()) check_input_path(*catalog, "--catalog");
    const std::string gpus = catalog->empty() ? shipped_file(kDefaultCatalog) : *catalog;
    std::optional<GpuCatalog> loaded;
    if (!catalog->empty() || std::filesystem::is_regular_file(gpus)) loaded = load_gpu_catalog(gpus);
    if (!json->empty()) check_json_path(*json);
    check_csv_path(*csv, *json);
    std::ostringstream out;
    nlohmann::ordered_json j = json_document("list", {{"catalog", loaded ? nlohmann::ordered_json(loaded->file()) : nlohmann::ordered_json()}});
    j["commands"] = nlohmann::ordered_json::array();
    for (const CLI::App* sub : app.get_subcommands({}))
      j["commands"].push_back({{"name", sub->get_name()}, {"description", sub->get_description()}});
    j["algorithms"] = nlohmann::ordered_json::array();
    for (const Algorithm* a : all_algorithms()) {
      nlohmann::ordered_json ops = nlohmann::ordered_json::array();
      for (Op op : a->ops()) ops.push_back(to_string(op));
      j["algorithms"].push_back({{"name", a->name()}, {"description", a->description()}, {"ops", ops},
                                 {"in_iteration_auto", a->in_iteration_auto()}});
    }
    j["protocols"] = nlohmann::ordered_json::array();
    for (const Protocol& p : nccl_protocols())
      j["protocols"].push_back({{"name", p.name}, {"bandwidth_fraction", p.bandwidth_fraction},
                                {"base_latency_ring_s", p.base_latency_ring_s}, {"base_latency_tree_s", p.base_latency_tree_s},
                                {"hop_latency_nvlink_s", p.hop_latency_nvlink_s}, {"hop_latency_network_s", p.hop_latency_network_s}});
    j["fabrics"] = nlohmann::ordered_json::array();
    for (const FabricBuilder* f : all_fabrics()) j["fabrics"].push_back({{"name", f->name()}, {"description", f->description()}});
    j["solvers"] = nlohmann::ordered_json::array();
    for (const std::string& name : solver_names())
      j["solvers"].push_back({{"name", name}, {"description", solver_description(*find_solver(name))}});
    j["schedules"] = nlohmann::ordered_json::array();
    for (const Schedule* s : all_schedules())
      j["schedules"].push_back({{"name", s->name()}, {"description", s->description()}, {"chunks_required", s->chunks_required()}});
    j["serving"] = nlohmann::ordered_json::array();
    for (const ServingChoice& c : serving_choices())
      j["serving"].push_back({{"key", c.key}, {"name", c.name}, {"description", c.description}});
    j["gpus"] = loaded ? gpus_json(*loaded) : nlohmann::ordered_json::array();
    out << "commands:\n";
    for (const CLI::App* sub : app.get_subcommands({}))
      out << fmt::format("  {:<11} {}\n", sub->get_name(), sub->get_description());
    out << "collective algorithms:\n";
    for (const Algorithm* a : all_algorithms()) {
      std::string ops;
      for (Op op : a->ops()) ops += (ops.empty() ? "" : ", ") + std::string(to_string(op));
      out << fmt::format("  {:<18} {}  [{}{}]\n", a->name(), a->description(), ops,
                               a->in_iteration_auto() ? "" : "; not in iterations' auto");
    }
    out << "algorithm choice (--algo):\n";
    out << fmt::format("  {:<18} {}\n", "best",
                             "simulate every applicable algorithm and protocol per size, keep the fastest (collective's default; alias auto)");
    out << fmt::format("  {:<18} {}\n", "nccl",
                             "NCCL 2.30.7's tuner: algorithm, protocol and channels from its cost model, nothing simulated "
                             "to choose (training iterations' default; a scenario's collectives.algorithm: best asks for the other)");
    out << "protocols:\n";
    for (const Protocol& p : nccl_protocols())
      out << fmt::format("  {:<8} {:.2f} of bandwidth, base latency ring {:.1f} us / tree {:.1f} us, "
                               "per hop NVLink {:.1f} us / network {:.1f} us\n",
                               p.name, p.bandwidth_fraction, p.base_latency_ring_s * 1e6, p.base_latency_tree_s * 1e6,
                               p.hop_latency_nvlink_s * 1e6, p.hop_latency_network_s * 1e6);
    out << fmt::format("  {:<8} full bandwidth, no protocol latency (closed-form checks)\n", "ideal");
    out << "fabrics:\n";
    for (const FabricBuilder* f : all_fabrics()) out << fmt::format("  {:<15} {}\n", f->name(), f->description());
    out << "solvers:\n";
    for (const std::string& name : solver_names())
      out << fmt::format("  {:<14} {}\n", name, solver_description(*find_solver(name)));
    out << "pipeline schedules:\n";
    for (const Schedule* s : all_schedules()) {
      const int v = s->chunks_required();
      out << fmt::format("  {:<14} {} [{}]\n", s->name(), s->description(),
                               v == 0 ? "any chunks per rank" : v == 1 ? "1 chunk per rank" : fmt::format("{} chunks per rank", v));
    }
    out << "serving choices (clustersim serve files, under serving:):\n";
    for (const ServingChoice& c : serving_choices()) out << fmt::format("  {:<40} {}\n", c.key + ": " + c.name, c.description);
    if (loaded) print_gpus(*loaded, out);
    if (!json->empty()) write_json(*json, j);
    write_csv(*csv, csv_rows(j));
    if (table_to_stdout(*json, *csv)) std::cout << out.str();
  });
}

}  // namespace clustersim::cli
