#include "simulator/cli/commands.hpp"
namespace clustersim::cli {
void add_bench_command(CLI::App& app) { app.add_subcommand("bench", "engine speed"); }
}  // namespace clustersim::cli
