// `clustersim validate`: predicted against published iteration times, row by row, with the errors,
// and per validation set its mean and largest |error| and how the error moves with scale.
// Each simulation runs in its own child process (SimGrid holds one platform per process), -j of them
// at a time; the table is in row order whatever order they finish in.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "simulator/cli/commands.hpp"
#include "simulator/progress.hpp"
#include "simulator/training_run.hpp"
#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

struct Row {
  std::string set;       // the validation set it belongs to (one published table or benchmark)
  std::string name;
  std::string scenario;  // resolved path
  double published_s = 0;
  std::string source;
};

/// The shipped sets: scenarios/validation/published.yaml and every scenarios/validation/*/published.yaml.
std::vector<std::string> default_rows_files() {
  const std::filesystem::path dir = shipped_file("scenarios/validation");
  std::vector<std::string> out{(dir / "published.yaml").string()};
  std::vector<std::string> nested;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "published.yaml"))
      nested.push_back((entry.path() / "published.yaml").string());
  std::sort(nested.begin(), nested.end());  // deterministic order, whatever the file system's
  out.insert(out.end(), nested.begin(), nested.end());
  return out;
}

// A rows file: `set:` names the set of its rows (a row may name its own), `rows:` lists them. A
// row's tokens_per_s_per_gpu or published_mfu, when given, is the published throughput its iteration
// time came from (for the reader and for the tests' check of the conversion); validate reads the time.
std::vector<Row> load_rows(const std::string& path) {
  const YamlField root = YamlField::load_file(path, "--rows");
  root.expect_keys({"set", "rows"});
  std::string file_set = std::filesystem::path(path).parent_path().filename().string();
  if (auto s = root.find("set")) file_set = s->as_string();
  const YamlField rows = root.child("rows");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<Row> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const YamlField r = rows.element(i);
    r.expect_keys({"set", "name", "scenario", "published_iter_s", "tokens_per_s_per_gpu", "published_mfu", "source"});
    const YamlField scenario = r.child("scenario");
    const std::string resolved = (dir / scenario.as_string()).string();
    if (auto why = input_file_problem(resolved)) scenario.fail("cannot open '" + resolved + "' (" + *why + ")");
    if (auto t = r.find("tokens_per_s_per_gpu")) t->as_number_in(1e-6, 1e9, "tokens/s");
    if (auto m = r.find("published_mfu")) m->as_number_in(1e-6, 1, "a fraction of the peak");
    const YamlField source = r.child("source");
    if (source.as_string().empty()) source.fail("expected the row's source (paper and table, log or page, with its date)");
    out.push_back({r.find("set") ? r.child("set").as_string() : file_set, r.child("name").as_string(), resolved,
                   r.child("published_iter_s").as_number_in(1e-6, 1e9, "s"), source.as_string()});
  }
  return out;
}

/// What a row's child process hands back: its scenario's predicted iteration time with the replicas
/// folded as `fold` says, "nan" when it does not fit in memory, or the user's error it meets.
std::string predict_text(const ScenarioSpec& scenario, FoldMode fold) {
  try {
    return fmt::format("{:.17g}", run_training(scenario, false, nullptr, fold).iteration_s);
  } catch (const OutOfMemoryError&) {
    return std::string("nan");
  } catch (const UserError& e) {
    return fmt::format("error\n{}\n{}\n{}\n{}", e.file(), e.line(), e.field_path(), e.expected());
  }
}

/// The predicted iteration time from a child's text; NaN when the row does not fit in memory. Any
/// other error in the row's files is the user's, reported as such (exit 2).
double prediction(const std::optional<std::string>& child) {
  if (!child) throw std::runtime_error("a simulation child process failed");
  const std::string& text = *child;
  if (text.rfind("error\n", 0) == 0) {
    std::istringstream in(text.substr(6));
    std::string file, line, field, expected;
    std::getline(in, file);
    std::getline(in, line);
    std::getline(in, field);
    std::getline(in, expected, '\0');
    throw UserError(file, std::stoi(line), field, expected);
  }
  return text == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::stod(text);
}

