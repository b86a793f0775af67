// Progress on stderr for the long commands: a bar on a terminal, nothing in a pipe or under -q,
// and under -v spdlog's step lines instead of the bar.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "simulator/progress.hpp"
#include "support.hpp"

using namespace clustersim;
using Catch::Matchers::Contains;

namespace {

/// What a Progress drew into a temporary file, after `steps` updates of `total` and finish().
std::string drawn(bool wanted, bool terminal, long total) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  {
    Progress bar("validate", wanted, f, terminal);
    for (long i = 0; i <= total; ++i) bar.update(i, total, "row-" + std::to_string(i));
    bar.finish();
  }
  std::string text;
  std::rewind(f);
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}

const std::string kRow = "--only korthikanti-22b-full";  // 8 A100s, well under a second

/// clustersim run on a pseudo-terminal (util-linux's script), stdout thrown away: what it drew on
/// the terminal, that is on stderr.
std::string on_terminal(const std::string& args) {
  const std::string out = test::temp_file("", ".tty");
  const std::string cmd = "script -qec \"" + test::binary_path() + " " + args + " >/dev/null\" /dev/null >" + out;
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string text = test::read_file(out);
  std::remove(out.c_str());
  return text;
}

}  // namespace

TEST_CASE("Progress draws its first and last step on a terminal, one line ended once", "[progress]") {
  const std::string text = drawn(true, true, 4);
  CHECK_THAT(text, Contains("\rvalidate [") && Contains(" 0/4 ") && Contains(" 4/4 ") && Contains("row-4"));
  // Thirty columns of '#' when done: the bar is full at the end.
  CHECK_THAT(text, Contains("[" + std::string(30, '#') + "]"));
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.back() == '\n');
}

TEST_CASE("Progress draws nothing when not wanted or when not on a terminal", "[progress]") {
  CHECK(drawn(false, true, 4).empty());
  CHECK(drawn(true, false, 4).empty());
}

TEST_CASE("validate in a pipe writes no progress, and under -v logs each row through spdlog instead", "[progress]") {
  const auto plain = test::run_cli("validate " + kRow);
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.stderr_text.empty());
  const auto verbose = test::run_cli("-v validate " + kRow);
  REQUIRE(verbose.exit_code == 0);
  CHECK_THAT(verbose.stderr_text, Contains("clustersim: validate: row 1 of 1: korthikanti-22b-full"));
  CHECK_THAT(verbose.stderr_text, !Contains("\r"));
}

TEST_CASE("validate, compare and bench draw a bar on a terminal, and not under -q or -v", "[progress]") {
  CHECK_THAT(on_terminal("validate " + kRow), Contains("validate [") && Contains("1/1"));
  CHECK_THAT(on_terminal("validate -q " + kRow), !Contains("validate ["));
  CHECK_THAT(on_terminal("validate -v " + kRow), !Contains("validate [") && Contains("row 1 of 1"));
  const std::string scenario = test::source_path("scenarios/validation/korthikanti-22b-full.yaml");
  CHECK_THAT(on_terminal("compare " + scenario + " --schedules 1f1b,gpipe"), Contains("compare [") && Contains("2/2"));
  CHECK_THAT(on_terminal("bench --scenarios " + scenario), Contains("bench [") && Contains("1/1"));
}

TEST_CASE("goodput draws a bar over its Monte-Carlo trials on a terminal, and not under -q", "[progress]") {
  // --iteration-s: the step time given, so only the Monte-Carlo runs.
  const std::string args = "goodput " + test::source_path("scenarios/llama3-405b-h100-16k-goodput.yaml") +
                           " --days 54 --iteration-s 10 --trials 2000";
  CHECK_THAT(on_terminal(args), Contains("goodput [") && Contains("2000/2000") && Contains("Monte-Carlo trials"));
  CHECK_THAT(on_terminal("-q " + args), !Contains("goodput ["));
}
