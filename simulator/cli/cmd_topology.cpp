#include "simulator/cli/commands.hpp"
namespace clustersim::cli {
void add_topology_command(CLI::App& app) { app.add_subcommand("topology", "print a cluster's counts"); }
}  // namespace clustersim::cli
