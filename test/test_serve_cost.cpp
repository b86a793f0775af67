// serve's cost per million tokens (simulator/serve_cost.hpp) against its closed form, written here
// with a price catalog built in the test, and the CLI's text and JSON with the shipped one.
#include <catch2/catch.hpp>

#include "simulator/serve_cost.hpp"
#include "simulator/serve_report.hpp"
#include "simulator/serve_sim.hpp"
#include "support.hpp"
#include "workloads/serving/serving_spec.hpp"

using namespace clustersim;
using test::source_path;

namespace {

/// A catalog where only the server costs anything: the fabric's switches, optics and cables are free.
PriceCatalog server_only(double price_usd, double power_W) {
  PriceCatalog c;
  c.file = "test";
  ServerPrice s;
  s.name = "server";
  s.gpu = "H100-SXM";
  s.gpus = 8;
  s.nics = 8;
  s.price_usd = price_usd;
  s.power_W = power_W;
  c.servers.push_back(s);
  SwitchPrice sw;
  sw.name = "switch";
  sw.ports = 64;
  sw.port_Gbps = 400;
  c.switches.push_back(sw);
  PortPrice p;
  p.name = "port";
  p.port_Gbps = 400;
  c.optics.push_back(p);
  c.cables.push_back(p);
  return c;
}

}  // namespace

TEST_CASE("serve's cost per million tokens: one node's year (price / years + kW x hours x $/kWh) over its tokens", "[serve]") {
  // One 8-GPU replica on the 127-node SuperPOD: the fleet is one node's share of the cluster.
  const ServingSpec s = load_serving(source_path("scenarios/serving/llama3-70b-h100-tp8.yaml"), {"serving.requests.duration_s=20"});
  const ServeSummary m = summarize_serving(s, simulate_serving(s));
  Economics e;
  e.usd_per_kWh = 0.1;
  e.amortisation_years = 4;
  const ServeCost c = serve_cost(s, m, server_only(400000, 10000), e);
  REQUIRE(c.priced);
  CHECK(c.share == Approx(8.0 / 1016));
  const double year_s = 365.25 * 24 * 3600;
  const double node_usd_per_year = 400000.0 / 4 + 10.0 * (year_s / 3600) * 0.1;  // $100,000 + $8,766
  CHECK(c.fleet_usd_per_year == Approx(node_usd_per_year).epsilon(1e-9));
  CHECK(c.usd_per_million_output_tokens == Approx(node_usd_per_year / year_s / m.output_tokens_per_s * 1e6).epsilon(1e-9));
  CHECK(c.usd_per_million_tokens ==
        Approx(node_usd_per_year / year_s / (m.output_tokens_per_s + m.prompt_tokens_per_s) * 1e6).epsilon(1e-9));
  // Twice the load on the same fleet: each token costs about half.
  const ServingSpec busy = load_serving(source_path("scenarios/serving/llama3-70b-h100-tp8.yaml"),
                                        {"serving.requests.duration_s=20", "serving.requests.rate_per_s=8"});
  const ServeCost c2 = serve_cost(busy, summarize_serving(busy, simulate_serving(busy)), server_only(400000, 10000), e);
  CHECK(c2.usd_per_million_output_tokens < 0.6 * c.usd_per_million_output_tokens);
}

TEST_CASE("serve's cost: a GPU the price catalog lacks is reported unpriced, not an error", "[serve]") {
  const ServingSpec s = load_serving(source_path("scenarios/serving/llama3-70b-h100-tp8.yaml"), {"serving.requests.duration_s=5"});
  const ServeSummary m = summarize_serving(s, simulate_serving(s));
  PriceCatalog none = server_only(1, 1);
  none.servers.front().gpu = "B200";
  const ServeCost c = serve_cost(s, m, none, Economics{});
  CHECK_FALSE(c.priced);
  CHECK_THAT(c.unpriced_reason, Catch::Contains("GPU 'H100-SXM'"));
}

TEST_CASE("serve prints the cost per million tokens from the shipped price catalog, and --json carries it", "[serve]") {
  const std::string file = source_path("scenarios/serving/llama3-70b-h100-tp8.yaml");
  const auto text = test::run_cli("serve " + file + " --set serving.requests.duration_s=5");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Catch::Contains("per million output tokens") && Catch::Contains("prices.yaml"));
  const auto json = test::run_cli("serve " + file + " --set serving.requests.duration_s=5 --usd-per-kWh 0 --json -");
  REQUIRE(json.exit_code == 0);
  const nlohmann::json cost = nlohmann::json::parse(json.stdout_text).at("cost");
  CHECK(cost.at("priced") == true);
  CHECK(cost.at("usd_per_kWh") == 0);
  // DGX H100 at $270,000 over 4 years, no electricity: the fleet's share of the cluster is one node's.
  CHECK(cost.at("fleet_usd_per_year").get<double>() ==
        Approx(cost.at("share").get<double>() * cost.at("cluster_capital_usd").get<double>() / 4));
  CHECK(cost.at("share").get<double>() * cost.at("cluster_capital_usd").get<double>() > 270000);  // and its share of the fabric
}
