// clustersim: the command-line entry point. Bad input exits 2 with one line; nothing else does.
#include <cstdio>
#include <iostream>

#include "simulator/cli/commands.hpp"
#include "topologies/user_error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"clustersim: a discrete-event simulator of GPU clusters training large models"};
  app.require_subcommand(1);
  clustersim::cli::add_collective_command(app);
  clustersim::cli::add_topology_command(app);
  clustersim::cli::add_list_command(app);
  clustersim::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: command line: " << e.what() << "\n";
    return 2;
  } catch (const clustersim::UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
