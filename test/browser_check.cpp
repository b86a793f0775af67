#include "browser_check.hpp"

#include <cstdlib>
#include <filesystem>

#include "support.hpp"

namespace clustersim::test {

namespace {

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// A fresh folder for one browser: its own profile, so two tests may run browsers at once.
std::filesystem::path fresh_dir(const std::string& suffix) {
  const std::filesystem::path dir = std::filesystem::path(temp_file("", suffix));
  std::filesystem::remove(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

bool have_chromium() { return std::system("command -v chromium >/dev/null 2>&1") == 0; }

std::size_t blank_screenshot_bytes() {
  namespace fs = std::filesystem;
  const std::string blank = temp_file("<!DOCTYPE html><html><body></body></html>\n", ".html");
  const fs::path dir = fresh_dir(".blank");
  const std::string png = (dir / "blank.png").string();
  const int status = std::system(("timeout 60 chromium --headless --disable-gpu --no-sandbox --user-data-dir=" +
                                  shell_quote((dir / "profile").string()) + " --window-size=1300,1600 --screenshot=" +
                                  shell_quote(png) + " " + shell_quote("file://" + blank) + " >/dev/null 2>&1")
                                     .c_str());
  std::error_code ec;
  const std::size_t bytes = status == 0 ? fs::file_size(png, ec) : 0;
  fs::remove_all(dir, ec);
  fs::remove(blank, ec);
  return ec ? 0 : bytes;
}

std::vector<std::string> browser_problems(const std::string& html_path, const std::vector<std::string>& sections,
                                          std::size_t blank_png_bytes) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir(".chromium");
  const std::string dom = (dir / "dom.html").string(), log = (dir / "log.txt").string(), png = (dir / "shot.png").string();
  const std::string cmd = "timeout 60 chromium --headless --disable-gpu --no-sandbox --user-data-dir=" +
                          shell_quote((dir / "profile").string()) +
                          " --enable-logging=stderr --v=0 --window-size=1300,1600 --screenshot=" + shell_quote(png) +
                          " --dump-dom " + shell_quote("file://" + fs::absolute(html_path).string()) + " >" +
                          shell_quote(dom) + " 2>" + shell_quote(log);
  const int status = std::system(cmd.c_str());
  std::vector<std::string> problems;
  if (status != 0) problems.push_back("chromium exited with status " + std::to_string(status));
  const std::string text = read_file(dom), messages = read_file(log);
  for (std::size_t at = messages.find(":CONSOLE"); at != std::string::npos; at = messages.find(":CONSOLE", at + 1))
    problems.push_back("console: " + messages.substr(at, messages.find('\n', at) - at));
  for (const std::string& id : sections)
    if (text.find("id=\"" + id + "\"") == std::string::npos) problems.push_back("missing section " + id);
  if (count_of(text, "<rect") == 0) problems.push_back("empty page: no shape drawn");
  std::error_code ec;
  const auto png_bytes = fs::file_size(png, ec);
  if (ec) problems.push_back("no screenshot");
  else if (blank_png_bytes > 0 && png_bytes <= 2 * blank_png_bytes)
    problems.push_back("empty page: the screenshot is " + std::to_string(png_bytes) + " bytes, a blank page's " +
                       std::to_string(blank_png_bytes));
  fs::remove_all(dir, ec);
  return problems;
}

}  // namespace clustersim::test