/// The signed errors of one set against the GPU counts of its rows.
struct SetErrors {
  std::vector<double> log2_gpus, error_pct;
};

/// Least-squares slope of signed error (points) against log2(GPUs): points per doubling of the
/// GPU count. NaN when the set has fewer than two distinct GPU counts.
double slope_per_doubling(const SetErrors& s) {
  const double n = static_cast<double>(s.error_pct.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < s.error_pct.size(); ++i) mx += s.log2_gpus[i] / n, my += s.error_pct[i] / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < s.error_pct.size(); ++i) {
    sxx += (s.log2_gpus[i] - mx) * (s.log2_gpus[i] - mx);
    sxy += (s.log2_gpus[i] - mx) * (s.error_pct[i] - my);
  }
  return sxx > 1e-12 ? sxy / sxx : std::numeric_limits<double>::quiet_NaN();
}

/// One set's figures, as the text summary line and the --json "sets" entry give them.
struct SetStats {
  std::size_t rows = 0;
  double lo_gpus = 0, hi_gpus = 0, mean_abs_pct = 0, max_abs_pct = 0, slope = 0;
};

SetStats set_stats(const SetErrors& s) {
  SetStats out;
  out.rows = s.error_pct.size();
  if (out.rows == 0) return out;
  double sum = 0, lo = 1e300, hi = 0;
  for (std::size_t i = 0; i < out.rows; ++i) {
    sum += std::abs(s.error_pct[i]);
    out.max_abs_pct = std::max(out.max_abs_pct, std::abs(s.error_pct[i]));
    lo = std::min(lo, std::exp2(s.log2_gpus[i]));
    hi = std::max(hi, std::exp2(s.log2_gpus[i]));
  }
  out.lo_gpus = lo, out.hi_gpus = hi, out.mean_abs_pct = sum / static_cast<double>(out.rows);
  out.slope = slope_per_doubling(s);
  return out;
}

std::string set_summary(const std::string& name, const SetErrors& s) {
  const SetStats t = set_stats(s);
  if (t.rows == 0) return fmt::format("# set {}: no row fits in memory\n", name);
  return fmt::format("# set {}: {} rows, {:.0f} to {:.0f} GPUs, mean |error| {:.1f}%, max |error| {:.1f}%, error trend {}\n",
                     name, t.rows, t.lo_gpus, t.hi_gpus, t.mean_abs_pct, t.max_abs_pct,
                     std::isnan(t.slope) ? std::string("- (one GPU count)") : fmt::format("{:+.2f} points per doubling of GPUs", t.slope));
}

/// A number, or null where it is NaN (no prediction; one GPU count).
nlohmann::ordered_json number_or_null(double x) { return std::isnan(x) ? nlohmann::ordered_json() : nlohmann::ordered_json(x); }

