#pragma once
// A checker for the subset of JSON Schema (draft 2020-12 keywords) that simulator/schemas/ uses:
// type, required, properties, items, enum, minimum, anyOf, plus the annotations $schema, $id, title and
// description. Debian 12's one C++ validator (libvalijson-dev) pulls Qt 5 and Poco in as build
// dependencies; this subset is some eighty lines. A keyword outside it is itself a problem, so a
// schema cannot ask for a check that is silently skipped.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustersim::test {

/// Every way `document` departs from `schema`, one line each ("/rows/0/time_us: expected a number
/// >= 0, got -1"); empty when it conforms.
std::vector<std::string> schema_problems(const nlohmann::json& schema, const nlohmann::json& document);

}  // namespace clustersim::test
