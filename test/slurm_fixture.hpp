#pragma once
// The test Slurm that test/slurm/start-slurm.sh starts as a ctest fixture (tests named *_slurm get it,
// test/CMakeLists.txt): whether it is there, and a fresh folder for one job array.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

namespace clustersim::test {

/// Without slurm-wlm the fixture leaves no slurm.conf; the test then says it skips.
inline bool slurm_available() {
  const char* conf = std::getenv("SLURM_CONF");
  if (conf != nullptr && std::filesystem::exists(conf)) return true;
  WARN("no test Slurm (slurm-wlm and munge come from .ci/install-deps): skipped");
  return false;
}

/// A folder name under the temporary directory that does not exist yet.
inline std::string fresh_slurm_folder(const std::string& tag) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/clustersim-slurm-" + tag + "-" +
                          std::to_string(std::random_device{}());
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace clustersim::test
