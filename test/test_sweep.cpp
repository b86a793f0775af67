// clustersim sweep end to end on a small job (Megatron 1.7B on 32 A100s, search over pp, the best
// verified on the engine): each point's cluster is sized to the job and priced as its bill of
// materials at the catalog's figures (the sum written out here), its best configuration is what
// search finds on that cluster, and the Pareto front is the points no cheaper one matches.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "simulator/price_catalog.hpp"
#include "support.hpp"

using namespace clustersim;
using clustersim::test::source_path;

namespace {

const std::string kScenario = source_path("scenarios/validation/narayanan-1.7b.yaml");  // 4 DGX A100, HDR 200G
const std::string kSweep = "sweep " + kScenario + " --vary pp --top 1 -j 2 -q";

}  // namespace

TEST_CASE("sweep: each point is sized to the job and costs its bill of materials at catalog prices", "[sweep]") {
  const auto j = test::cli_json(kSweep + " --vary-cluster nic_Gbps=200,400");
  const PriceCatalog prices = load_price_catalog(source_path("scenarios/prices.yaml"));
  REQUIRE(j.at("points").size() == 2);
  for (const auto& p : j.at("points")) {
    INFO(p.at("point"));
    CHECK(p.at("nodes") == 4);  // 32 GPUs of 8 per node
    CHECK(p.at("gpus") == 32);
    // DGX A100 at the catalog's price; every switch one QM9700 (40-port leaves and spines fit in 64
    // NDR ports, or 128 split ones at 200G); two optics and one fiber per cable.
    const auto& bom = p.at("bill_of_materials");
    const double capital = 4 * prices.servers[0].price_usd + bom.at("switches").get<int>() * prices.switches[0].price_usd +
                           bom.at("optics").get<int>() * prices.optics[0].price_usd +
                           bom.at("cables").get<int>() * prices.cables[0].price_usd;
    CHECK(p.at("cost").at("capital_usd").get<double>() == Approx(capital));
    const double power_MW = (4 * prices.servers[0].power_W + bom.at("switches").get<int>() * prices.switches[0].power_W +
                             bom.at("optics").get<int>() * prices.optics[0].power_W) / 1e6;
    CHECK(p.at("cost").at("power_MW").get<double>() == Approx(power_MW));
    const double tokens_per_s = p.at("tokens_per_s");
    CHECK(tokens_per_s > 0);
    CHECK(p.at("tokens_per_MWh").get<double>() == Approx(tokens_per_s * 3600 / power_MW));
    // 0.08 $/kWh and 4 years by default.
    const double usd_year = capital / 4 + power_MW * 1e3 * 365.25 * 24 * 0.08;
    CHECK(p.at("tokens_per_usd").get<double>() == Approx(tokens_per_s * 365.25 * 24 * 3600 / usd_year));
    CHECK(p.at("best").at("engine").at("tokens_per_s").get<double>() == tokens_per_s);
  }
  // Twice the NIC bandwidth never slows the job; both points use the same number of cables.
  CHECK(j.at("points")[1].at("tokens_per_s").get<double>() >= j.at("points")[0].at("tokens_per_s").get<double>());
  CHECK(j.at("points")[1].at("bill_of_materials").at("cables") == j.at("points")[0].at("bill_of_materials").at("cables"));
}

TEST_CASE("sweep: a point's best configuration is search's best on that point's cluster", "[sweep]") {
  const auto sweep = test::cli_json(kSweep + " --vary-cluster oversubscription.1=3");
  const auto search = test::cli_json("search " + kScenario + " --vary pp --top 1 -j 2 -q --set cluster.fabric.tiers.0.oversubscription=3");
  REQUIRE(sweep.at("points").size() == 1);
  const auto& best = sweep.at("points")[0].at("best");
  CHECK(best.at("pp") == search.at("rows")[0].at("pp"));
  CHECK(best.at("engine").at("tokens_per_s").get<double>() ==
        Approx(search.at("rows")[0].at("engine").at("tokens_per_s").get<double>()).epsilon(1e-9));
}

