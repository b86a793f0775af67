#pragma once
// Each CLI subcommand lives in its own file and registers itself on the app.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "simulator/engine.hpp"
#include "simulator/report_html.hpp"
#include "simulator/topology_svg.hpp"
#include "topologies/units.hpp"
#include "topologies/user_error.hpp"
#include "workloads/iteration_plan.hpp"
#include "workloads/scenario.hpp"

namespace clustersim::cli {

/// The project's version (CMakeLists.txt's project() VERSION), printed by --version and carried by
/// every --json document.
inline constexpr const char* kVersion = CLUSTERSIM_VERSION;

void add_collective_command(CLI::App& app);
void add_topology_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_search_command(CLI::App& app);
void add_goodput_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_schema_command(CLI::App& app);
void add_serve_command(CLI::App& app);

/// "8", "64K", "1M", "8G": binary multiples, as nccl-tests reads -b and -e.
Bytes parse_size(const std::string& text, const std::string& option);
/// Runs `work` in a forked child and returns what it returned: each simulation gets its own SimGrid
/// platform (one per process) and its own peak memory. A child that crashes is a runtime_error.
std::string run_in_child(const std::function<std::string()>& work);
/// Runs work(0) ... work(count - 1), each in its own forked child, at most `jobs` at a time (as
/// run_in_child, J of them); what each returned, in input order, empty where its child failed.
/// `finished(k)` is told after each k-th child ends, whichever it was.
std::vector<std::optional<std::string>> run_in_children(std::size_t count, const std::function<std::string(std::size_t)>& work,
                                                        int jobs, const std::function<void(std::size_t)>& finished);

/// A file shipped in the repository, e.g. "scenarios/gpus.yaml", so that commands with shipped
/// defaults (validate, bench, list) work from any directory: the path itself when it exists from
/// here; else under the nearest folder above the executable that holds scenarios/gpus.yaml (the
/// repository a build/ inside it was built from); else under the source folder compiled in; else the
/// path unchanged, for the caller's error to name.
std::string shipped_file(const std::string& relative);

/// `--catalog FILE` as the scenario override that carries it ("catalog=<absolute path>"), after
/// checking the file can be read (an error names --catalog).
std::string catalog_override(const std::string& path);

/// A cluster file named by `option` (--cluster) with the command's `--set cluster.PATH=VALUE`s
/// applied (collective, topology: commands that read a cluster without a scenario; anything but a
/// cluster field is an error naming --set).
ClusterSpec load_cluster_with_sets(const std::string& path, const std::string& option, const std::vector<std::string>& sets);

/// Writes text to a file or throws UserError naming the option.
void write_file(const std::string& path, const std::string& text, const std::string& option);

// Options are read as text and converted here, so every bad value gets one line in our words that
// names the option and the range: `command line: --channels: expected an integer from 1 to 64`.
long parse_integer(const std::string& text, const std::string& option, long min, long max);
double parse_number(const std::string& text, const std::string& option, double min, double max);
/// --solver: one of solver_names() (engine.hpp).
Solver parse_solver(const std::string& text);
/// --fold: exact, none, all or assume (iteration_plan.hpp).
FoldMode parse_fold(const std::string& text);
/// The fold a command simulates `s` under when it asks `asked` (`given`: the user named it):
/// variability or GPUs of several models turn the unproven assume into exact (fold_under), and a
/// named --fold assume there is an error.
FoldMode checked_fold(const ScenarioSpec& s, FoldMode asked, bool given);
/// `--tp-collectives`, `--cp-exchanges`, `--ep-all-to-alls` or `--zero-collectives` (`option`); anything but auto needs whole-cluster replay
/// (a fold other than assume).
TpPlacement parse_placement(const std::string& text, FoldMode fold, const std::string& option);

/// An input file named by an option: it exists, is a file and is not larger than any real input.
void check_input_path(const std::string& path, const std::string& option);
/// An output file named by an option can be created (its folder exists and is writable, it is not a
/// folder): checked before simulating, so an hour of work is not lost to a typo.
void check_output_path(const std::string& path, const std::string& option);

// --json documents (json_output.cpp). Every one starts with the same header so a script can check
// what it reads before reading it; the README lists the fields.
/// Bumped when a field of any --json document is renamed, removed or changes meaning (adding one is not).
/// 2: compare's per-stage fields take run's names (memory_bytes.total, time_s.bubble, ...).
inline constexpr int kJsonSchemaVersion = 2;
/// {"schema_version", "clustersim_version", "command"}: the first fields of every document.
nlohmann::ordered_json json_header(const std::string& command);
/// The envelope every --json document starts with: json_header(command) and then "config", what was
/// run as resolved (a scenario's: scenario_config_json). A new command adopts it in one line:
///   nlohmann::ordered_json j = json_document("search", scenario_config_json(s));
nlohmann::ordered_json json_document(const std::string& command, nlohmann::ordered_json config);
/// The scenario as resolved (after --set): what was simulated, for the reader to check.
nlohmann::ordered_json scenario_config_json(const ScenarioSpec& s);
/// --csv (csv_output.cpp): `rows`, an array of JSON objects (a --json document's rows), as CSV: one
/// column per field, nested ones named with dots (time_s.bubble), arrays left out, null empty.
std::string csv_of(const nlohmann::ordered_json& rows);
/// --csv's path checked before simulating (as --json's): "-" or /dev/stdout, unless --json is
/// already there, or a file that can be written.
void check_csv_path(const std::string& csv, const std::string& json);
/// Writes the rows as CSV to the file, or to stdout; nothing when `path` is empty.
void write_csv(const std::string& path, const nlohmann::ordered_json& rows);
/// Whether the text table goes to stdout: not when --json or --csv writes there, nor under -q.
bool table_to_stdout(const std::string& json, const std::string& csv);

/// -q, --quiet and -v, --verbose (any command; main.cpp). Quiet leaves the text report out of
/// stdout (files, --json and --csv are still written; errors still print). Verbose: -v logs what
/// was read and simulated and each step of validate, compare and bench to stderr through spdlog,
/// -vv adds debug lines.
void set_output_level(int verbose, bool quiet);
bool quiet();
/// Whether a long command draws its progress bar (simulator/progress.hpp): not under -q, nor under
/// -v (whose log lines say each step); the bar itself also needs stderr to be a terminal.
bool progress_wanted();
/// One pipeline stage of a run: "stage", "gpu", "memory_bytes" {weights, ..., total} and "time_s"
/// {compute, ..., other_idle}, the text report's breakdown. run and compare both write it.
nlohmann::ordered_json stage_json(const StageReport& stage);
/// --json - or --json /dev/stdout: the document goes to stdout and the text report is left out, so
/// stdout is one JSON document a script can parse.
bool json_to_stdout(const std::string& path);
/// check_output_path, except for stdout.
void check_json_path(const std::string& path);
/// Writes the document to the file, or to stdout (see json_to_stdout).
void write_json(const std::string& path, const nlohmann::ordered_json& document);

/// Runs `load`; an error about the file `path` itself (not a line in it: too large, unreadable) is
/// given the option that named it.
template <typename Load>
auto named_by(const std::string& option, const std::string& path, Load load) {
  try {
    return load();
  } catch (const UserError& e) {
    if (e.file() == path && e.line() == 0 && e.field_path().empty()) throw UserError(path, 0, option, e.expected());
    throw;
  }
}

/// The report page's title and facts for a scenario (the runs are the caller's).
ReportPage report_page(const ScenarioSpec& s, const std::string& command);
/// --topology-level (run, compare) or --level (topology): node, leaf or spine; nullopt when not given.
std::optional<PictureLevel> parse_topology_level(const std::string& text, const std::string& option);
/// The cluster's picture on the report page, at `level` or else default_picture_level
/// (topology_svg.hpp), with a note saying the level and how many of its GPUs the job uses, or
/// `where` in its place when given (several jobs).
void add_topology_picture(ReportPage& page, const ClusterSpec& spec, std::optional<PictureLevel> level, int job_gpus,
                          const std::string& where = "");
/// A report's run as JSON and back (report_rows.cpp): how compare's child processes hand theirs over.
nlohmann::ordered_json report_run_json(const ReportRun& r);
ReportRun report_run_from_json(const nlohmann::ordered_json& j);

/// A command-line parse error in our words: the option it concerns and what was expected.
struct CommandLineError {
  std::string option;
  std::string expected;
};
CommandLineError describe_parse_error(const CLI::ParseError& e, const CLI::App& app);

}  // namespace clustersim::cli
