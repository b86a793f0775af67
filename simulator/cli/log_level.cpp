// -q and -v: how much goes to stdout and stderr besides the results. Diagnostics go through spdlog
// to stderr, one line each, never to stdout (which holds the report, or one JSON or CSV document).
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "simulator/cli/commands.hpp"

namespace clustersim::cli {

namespace {
bool g_quiet = false;
}

void set_output_level(int verbose, bool quiet) {
  g_quiet = quiet;
  // Plain stderr (no colours, no timestamps): the same input gives the same lines.
  auto logger = spdlog::stderr_logger_mt("clustersim");
  logger->set_pattern("clustersim: %v");
  logger->set_level(verbose >= 2 ? spdlog::level::debug : verbose == 1 ? spdlog::level::info : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

bool quiet() { return g_quiet; }

bool progress_wanted() { return !g_quiet && !spdlog::should_log(spdlog::level::info); }

}  // namespace clustersim::cli
