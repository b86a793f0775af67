#pragma once
// Each CLI subcommand lives in its own file and registers itself on the app.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim::cli {

void add_collective_command(CLI::App& app);
void add_topology_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_compare_command(CLI::App& app);

/// "8", "64K", "1M", "8G": binary multiples, as nccl-tests reads -b and -e.
Bytes parse_size(const std::string& text, const std::string& option);
/// Runs `work` in a forked child and returns what it returned: each simulation gets its own SimGrid
/// platform (one per process) and its own peak memory. A child that crashes is a runtime_error.
std::string run_in_child(const std::function<std::string()>& work);

/// Writes text to a file or throws UserError naming the option.
void write_file(const std::string& path, const std::string& text, const std::string& option);

}  // namespace clustersim::cli
