// `clustersim schema`: every scenario, model and cluster key with its unit, default and aliases,
// printed from the one table the loaders are checked against (workloads/key_reference.hpp).
// --markdown writes the tables scenarios/README.md carries; a test keeps the two equal.
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "simulator/cli/commands.hpp"
#include "workloads/key_reference.hpp"

namespace clustersim::cli {

namespace {

nlohmann::ordered_json rows_json() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const KeyReference& k : key_reference())
    rows.push_back({{"file", k.file}, {"key", k.key}, {"unit", k.unit},
                    {"default", *k.default_value ? nlohmann::ordered_json(k.default_value) : nlohmann::ordered_json()},
                    {"required", !*k.default_value}, {"aliases", key_aliases_of(k)}});
  return rows;
}

std::string text_table() {
  std::ostringstream out;
  std::string last;
  for (const KeyReference& k : key_reference()) {
    if (last != k.file) {
      out << fmt::format("{}# {} keys: key, unit or values, default (required where none), aliases\n", last.empty() ? "" : "\n", k.file);
      last = k.file;
    }
    const std::string aliases = key_aliases_of(k);
    out << fmt::format("  {:<46} {}; default: {}{}\n", k.key, k.unit, *k.default_value ? k.default_value : "required",
                       aliases.empty() ? "" : "; alias " + aliases);
  }
  return out.str();
}

}  // namespace

void add_schema_command(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  auto json = std::make_shared<std::string>(), csv = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("schema", "every scenario, model and cluster key with its unit, default and aliases");
  cmd->add_flag("--markdown", *markdown, "print the tables as scenarios/README.md carries them")->disable_flag_override();
  cmd->add_option("--json", *json, "also write the keys as JSON (- or /dev/stdout: to stdout, without the text)");
  cmd->add_option("--csv", *csv, "also write the keys as CSV, JSON's field names (- or /dev/stdout: to stdout, without the text)");
  cmd->callback([markdown, json, csv] {
    if (!json->empty()) check_json_path(*json);
    check_csv_path(*csv, *json);
    const nlohmann::ordered_json rows = rows_json();
    write_csv(*csv, rows);
    if (!json->empty()) {
      nlohmann::ordered_json j = json_document("schema", nlohmann::ordered_json::object());
      j["keys"] = rows;
      write_json(*json, j);
    }
    if (table_to_stdout(*json, *csv)) std::cout << (*markdown ? key_reference_markdown() : text_table());
  });
}

}  // namespace clustersim::cli
