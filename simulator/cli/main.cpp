// clustersim: the command-line entry point. Bad input exits 2 with one line; nothing else does.
#include <pthread.h>

#include <cstdio>
#include <iostream>

#include "simulator/cli/commands.hpp"
#include "topologies/user_error.hpp"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"clustersim: a discrete-event simulator of GPU clusters training large models"};
  app.require_subcommand(1);
  clustersim::cli::add_run_command(app);
  clustersim::cli::add_validate_command(app);
  clustersim::cli::add_compare_command(app);
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
}  // namespace

int main(int argc, char** argv) {
  // SimGrid's max-min solver walks linked constraints recursively: a 16K-GPU collective links every
  // NVLink, PCIe and fabric link into one component, deeper than the default 8 MiB stack. The whole
  // CLI runs on a thread with a 1 GiB stack (address space only; pages are touched as needed).
  struct Args {
    int argc;
    char** argv;
    int status;
  } args{argc, argv, 1};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, std::size_t{1} << 30);
  pthread_t thread;
  auto body = [](void* p) -> void* {
    auto* a = static_cast<Args*>(p);
    a->status = run(a->argc, a->argv);
    return nullptr;
  };
  if (pthread_create(&thread, &attr, body, &args) != 0) return run(argc, argv);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return args.status;
}
