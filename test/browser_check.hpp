#pragma once
// Opening a report page in headless Chromium (Debian's `chromium`), as the --report tests do: the
// console messages, the sections of the rendered DOM and the screenshot against a blank page's.
#include <cstddef>
#include <string>
#include <vector>

namespace clustersim::test {

/// Whether `chromium` is on the PATH (a test without it warns and skips its browser check).
bool have_chromium();

/// The screenshot of an empty page at the window size browser_problems uses, in bytes: what
/// "nothing drawn" weighs.
std::size_t blank_screenshot_bytes();

/// What is wrong with a page as headless Chromium shows it: console messages, sections (by id)
/// missing from the rendered DOM, no shape drawn, a screenshot no larger than twice
/// `blank_png_bytes` (0: not checked). Empty: nothing.
std::vector<std::string> browser_problems(const std::string& html_path, const std::vector<std::string>& sections,
                                          std::size_t blank_png_bytes);

}  // namespace clustersim::test
