// clustersim search against the engine: the screen's analytic prediction of every configuration it
// verifies is within 5% of the engine's iteration, and the configuration the engine finds fastest is
// among the screen's best 5%. Each space is small enough that every valid configuration is verified,
// so "the engine's best" is the best of the whole space, not of what the screen chose to show.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "simulator/search_screen.hpp"
#include "support.hpp"

namespace {

/// Runs search over `vary` with every valid configuration verified (`top` of them) and checks both claims.
void check_screen(const std::string& scenario, const std::string& vary, int expected_valid) {
  const nlohmann::json j = clustersim::test::cli_json("search " + clustersim::test::source_path(scenario) + " --vary " + vary +
                                                      " --top 1000 -j 2 -q");
  const int valid = j["valid"].get<int>();
  REQUIRE(valid == expected_valid);  // the space is what the test means it to be
  REQUIRE(j["rows"].size() == static_cast<std::size_t>(valid));
  double engine_best = 1e300, screen_of_best = 0;
  for (const auto& row : j["rows"]) {
    INFO(row.dump());
    REQUIRE(row["engine"].contains("iteration_s"));
    const double engine = row["engine"]["iteration_s"].get<double>(), screen = row["screen"]["iteration_s"].get<double>();
    CHECK(std::abs(screen - engine) / engine < 0.05);
    // Memory is the same model's: the fullest stage, per GPU, as the engine's run counts it.
    CHECK(row["screen"]["memory_bytes"].get<double>() == Approx(row["engine"]["memory_bytes"].get<double>()).epsilon(1e-9));
    if (engine < engine_best) engine_best = engine, screen_of_best = screen;
  }
  // Its place in the screen's ranking: one more than the configurations the screen thinks faster.
  int place = 1;
  for (const auto& row : j["rows"]) place += row["screen"]["iteration_s"].get<double>() < screen_of_best;
  INFO("the engine's best is the screen's #" << place << " of " << valid);
  CHECK(place <= std::max(1, static_cast<int>(std::ceil(0.05 * valid))));
}

}  // namespace

TEST_CASE("search: Megatron 1.7B on 32 A100s, pp x microbatch, screened within 5% of the engine") {
  // pp 1, 2, 4, 8 (the divisors of 32 that divide the 24 layers; 16 does not) x microbatches 1 to 16.
  check_screen("scenarios/validation/narayanan-1.7b.yaml", "pp,microbatch", 20);
}

TEST_CASE("search: GPT-3 175B on 1024 A100s, virtual stages x microbatch, screened within 5% of the engine") {
  // Interleaved on pp 8, 12 of the 96 layers a rank: v 2, 3, 4, 6 divide them (8 does not; v 1 is
  // not interleaved); microbatches 1, 2, 4 leave 96, 48, 24 per pipeline, whole groups of p = 8
  // (8 and 16 leave 12 and 6, which Megatron's groups cannot split).
  check_screen("scenarios/gpt3-175b-a100-1024.yaml", "microbatch,vpp", 12);
}

TEST_CASE("search: Llama 3 70B on 1024 H100s, untied embeddings, recompute screened within 5% and its memory exact") {
  // The screen's per-layer parameters come from a one-stage probe that holds the embedding and,
  // untied, the output layer's own copy: counting one copy put an extra embedding into every layer
  // (20 per stage here, +15.6 GiB per GPU), and rejected layouts that fit.
  check_screen("scenarios/llama3-70b-h100-1024.yaml", "recompute", 3);
}

TEST_CASE("search --json - is one document: the header, rows ranked by the engine, a front no row dominates") {
  const std::string csv = clustersim::test::temp_file("", ".csv");
  const clustersim::test::CliResult r =
      clustersim::test::run_cli("search " + clustersim::test::source_path("scenarios/validation/narayanan-1.7b.yaml") +
                                " --vary pp,microbatch --top 6 -j 2 -q --json - --csv " + csv);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);  // nothing else on stdout
  CHECK(j["schema_version"] == 2);
  CHECK(j["command"] == "search");
  CHECK(j["config"]["vary"] == nlohmann::json::array({"pp", "microbatch"}));
  REQUIRE(j["rows"].size() == 6);
  // The CSV holds the same rows, under a header.
  const std::string text = clustersim::test::read_file(csv);
  CHECK(std::count(text.begin(), text.end(), '\n') == 7);
  double previous = 1e300;
  for (const auto& row : j["rows"]) {
    const double tokens = row["engine"]["tokens_per_s"].get<double>();
    CHECK(tokens <= previous);
    previous = tokens;
  }
  // Pareto: for each front member, no verified row is at least as fast in no more memory and better in one.
  REQUIRE(!j["pareto"].empty());
  for (const auto& name : j["pareto"]) {
    const nlohmann::json* member = nullptr;
    for (const auto& row : j["rows"]) {
      const std::string text = "tp " + std::to_string(row["tp"].get<int>()) + " pp " + std::to_string(row["pp"].get<int>());
      if (name.get<std::string>().rfind(text, 0) == 0 &&
          name.get<std::string>().find("mb " + std::to_string(row["microbatch"].get<int>()) + " ") != std::string::npos)
        member = &row;
    }
    REQUIRE(member != nullptr);
    const double t = (*member)["engine"]["tokens_per_s"], m = (*member)["engine"]["memory_bytes"];
    for (const auto& row : j["rows"]) {
      const double rt = row["engine"]["tokens_per_s"], rm = row["engine"]["memory_bytes"];
      CHECK_FALSE((rt >= t && rm <= m && (rt > t || rm < m)));
    }
  }
}

TEST_CASE("search's screen prices a pipeline transfer over the pair's bandwidth, not at 0") {
  // NCCL's tuner leaves send/recv out, so its predicted time was 0 here and the screen charged
  // nothing for pipeline transfers. Across two DGX H100 nodes the pair's bandwidth is one NDR NIC,
  // 400 Gb/s at the cluster's efficiency 0.94; inside one node, NVLink's 450 GB/s at 0.822.
  const clustersim::Cluster& h100 = clustersim::test::shipped_cluster("scenarios/clusters/dgx-h100-superpod.yaml");
  const double bytes = 1e9;
  CHECK(clustersim::screen_transfer_s(h100, 0, 8, bytes, 16) == Approx(bytes / (50e9 * 0.94)).epsilon(1e-9));
  CHECK(clustersim::screen_transfer_s(h100, 0, 1, bytes, 16) == Approx(bytes / (450e9 * 0.822)).epsilon(1e-9));
  CHECK(clustersim::screen_transfer_s(h100, 3, 3, bytes, 16) == 0);
}
