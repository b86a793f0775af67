// `clustersim sweep`: clusters, not just configurations. Every point of the cluster dimensions
// (`--vary-cluster`, cluster_sweep.hpp) becomes a cluster file sized to the job; search picks its
// best configuration (the screen, then the engine on the top K, search_verify.hpp); the fabric's
// bill of materials is priced from the catalog (cluster_cost.hpp). Printed: capital cost, power,
// tokens/s, tokens per dollar-year and per MWh per point, and the Pareto front of tokens/s
// against capital cost.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "simulator/cli/commands.hpp"
#include "simulator/cli/search_report.hpp"
#include "simulator/cli/search_verify.hpp"
#include "simulator/cli/slurm_verify.hpp"
#include "simulator/cli/sweep_output.hpp"
#include "simulator/cli/sweep_run.hpp"

namespace clustersim::cli {

namespace {

struct SweepOptions {
  std::string scenario;
  std::vector<std::string> overrides, vary, vary_cluster;
  std::string top = "5", jobs = "2", prices, usd_per_kWh = "0.08", amortisation_years = "4";
  std::string json, csv, svg, report, keep_clusters, catalog;
  std::string slurm;                ///< --slurm DIR: verify every point as one Slurm job array over this folder
  std::vector<std::string> sbatch;  ///< --sbatch OPTION, passed to sbatch as given
  bool quiet = false;
};

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "search the best configuration on every cluster of a sweep, priced");
  cmd->add_option("scenario", o->scenario, "scenario YAML (its cluster is the sweep's starting point)")->required();
  cmd->add_option("--vary-cluster", o->vary_cluster,
                  "a cluster dimension and its values, NAME=V1,V2 (repeat for more): cluster, gpu, gpus_per_node, "
                  "nics_per_node, nic_Gbps, fabric, rails, oversubscription.N, radix.N, switches.N (N: the tier, 1 for the "
                  "leaves; switches.2: spines per pod)");
  cmd->add_option("--vary", o->vary, "configuration dimensions the search varies, as search's --vary (default: all)")->delimiter(',');
  cmd->add_option("--set", o->overrides, "override a field of the scenario first");
  cmd->add_option("--catalog", o->catalog, "the GPU catalog to read the cluster's GPU from (default: gpus.yaml beside the cluster file or above it)");
  cmd->add_option("--top", o->top, "configurations verified on the engine per point (default 5)");
  cmd->add_option("-j", o->jobs, "engine runs at a time, each in its own process (default 2)");
  cmd->add_option("--prices", o->prices, "price and power catalog (default scenarios/prices.yaml)");
  cmd->add_option("--usd-per-kWh", o->usd_per_kWh, "electricity price in USD per kWh (default 0.08)");
  cmd->add_option("--amortisation-years", o->amortisation_years, "years the capital cost is spread over (default 4)");
  cmd->add_option("--json", o->json, "write the points as JSON (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--csv", o->csv, "write the points as CSV");
  cmd->add_option("--svg", o->svg, "draw the Pareto front of tokens/s against capital cost as SVG");
  cmd->add_option("--report", o->report, "write a self-contained HTML report: the points, their Pareto front, each point's configurations");
  cmd->add_option("--keep-clusters", o->keep_clusters, "write each point's cluster file into this folder and keep it");
  cmd->add_option("--slurm", o->slurm,
                  "verify every point's best as one Slurm job array over this folder (shared by the nodes); rerun to resume");
  cmd->add_option("--sbatch", o->sbatch, "an option for sbatch with --slurm, e.g. --sbatch=--partition=gpu (repeatable)");
  cmd->add_flag("-q,--quiet", o->quiet, "no progress on stderr and, as for every command, no text report on stdout (--json, --csv and files are still written)")->disable_flag_override();
  cmd->callback([o] {
    std::vector<SweepDimension> dims;
    for (const std::string& text : o->vary_cluster) dims.push_back(parse_sweep_dimension(text));
    for (std::size_t i = 0; i < dims.size(); ++i)
      for (std::size_t k = 0; k < i; ++k)
        if (dims[i].name == dims[k].name)
          throw UserError("command line", 0, "--vary-cluster", "expected each dimension once; '" + dims[i].name + "' is given twice");
    const std::vector<std::string>& search_dims = search_dimensions();
    for (const std::string& d : o->vary)
      if (std::find(search_dims.begin(), search_dims.end(), d) == search_dims.end())
        throw UserError("command line", 0, "--vary", "expected dimensions from tp,pp,dp,cp,ep,vpp,microbatch,recompute,zero,schedule; got '" + d + "'");
    const std::vector<std::string> vary = o->vary.empty() ? search_dims : o->vary;
    const int top = static_cast<int>(parse_integer(o->top, "--top", 1, 10000));
    const int jobs = static_cast<int>(parse_integer(o->jobs, "-j", 1, 256));
    Economics econ;
    econ.usd_per_kWh = parse_number(o->usd_per_kWh, "--usd-per-kWh", 0, 10);
    econ.amortisation_years = parse_number(o->amortisation_years, "--amortisation-years", 0.1, 100);
    check_input_path(o->scenario, "scenario");
    if (!o->catalog.empty()) o->overrides.push_back(catalog_override(o->catalog));
    const std::string prices_file = o->prices.empty() ? shipped_file("scenarios/prices.yaml") : o->prices;
    check_input_path(prices_file, "--prices");
    const PriceCatalog catalog = named_by("--prices", prices_file, [&] { return load_price_catalog(prices_file, "--prices"); });
    if (!o->json.empty()) check_json_path(o->json);
    if (!o->csv.empty()) check_csv_path(o->csv, o->json);
    if (!o->svg.empty()) check_output_path(o->svg, "--svg");
    if (!o->report.empty()) check_output_path(o->report, "--report");
    check_slurm_options(o->slurm, o->sbatch);
    const ScenarioSpec base = named_by("scenario", o->scenario, [&] { return load_scenario(o->scenario, o->overrides); });

    SweepRequest request{o->scenario, o->overrides, dims, vary, top, jobs, o->keep_clusters, !o->quiet && progress_wanted(),
                         o->slurm, o->sbatch, o->quiet};
    const std::vector<SweepRow> rows = run_sweep(request, base, catalog);

    const std::string title = fmt::format("# clustersim sweep: {} ({} on {} GPUs; global batch {}); prices: {}", base.name,
                                          base.model.name, base.gpus(), base.global_batch, prices_file);
    nlohmann::ordered_json points_json = nlohmann::ordered_json::array();
    for (const SweepRow& r : rows) points_json.push_back(sweep_point_json(r, econ));
    write_csv(o->csv, points_json);
    if (!o->json.empty()) {
      nlohmann::ordered_json j = json_document("sweep", scenario_config_json(base));
      j["config"]["vary_cluster"] = nlohmann::ordered_json::object();
      for (const SweepDimension& d : dims) j["config"]["vary_cluster"][d.name] = d.values;
      j["config"]["vary"] = vary;
      j["config"]["top"] = top;
      j["config"]["jobs"] = jobs;
      j["config"]["prices"] = prices_file;
      j["config"]["usd_per_kWh"] = econ.usd_per_kWh;
      j["config"]["amortisation_years"] = econ.amortisation_years;
      j["scenario"] = base.name;
      j["points"] = points_json;
      j["pareto"] = nlohmann::ordered_json::array();
      for (const SweepRow& r : rows)
        if (r.on_front) j["pareto"].push_back(r.point.text());
      write_json(o->json, j);
    }
    if (!o->svg.empty()) write_file(o->svg, sweep_svg(base.name + ": tokens/s against capital cost", rows), "--svg");
    if (!o->report.empty()) write_file(o->report, sweep_report_page(base, o->vary_cluster, vary, prices_file, rows, econ), "--report");
    if (table_to_stdout(o->json, o->csv)) print_sweep_table(title, rows, econ);
  });
}

}  // namespace clustersim::cli
