#pragma once
// The one error type for bad user input. It always names the file, the line and the field path,
// so the CLI can print it as a single line and exit with status 2.
#include <stdexcept>
#include <string>

namespace clustersim {

class UserError : public std::runtime_error {
 public:
  /// line is 1-based; 0 means "no line" (a command-line argument, say).
  UserError(std::string file, int line, std::string field_path, std::string expected);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& field_path() const { return field_path_; }
  const std::string& expected() const { return expected_; }

 private:
  std::string file_;
  int line_;
  std::string field_path_;
  std::string expected_;
};

}  // namespace clustersim