nlohmann::ordered_json set_json(const std::string& name, const SetErrors& s) {
  const SetStats t = set_stats(s);
  nlohmann::ordered_json j{{"set", name}, {"rows_predicted", t.rows}};
  j["mean_abs_error_pct"] = t.rows ? nlohmann::ordered_json(t.mean_abs_pct) : nlohmann::ordered_json();
  j["max_abs_error_pct"] = t.rows ? nlohmann::ordered_json(t.max_abs_pct) : nlohmann::ordered_json();
  j["error_trend_pct_per_doubling"] = t.rows ? number_or_null(t.slope) : nlohmann::ordered_json();
  return j;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto only = std::make_shared<std::vector<std::string>>();
  auto sets = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("validate", "predicted vs published iteration times, with % error per row and set");
  cmd->add_option("--rows", *files,
                  "rows files (default: scenarios/validation/published.yaml and scenarios/validation/*/published.yaml)")
      ->delimiter(',');
  cmd->add_option("--sets", *sets, "validation sets to run, by name (default: all)")->delimiter(',');
  // Renamed from --set, which on every other command means KEY=VALUE: an old command line gets a
  // line saying so rather than a silent change of meaning.
  auto renamed = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--set", *renamed, "(renamed --sets; --set KEY=VALUE does not apply to validate)");
  cmd->add_option("--only", *only, "row names to run (default: all)")->delimiter(',');
  auto json = std::make_shared<std::string>();
  cmd->add_option("--json", *json, "also write the rows and sets as JSON (- or /dev/stdout: to stdout, without the table)");
  auto csv = std::make_shared<std::string>();
  cmd->add_option("--csv", *csv, "also write the rows as CSV, JSON's field names (- or /dev/stdout: to stdout, without the table)");
  auto jobs = std::make_shared<std::string>("1");
  cmd->add_option("-j", *jobs, "rows simulated at a time, each in its own process (default 1; a row replayed whole "
                               "with --fold exact may take GiBs)");
  auto fold = std::make_shared<std::string>("assume");
  cmd->add_option("--fold", *fold,
                  "how each row's data-parallel replicas fold, as in run: assume (the default here, unlike run: "
                  "fast), exact (every GPU's traffic on the fabric, folded where provably exact), none or all");
  cmd->callback([files, only, sets, json, csv, renamed, fold, jobs] {
    if (!renamed->empty())
      throw UserError("command line", 0, "--set",
                      "validate takes no KEY=VALUE overrides; the validation sets to run are chosen with --sets NAME,... "
                      "(validate's --set was renamed --sets)");
    const std::vector<std::string> paths = files->empty() ? default_rows_files() : *files;
    std::vector<Row> rows;
    std::vector<std::string> known_sets;
    for (const std::string& path : paths)
      for (Row& r : load_rows(path)) {
        if (std::find(known_sets.begin(), known_sets.end(), r.set) == known_sets.end()) known_sets.push_back(r.set);
        rows.push_back(std::move(r));
      }
    for (const std::string& s : *sets)
      if (std::find(known_sets.begin(), known_sets.end(), s) == known_sets.end()) {
        std::string names;
        for (const std::string& k : known_sets) names += (names.empty() ? "" : ", ") + k;
        throw UserError("command line", 0, "--sets", "expected one of the sets " + names + "; got '" + s + "'");
      }
    if (!sets->empty())
      std::erase_if(rows, [&](const Row& r) { return std::find(sets->begin(), sets->end(), r.set) == sets->end(); });
    if (!only->empty()) {
      std::erase_if(rows, [&](const Row& r) { return std::find(only->begin(), only->end(), r.name) == only->end(); });
      if (rows.empty()) {
        std::string listed;
        for (const std::string& p : paths) listed += (listed.empty() ? "" : ", ") + p;
        throw UserError("command line", 0, "--only", "expected row names listed in " + listed);
      }
    }
    const FoldMode fold_mode = parse_fold(*fold);
    const int job_count = static_cast<int>(parse_integer(*jobs, "-j", 1, 256));
    if (!json->empty()) check_json_path(*json);
    check_csv_path(*csv, *json);
    // With --json - the table is left out, so stdout is the one document.
    std::ostringstream table;
    // run replays every GPU by default and validate does not, so the table says which it did.
    table << (fold_mode == FoldMode::assume
                  ? "# replicas: assume (replica 0 simulated for all, unproven; --fold exact replays every GPU)\n"
                  : fmt::format("# replicas: {} (every GPU's traffic on the fabric)\n", to_string(fold_mode)));
    table << fmt::format("# {:<36} {:>6} {:>10} {:>10} {:>8}\n", "row", "GPUs", "published", "predicted", "error");
    table << fmt::format("# {:<36} {:>6} {:>10} {:>10} {:>8}\n", "", "", "(s)", "(s)", "(%)");
    nlohmann::ordered_json row_json = nlohmann::ordered_json::array(), set_list = nlohmann::ordered_json::array();
    double sum = 0, worst = 0;
    int counted = 0;
    std::vector<std::pair<std::string, SetErrors>> per_set;
    // Every row's files are read before any is simulated, so an error in one is reported at once;
    // each child runs the scenario read here.
    std::vector<ScenarioSpec> scenarios;
    for (const Row& r : rows) scenarios.push_back(load_scenario(r.scenario));
    Progress bar("validate", progress_wanted());
    bar.update(0, static_cast<long>(rows.size()));
    const std::vector<std::optional<std::string>> texts = run_in_children(
        rows.size(),
        [&](std::size_t k) {
          spdlog::info("validate: row {} of {}: {} ({})", k + 1, rows.size(), rows[k].name, rows[k].scenario);
          return predict_text(scenarios[k], fold_mode);
        },
        job_count, [&](std::size_t finished) { bar.update(static_cast<long>(finished), static_cast<long>(rows.size())); });
    for (const Row& r : rows) {
      const std::size_t k = static_cast<std::size_t>(&r - rows.data());
      const int gpus = scenarios[k].gpus();
      if (per_set.empty() || per_set.back().first != r.set) {
        if (!per_set.empty()) {
          table << set_summary(per_set.back().first, per_set.back().second);
          set_list.push_back(set_json(per_set.back().first, per_set.back().second));
        }
        per_set.push_back({r.set, {}});
      }
      const double predicted = prediction(texts[k]);
      const double error = 100 * (predicted - r.published_s) / r.published_s;  // NaN when it does not fit
      row_json.push_back({{"set", r.set}, {"name", r.name}, {"scenario", r.scenario}, {"gpus", gpus},
                          {"published_iteration_s", r.published_s}, {"iteration_s", number_or_null(predicted)},
                          {"error_pct", number_or_null(error)}, {"fits_in_memory", !std::isnan(predicted)},
                          {"source", r.source}});
      if (std::isnan(predicted)) {
        table << fmt::format("  {:<36} {:>6} {:>10.3f} {:>10} {:>8}  does not fit in memory\n", r.name, gpus,
                             r.published_s, "-", "-");
        continue;
      }
      table << fmt::format("  {:<36} {:>6} {:>10.3f} {:>10.3f} {:>+8.1f}\n", r.name, gpus, r.published_s, predicted, error);
      per_set.back().second.log2_gpus.push_back(std::log2(static_cast<double>(gpus)));
      per_set.back().second.error_pct.push_back(error);
      sum += std::abs(error);
      worst = std::max(worst, std::abs(error));
      ++counted;
    }
    bar.finish();
    if (!per_set.empty()) {
      table << set_summary(per_set.back().first, per_set.back().second);
      set_list.push_back(set_json(per_set.back().first, per_set.back().second));
    }
    table << fmt::format("# mean |error| {:.1f}%, max |error| {:.1f}% over {} rows\n", counted ? sum / counted : 0.0,
                         worst, counted);
    write_csv(*csv, row_json);
    if (!json->empty()) {
      nlohmann::ordered_json j = json_document(
          "validate", {{"rows_files", paths}, {"sets", *sets}, {"only", *only}, {"fold", *fold}});
      j["rows"] = std::move(row_json);
      j["sets"] = std::move(set_list);
      j["rows_predicted"] = counted;
      j["mean_abs_error_pct"] = counted ? nlohmann::ordered_json(sum / counted) : nlohmann::ordered_json();
      j["max_abs_error_pct"] = counted ? nlohmann::ordered_json(worst) : nlohmann::ordered_json();
      write_json(*json, j);
    }
    if (table_to_stdout(*json, *csv)) std::cout << table.str();
  });
}

}  // namespace clustersim::cli
