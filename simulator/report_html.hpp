#pragma once
// `--report FILE.html`: one self-contained page (inline SVG and CSS, no script, nothing fetched)
// with what a performance engineer reads first - the per-rank timeline with every communication
// stream on its own row, where each stage's time went, memory per stage against HBM, and how busy
// each link tier was. `run` draws one iteration, `compare` one per schedule on one time scale, with
// a row for each schedule that could not run and why. Sections have fixed ids (summary, timeline,
// breakdown, memory, links, topology) for readers and tests to find.
#include <string>
#include <utility>
#include <vector>

#include "simulator/iteration.hpp"
#include "simulator/link_tiers.hpp"
#include "simulator/training_run.hpp"

namespace clustersim {

/// One span on a communication stream of a pipeline rank ("pp", "dp", ...: TraceEvent's stream).
struct ReportSpan {
  int rank = 0;
  std::string stream;
  std::string name;
  Seconds start_s = 0, end_s = 0;
};

/// A pipeline stage's time and memory, in the parts and order of `run`'s tables.
struct ReportStage {
  int rank = 0;
  std::vector<std::pair<std::string, Seconds>> time_s;      // keys: report_time_parts()
  std::vector<std::pair<std::string, double>> memory_bytes;  // keys: report_memory_parts()
};

/// One simulated iteration, or one that could not run (`why` says why; nothing else is drawn).
struct ReportRun {
  std::string name;  // the schedule, or the scenario
  std::string why;
  Seconds iteration_s = 0;
  int ranks = 0;
  std::vector<PassSpan> passes;
  std::vector<ReportSpan> streams;
  std::vector<ReportStage> stages;
  std::vector<LinkTierLoad> link_tiers;
  std::string link_note;  // what traffic the link loads count
  std::vector<CollectiveRun> collectives;  // each distinct collective and what ran it
};

struct ReportPage {
  std::string title;
  std::vector<std::pair<std::string, std::string>> facts;  // (label, value) under the title
  std::string gpu;
  Bytes hbm_bytes = 0;
  std::vector<ReportRun> runs;
  std::string topology_svg;   // the cluster's picture (topology_svg.hpp); no section when empty
  std::string topology_note;  // what the picture shows (its level, the job's share of the cluster)
};

/// The breakdown's parts in drawing order: (key, label).
const std::vector<std::pair<std::string, std::string>>& report_time_parts();
const std::vector<std::pair<std::string, std::string>>& report_memory_parts();

/// A simulated run as the report draws it. `name` titles it.
ReportRun report_run(const RunReport& r, const std::string& name);

/// The whole page.
std::string report_html(const ReportPage& page);
/// The page's sections without the document around them (search's report draws its fastest
/// configuration with them).
std::string report_sections(const ReportPage& page);

// Pieces other reports share (collective's, report_collective.hpp).
/// The page around its sections: head, the style sheet, the title.
std::string report_document(const std::string& title, const std::string& sections);
/// The cluster's picture as a section (id "topology"), after a note.
std::string topology_section(const std::string& svg, const std::string& note);
/// Link tiers as a table, after a note saying what traffic they count.
std::string link_tiers_table(const std::vector<LinkTierLoad>& tiers, const std::string& note);

}  // namespace clustersim
