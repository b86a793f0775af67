// clustersim: the command-line entry point. Bad input exits 2 with one line; nothing else does.
#include <pthread.h>

#include <cstdio>
#include <iostream>
#include <new>
#include <sstream>
#include <string>

#include "simulator/cli/commands.hpp"
#include "topologies/user_error.hpp"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"clustersim: a discrete-event simulator of GPU clusters training large models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("clustersim ") + clustersim::cli::kVersion);
  // -q and -v anywhere on the line (before or after the command: fallthrough). They are read from
  // argv before parsing too, so the command's callback already logs at the asked level.
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "log what is read and simulated to stderr (-vv: debug lines too)");
  app.add_flag("-q,--quiet", quiet, "leave the text report out of stdout (files, --json and --csv are still written)");
  app.fallthrough();
  int verbose_seen = 0;
  bool quiet_seen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--verbose") ++verbose_seen;
    else if (a == "--quiet") quiet_seen = true;
    else if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find_first_not_of("vq", 1) == std::string::npos)
      for (char c : a.substr(1)) {
        if (c == 'v') ++verbose_seen;
        else quiet_seen = true;
      }
  }
  clustersim::cli::set_output_level(verbose_seen, quiet_seen);
  clustersim::cli::add_run_command(app);
  clustersim::cli::add_validate_command(app);
  clustersim::cli::add_compare_command(app);
  clustersim::cli::add_calibrate_command(app);
  clustersim::cli::add_collective_command(app);
  clustersim::cli::add_topology_command(app);
  clustersim::cli::add_list_command(app);
  clustersim::cli::add_bench_command(app);
  clustersim::cli::add_search_command(app);
  clustersim::cli::add_sweep_command(app);
  clustersim::cli::add_goodput_command(app);
  clustersim::cli::add_serve_command(app);
  clustersim::cli::add_schema_command(app);
  // A command's report is held until it has finished, so an error (an output file that cannot be
  // written, a bad row) leaves stdout empty rather than half a report above the error line.
  std::ostringstream held;
  std::streambuf* const stdout_buf = std::cout.rdbuf(held.rdbuf());
  auto error = [&](const std::string& line, int status) {
    std::cout.rdbuf(stdout_buf);
    std::cerr << "error: " << line << "\n";
    return status;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    std::cout.rdbuf(stdout_buf);
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const auto [option, expected] = clustersim::cli::describe_parse_error(e, app);
    return error(clustersim::UserError("command line", 0, option, expected).what(), 2);
  } catch (const clustersim::UserError& e) {
    return error(e.what(), 2);
  } catch (const std::bad_alloc&) {
    return error("out of memory: the input asks for more than this machine has", 1);
  } catch (const std::exception& e) {
    // Not the user's input: an invariant of ours broke. Still one line, never an abort.
    return error(std::string("internal error (please report it): ") + e.what(), 1);
  }
  std::cout.rdbuf(stdout_buf);
  std::cout << held.str();
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
