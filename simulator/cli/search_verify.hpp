#pragma once
// Search's second half, shared by `search` and `sweep`: the screen's best configurations replayed on
// the engine, each in its own forked child (one SimGrid platform per process), J at a time; the
// rows as JSON; and the message for a space the screen left empty.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "simulator/progress.hpp"
#include "simulator/search_screen.hpp"

namespace clustersim::cli {

/// One configuration as the engine ran it (or why it could not).
struct Verified {
  ScreenPrediction screen;
  bool ok = false;
  std::string why;
  double iteration_s = 0, tokens_per_s = 0, mfu = 0, memory_bytes = 0, exposed_comm_s = 0, bubble_s = 0;
};

/// One verification: the scenario with `overrides` (the base ones, then the configuration's), one
/// engine iteration; the result as JSON text, which a forked child or a Slurm task hands back.
std::string verify_one(const std::string& scenario, const std::vector<std::string>& overrides);
/// The base --set lines, then the configuration's.
std::vector<std::string> configuration_overrides(const std::vector<std::string>& base, const Configuration& c);
/// A configuration's row from its verification's text; `failed` says what went wrong when the
/// process running it left none (empty text).
Verified verified_from(const ScreenPrediction& screen, const std::string& text, const std::string& failed);

/// Runs every configuration (the scenario with its --set lines after `overrides`) in its own forked
/// child, `jobs` at a time; results in input order. `bar` is told of each one finished.
std::vector<Verified> verify(const std::string& scenario, const std::vector<std::string>& overrides,
                             const std::vector<ScreenPrediction>& top, int jobs, Progress& bar);

/// A row of search's --json: the configuration, the screen's prediction and the engine's figures (or why not).
nlohmann::ordered_json row_json(const Verified& v);

/// "expected at least one valid configuration among N; RULE removed the last of them (e.g. ...);
/// removed by: ...": the rule that removed the last survivors, and the count of each.
std::string no_configuration(const ScreenResult& r);

}  // namespace clustersim::cli
