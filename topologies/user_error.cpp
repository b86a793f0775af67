#include "topologies/user_error.hpp"

#include <sstream>

namespace clustersim {

namespace {
std::string format(const std::string& file, int line, const std::string& path, const std::string& expected) {
  std::ostringstream out;
  out << file;
  if (line > 0) out << ':' << line;
  out << ": ";
  if (!path.empty()) out << path << ": ";
  out << expected;
  return out.str();
}
}  // namespace

UserError::UserError(std::string file, int line, std::string field_path, std::string expected)
    : std::runtime_error(format(file, line, field_path, expected)),
      file_(std::move(file)),
      line_(line),
      field_path_(std::move(field_path)),
      expected_(std::move(expected)) {}

}  // namespace clustersim
