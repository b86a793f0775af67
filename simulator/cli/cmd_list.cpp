// `clustersim list`: every pluggable thing by name.
#include <fmt/format.h>

#include <iostream>

#include "collectives/collective.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/engine.hpp"
#include "topologies/fabric.hpp"
#include "workloads/schedule.hpp"

namespace clustersim::cli {

void add_list_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("list", "list registered algorithms, protocols, fabrics and pipeline schedules");
  cmd->callback([] {
    std::cout << "collective algorithms:\n";
    for (const Algorithm* a : all_algorithms()) {
      std::string ops;
      for (Op op : a->ops()) ops += (ops.empty() ? "" : ", ") + std::string(to_string(op));
      std::cout << fmt::format("  {:<8} {}  [{}]\n", a->name(), a->description(), ops);
    }
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
  });
}

}  // namespace clustersim::cli
