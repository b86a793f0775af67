// Flapping links (variability.flapping_links) through `clustersim run`, in closed form: an
// iteration meets a down window with chance min(1, (down_s + T) / period_s), T the iteration with
// the link up; one that does runs as with the link failed (routed around), or waits the window out
// where the link has no other path (T + down_s).
#include <catch2/catch.hpp>

#include <cmath>

#include "one_line_error.hpp"
#include "support.hpp"
#include "workloads/variability.hpp"

using namespace clustersim;

namespace {

std::string four_nodes() {
  return test::shipped_with("scenarios/clusters/dgx-a100-fat-tree.yaml", "  nodes: 384\n", "  nodes: 4\n");
}

/// Megatron's 1.7B on four DGX A100 nodes (two leaves, twenty parallel uplinks each to one spine).
std::string scenario_with(const std::string& variability) {
  return test::small_megatron_scenario("flapping", four_nodes(), "{tp: 2, pp: 2, dp: 8}", variability);
}

double iteration_of(const std::string& variability) {
  return test::cli_json("run " + scenario_with(variability) + " --fold exact")["iteration_s"].get<double>();
}

}  // namespace

TEST_CASE("a flapping link that every iteration meets down runs as the failed link, routed around") {
  // down 100 s of every 100.1 s: an iteration longer than 0.1 s meets a window (chance 1).
  const nlohmann::json j = test::cli_json(
      "run " + scenario_with("variability:\n  flapping_links: [{link: \"leaf0-spine0#3\", down_s: 100, period_s: 100.1}]\n") +
      " --fold exact");
  const double failed = iteration_of("variability:\n  failed_links: [\"leaf0-spine0#3\"]\n");
  const double up = iteration_of("");
  const nlohmann::json& f = j["variability"]["flapping"];
  CHECK(f["links"][0]["chance"] == 1.0);
  CHECK(f["links"][0]["down"] == true);
  CHECK(f["links"][0]["rerouted"] == true);
  CHECK(f["stall_s"] == 0.0);
  CHECK(j["iteration_s"].get<double>() == failed);
  CHECK(f["up_iteration_s"].get<double>() == up);
}

TEST_CASE("a flapping link with no other path stalls the job for its down time") {
  // All twenty of leaf 0's uplinks: down, nothing joins the two leaves, so the rings wait.
  const nlohmann::json j = test::cli_json(
      "run " + scenario_with("variability:\n  flapping_links: [{link: leaf0-spine0, down_s: 0.25, period_s: 0.3}]\n") +
      " --fold exact");
  const double up = iteration_of("");
  const nlohmann::json& f = j["variability"]["flapping"]["links"][0];
  REQUIRE(up >= 0.05);  // so that (0.25 + up) / 0.3 >= 1
  CHECK(f["chance"] == 1.0);
  CHECK(f["down"] == true);
  CHECK(f["rerouted"] == false);
  CHECK(f["stall_s"] == 0.25);
  CHECK(test::relative_error(j["iteration_s"].get<double>(), up + 0.25) < 1e-12);
}

TEST_CASE("a flapping link's chance is (down_s + T) / period_s, and each draw is either state exactly") {
  const std::string flap = "variability:\n  seed: SEED\n  flapping_links: [{link: \"leaf0-spine0#3\", down_s: 0.5, period_s: 4}]\n";
  const double up = iteration_of("");
  const double failed = iteration_of("variability:\n  failed_links: [\"leaf0-spine0#3\"]\n");
  REQUIRE(failed != up);
  int down = 0;
  for (int seed = 0; seed < 6; ++seed) {
    INFO("seed " << seed);
    const nlohmann::json j =
        test::cli_json("run " + scenario_with(test::replaced_all(flap, "SEED", std::to_string(seed), "flap")) + " --fold exact");
    const nlohmann::json& f = j["variability"]["flapping"]["links"][0];
    CHECK(test::relative_error(f["chance"].get<double>(), (0.5 + up) / 4) < 1e-12);
    const bool is_down = f["down"].get<bool>();
    CHECK(is_down == (flap_variate(static_cast<std::uint64_t>(seed), 0) <= (0.5 + up) / 4));
    CHECK(j["iteration_s"].get<double>() == (is_down ? failed : up));
    down += is_down;
  }
  INFO(down << " of 6 draws down");
  // The variate is uniform: over many seeds the share of down draws is the chance.
  int below = 0;
  const int draws = 40000;
  for (int seed = 0; seed < draws; ++seed) below += flap_variate(static_cast<std::uint64_t>(seed), 2) <= 0.3;
  CHECK(std::abs(static_cast<double>(below) / draws - 0.3) < 4 * std::sqrt(0.3 * 0.7 / draws));  // 4 sigma
}

TEST_CASE("a flapping period that makes no sense, or a link the cluster lacks, is one line at its field, exit 2") {
  struct Bad {
    std::string flap, field, expected;
  };
  const std::vector<Bad> cases = {
      {"[{link: leaf0-spine0, down_s: 30, period_s: 30}]", "variability.flapping_links[0].period_s",
       "expected a period longer than down_s, so the link comes back up"},
      {"[{link: leaf0-spine0, down_s: 60, period_s: 30}]", "variability.flapping_links[0].period_s", "got period_s 30 with down_s 60"},
      {"[{link: leaf0-spine0, down_s: -1, period_s: 30}]", "variability.flapping_links[0].down_s", "expected"},
      {"[{link: leaf0-spine0, down_s: 0, period_s: 30}]", "variability.flapping_links[0].down_s", "expected"},
      {"[{link: leaf0-spine0, down_s: 1}]", "variability.flapping_links[0].period_s", "missing required field"},
      {"[{link: leaf0-spine77, down_s: 1, period_s: 30}]", "variability.flapping_links[0].link", "expected a link of the cluster named A-B"},
      {"[{link: leaf0-spine0, down_s: 1, period_s: 30, every: 2}]", "variability.flapping_links[0].every", "unknown key"},
      {"leaf0-spine0", "variability.flapping_links", "expected a list of flapping links"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.flap);
    const std::string scenario = scenario_with("variability:\n  flapping_links: " + bad.flap + "\n");
    const int line = test::line_of(test::read_file(scenario), "flapping_links:");
    test::require_one_line_error(test::run_cli("run " + scenario), "error: " + scenario + ":" + std::to_string(line) + ": " + bad.field + ": ",
                                 bad.expected);
  }
}
