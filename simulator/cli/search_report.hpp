#pragma once
// `search --report FILE.html` and `sweep --report FILE.html`: self-contained pages (report_html.hpp's
// style, inline SVG, no script) of what the two commands found.
// - search: the screen's counts and what each rule removed, every verified configuration (screen
//   and engine side by side, memory against HBM, the Pareto front marked), the front drawn as
//   tokens/s against memory per GPU, then the fastest configuration's iteration drawn as `run
//   --report` draws one (timeline, breakdown, memory, link tiers, the cluster).
// - sweep: every cluster point (bill of materials, cost, power, tokens/s, tokens per dollar-year
//   and per MWh, its best configuration), the Pareto front of tokens/s against capital cost, and
//   each point's verified configurations.
// Section ids: search, configurations, pareto, then the fastest's summary, timeline, breakdown,
// memory, links, topology; sweep's: sweep, points, pareto, configurations.
#include <optional>
#include <string>
#include <vector>

#include "simulator/cli/search_verify.hpp"
#include "simulator/cli/sweep_output.hpp"
#include "simulator/report_html.hpp"

namespace clustersim::cli {

struct SearchReport {
  ReportPage page;                   // title, the scenario's facts, GPU and HBM; topology picture
  ScreenResult screen;               // counts only are read (candidates, valid, removed)
  std::vector<Verified> rows;        // as search ranks them
  std::vector<std::string> pareto;   // the front's configurations (Configuration::text)
  std::optional<ReportRun> fastest;  // the fastest verified configuration's iteration, drawn; none when none ran
};
std::string search_report_html(const SearchReport& report);
/// `search --report`'s page for the search cmd_search ran: `base` loaded from `scenario` with
/// `overrides`, the fastest verified configuration run once more in a child process with its
/// timeline and link tiers recorded, the cluster drawn at its default level.
std::string search_report_page(const std::string& scenario, const std::vector<std::string>& overrides, const ScenarioSpec& base,
                               const ScreenResult& screen, const std::vector<Verified>& rows, const std::vector<std::string>& pareto);

/// The verified configurations as a table (shared by search's and sweep's pages).
std::string verified_table_html(const std::vector<Verified>& rows, const std::vector<std::string>& pareto, Bytes hbm_bytes);

std::string sweep_report_html(const std::string& title, const std::vector<std::pair<std::string, std::string>>& facts,
                              const std::vector<SweepRow>& rows, const Economics& economics);
/// `sweep --report`'s page for the sweep cmd_sweep ran (`vary_cluster` as given, `vary` search's dimensions).
std::string sweep_report_page(const ScenarioSpec& base, const std::vector<std::string>& vary_cluster, const std::vector<std::string>& vary,
                              const std::string& prices_file, const std::vector<SweepRow>& rows, const Economics& economics);

}  // namespace clustersim::cli
