#pragma once
// Reading an HTML report's text in tests: how often a needle occurs, and one <section>'s text. The
// reports are written by us with fixed markup, so plain search is enough (no HTML parser).

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

namespace clustersim::test {

inline std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// The text from `<section id="id"` to that section's `</section>`; fails the test if either is missing.
inline std::string section(const std::string& html, const std::string& id) {
  const auto begin = html.find("<section id=\"" + id + "\"");
  REQUIRE(begin != std::string::npos);
  const auto end = html.find("</section>", begin);
  REQUIRE(end != std::string::npos);
  return html.substr(begin, end - begin);
}

}  // namespace clustersim::test
