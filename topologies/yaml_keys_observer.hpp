#pragma once
// A window on the schema as the loaders enforce it: test_key_reference registers an observer and
// loads files, and every mapping checked by YamlField::expect_keys reports its file, field path and
// allowed keys, so the key reference (workloads/key_reference.hpp) is compared with the code itself.
#include <functional>
#include <string>
#include <vector>

namespace clustersim {

using ExpectedKeysObserver =
    std::function<void(const std::string& file, const std::string& path, const std::vector<std::string>& allowed)>;
/// Replaces the observer (an empty function: none, the default).
void observe_expected_keys(ExpectedKeysObserver observer);

}  // namespace clustersim
