#pragma once
// The promise every bad input keeps, checked in one place: exit status 2, nothing on stdout, one
// line on stderr that starts where it should (file:line: field:) and says what was expected, and
// no sign of a crash (an abort's or a sanitizer's text).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "support.hpp"

namespace clustersim::test {

inline void require_one_line_error(const CliResult& r, const std::string& prefix, const std::string& expected) {
  using Catch::Matchers::Contains;
  using Catch::Matchers::StartsWith;
  INFO("stdout: " << r.stdout_text);
  INFO("stderr: " << r.stderr_text);
  CHECK(r.exit_code == 2);
  CHECK(r.stdout_text.empty());
  CHECK(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n') == 1);
  CHECK_THAT(r.stderr_text, StartsWith(prefix) && Contains(expected));
  for (const char* crash : {"terminate called", "what()", "Aborted", "Segmentation", "backtrace", "#0 ", "#1 "})
    CHECK_THAT(r.stderr_text, !Contains(crash));
}

}  // namespace clustersim::test