TEST_CASE("sweep: the Pareto front holds the points no cheaper point matches, drawn in the SVG", "[sweep]") {
  const std::string svg = test::temp_file("", ".svg");
  const auto j = test::cli_json(kSweep + " --vary-cluster nic_Gbps=200,400 --svg " + svg);
  std::vector<std::pair<double, double>> cost_speed;
  for (const auto& p : j.at("points")) cost_speed.emplace_back(p.at("cost").at("capital_usd"), p.at("tokens_per_s"));
  for (std::size_t i = 0; i < cost_speed.size(); ++i) {
    bool beaten = false;  // by a point no dearer and at least as fast, that comes first in (cost, -speed) order
    for (std::size_t k = 0; k < cost_speed.size(); ++k)
      if (k != i && cost_speed[k].first <= cost_speed[i].first && cost_speed[k].second >= cost_speed[i].second &&
          (cost_speed[k].first < cost_speed[i].first || cost_speed[k].second > cost_speed[i].second || k < i))
        beaten = true;
    CHECK(j.at("points")[i].at("pareto") == !beaten);
  }
  const std::string text = test::read_file(svg);
  CHECK(text.rfind("<svg", 0) == 0);
  std::size_t circles = 0;
  for (std::size_t at = text.find("<circle"); at != std::string::npos; at = text.find("<circle", at + 1)) ++circles;
  CHECK(circles == j.at("points").size());
}

TEST_CASE("sweep: --keep-clusters writes each point's cluster file, which search reads alone", "[sweep]") {
  const std::string dir = test::temp_file("", "") + ".d";
  test::cli_json(kSweep + " --vary-cluster gpus_per_node=4 --keep-clusters " + dir);
  const std::string point = test::read_file(dir + "/point-0.yaml");
  CHECK(point.find("gpus: 4") != std::string::npos);
  CHECK(point.find("nodes: 8") != std::string::npos);  // 32 GPUs, 4 a node
  const auto j = test::cli_json("search " + kScenario + " --vary pp --top 1 -q --set cluster=" + dir + "/point-0.yaml");
  CHECK(j.at("rows").size() == 1);
}

TEST_CASE("sweep: switches.2 sets the spine count, every leaf uplink stays cabled and each extra switch is priced", "[sweep]") {
  // 4 DGX A100 on the A100 SuperPOD's three tiers of 40-port HDR switches: 8 rail leaves of 20 up-ports,
  // one pod. The fewest spines that take an equal share of 20 uplinks in 20 down-ports each are 10
  // (two links to each leaf); 20 spines take one each. Either way 8 x 20 = 160 leaf-spine cables.
  // Each spine is a plane with one core above it (its 20 up-ports fit one 40-port core): 10 or 20
  // cores, and 20 spine-core cables per spine.
  const auto j = test::cli_json(kSweep + " --vary-cluster switches.2=10,20");
  const PriceCatalog prices = load_price_catalog(source_path("scenarios/prices.yaml"));
  REQUIRE(j.at("points").size() == 2);
  for (int i = 0; i < 2; ++i) {
    const int spines = i == 0 ? 10 : 20;
    const auto& tiers = j.at("points")[i].at("bill_of_materials").at("tiers");
    CHECK(tiers[1].at("tier") == 2);
    CHECK(tiers[1].at("switches") == spines);
    CHECK(tiers[1].at("cables") == 160);
    CHECK(tiers[2].at("switches") == spines);
    CHECK(tiers[2].at("cables") == 20 * spines);
  }
  // Ten more spines and ten more cores (one QM9700 each: 40 HDR ports fit its 128 NDR200 ports) and
  // 200 more spine-core cables with their two optics, nothing else.
  const double extra = j.at("points")[1].at("cost").at("capital_usd").get<double>() -
                       j.at("points")[0].at("cost").at("capital_usd").get<double>();
  CHECK(extra == Approx(20 * prices.switches[0].price_usd + 200 * (2 * prices.optics[0].price_usd + prices.cables[0].price_usd)));
}
