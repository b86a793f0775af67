// --csv: a command's table as CSV, made from the same rows as its --json document, so a column
// has the JSON field's name (nested fields joined by dots: time_s.bubble) and the same value.
#include <algorithm>
#include <iostream>
#include <sstream>

#include "simulator/cli/commands.hpp"

namespace clustersim::cli {

namespace {

/// Scalars of `row` by dotted name, in order; arrays are left out (a CSV cell holds one value).
void flatten(const nlohmann::ordered_json& row, const std::string& prefix, nlohmann::ordered_json& out) {
  for (const auto& [key, value] : row.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) flatten(value, name, out);
    else if (!value.is_array()) out[name] = value;
  }
}

/// RFC 4180: a cell with a comma, quote or line break is quoted, its quotes doubled.
std::string cell(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "";
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::string csv_of(const nlohmann::ordered_json& rows) {
  std::vector<nlohmann::ordered_json> flat;
  std::vector<std::string> columns;  // every row's fields, in the order first seen
  for (const auto& row : rows) {
    nlohmann::ordered_json f = nlohmann::ordered_json::object();
    flatten(row, "", f);
    for (const auto& [key, _] : f.items())
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    flat.push_back(std::move(f));
  }
  std::ostringstream out;
  for (std::size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << cell(columns[c]);
  out << "\n";
  for (const auto& f : flat) {
    for (std::size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << (f.contains(columns[c]) ? cell(f[columns[c]]) : "");
    out << "\n";
  }
  return out.str();
}

void check_csv_path(const std::string& csv, const std::string& json) {
  if (csv.empty()) return;
  if (json_to_stdout(csv) && json_to_stdout(json))
    throw UserError("command line", 0, "--csv", "expected a file: --json already writes to stdout");
  if (!json_to_stdout(csv)) check_output_path(csv, "--csv");
}

bool table_to_stdout(const std::string& json, const std::string& csv) {
  return !(quiet() || json_to_stdout(json) || json_to_stdout(csv));
}

void write_csv(const std::string& path, const nlohmann::ordered_json& rows) {
  if (path.empty()) return;
  if (json_to_stdout(path)) std::cout << csv_of(rows);  // held by main, as --json - is
  else write_file(path, csv_of(rows), "--csv");
}

}  // namespace clustersim::cli
