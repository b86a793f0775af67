// `clustersim bench`: how fast the simulator goes. The default mode times one large collective per
// GPU count (bench_collective.cpp); --scenarios, --fabric-only, --search, --sweep, --goodput and
// --serve time the other commands' work (bench_modes.hpp). Every mode prints a table and takes
// --json and --csv, written here the same way for all.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <tuple>
#include <utility>

#include "simulator/cli/bench_modes.hpp"
#include "simulator/cli/commands.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

constexpr const char* kDefaultCluster = "scenarios/clusters/dgx-h100-superpod-16k.yaml";

struct BenchOptions {
  std::vector<std::string> scenarios, sets;
  std::string cluster = kDefaultCluster;
  std::vector<std::string> gpu_counts{"256", "1024", "4096"};
  std::string gpus;  // one count, as --gpus is on every other command
  std::string size;  // 1G all-reduce, 64M all-to-all
  std::string algo;  // ring all-reduce, direct all-to-all
  std::string repeat = "5";
  bool all_to_all = false;
  std::string op = "all_reduce";
  bool one_gpu_per_node = false;
  std::vector<std::string> routings{"uniform", "skewed"};
  std::string fold = "assume";
  bool per_pair = false;  // all-to-all as one flow per pair, the reference the per-link sum is checked against
  bool fabric_only = false;
  std::vector<std::string> search;
  std::string sweep;
  std::string json, csv;
  std::string goodput;
  bool serve = false;
  std::string trials = "1000";
};

/// The GPU counts of the collective mode: --gpus N (one count) or --gpu-counts A,B,... (a list).
std::pair<std::vector<int>, std::string> gpu_counts(const BenchOptions& o, bool counts_given) {
  if (!o.gpus.empty()) {
    if (counts_given) throw UserError("command line", 0, "--gpus", "expected either --gpus N (one count) or --gpu-counts A,B,... (a list)");
    if (o.gpus.find(',') != std::string::npos)
      throw UserError("command line", 0, "--gpus",
                      "expected one GPU count, as on every command; bench's list of counts is --gpu-counts " + o.gpus);
    return {{static_cast<int>(parse_integer(o.gpus, "--gpus", 1, std::numeric_limits<int>::max()))}, "--gpus"};
  }
  std::vector<int> out;
  for (const std::string& g : o.gpu_counts)
    out.push_back(static_cast<int>(parse_integer(g, "--gpu-counts", 1, std::numeric_limits<int>::max())));
  return {out, "--gpu-counts"};
}

/// An option bench reads only in some modes: given in another, it would go unread.
struct ModeOption {
  const CLI::Option* option;
  std::vector<std::string> modes;  // where it is read
};

/// Refuses an option the chosen mode does not read (one line, exit 2), naming the modes that do.
void check_mode_options(const std::vector<ModeOption>& options, const std::string& mode) {
  for (const ModeOption& m : options) {
    if (m.option->count() == 0 || std::find(m.modes.begin(), m.modes.end(), mode) != m.modes.end()) continue;
    std::string where;
    for (std::size_t k = 0; k < m.modes.size(); ++k)
      where += (k == 0 ? "" : k + 1 == m.modes.size() ? " or " : ", ") + (m.modes[k] == "collective" ? std::string("the collective bench") : "--" + m.modes[k]);
    const std::string shown = mode == "collective" ? "the collective bench" : "--" + mode;
    throw UserError("command line", 0, m.option->get_name(), "expected it only with " + where + ": " + shown + " does not read it");
  }
}

void write_outputs(const BenchOptions& o, const BenchResult& r) {
  if (!o.json.empty()) {
    nlohmann::ordered_json j = json_header("bench");
    j["mode"] = r.mode;
    j["config"] = r.config;
    if (!r.totals.empty()) j["totals"] = r.totals;
    j["rows"] = r.rows;
    write_json(o.json, j);
  }
  write_csv(o.csv, r.rows);
  if (table_to_stdout(o.json, o.csv)) std::cout << r.table;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "how fast the simulator goes: one large collective per GPU count, or another command's work");
  const std::vector<std::string> collective{"collective"};
  std::vector<ModeOption> mode_options;
  mode_options.push_back({cmd->add_option("--cluster", o->cluster, "cluster YAML (default: the 16K-GPU H100 SuperPOD)"), {"collective", "fabric-only"}});
  CLI::Option* counts = cmd->add_option("--gpu-counts", o->gpu_counts, "GPU counts, one case each (256,1024,4096)")->delimiter(',');
  mode_options.push_back({counts, collective});
  mode_options.push_back({cmd->add_option("--gpus", o->gpus, "one GPU count (the list is --gpu-counts)"), collective});
  mode_options.push_back({cmd->add_option("--size", o->size, "all-reduce size (1G), or each rank's all-to-all send buffer (64M)"), collective});
  mode_options.push_back({cmd->add_option("--algo", o->algo, "all-reduce algorithm (ring), or all-to-all algorithm (direct)"), collective});
  mode_options.push_back({cmd->add_option("--repeat", o->repeat, "runs per case; the median is reported (5)"),
                          {"collective", "search", "sweep", "goodput", "serve"}});
  mode_options.push_back({cmd->add_flag("--all-to-all", o->all_to_all, "time an all-to-all instead of an all-reduce"), collective});
  mode_options.push_back({cmd->add_option("--op", o->op, "the collective when not --all-to-all: all_reduce (default), all_gather or reduce_scatter"), collective});
  mode_options.push_back({cmd->add_flag("--one-gpu-per-node", o->one_gpu_per_node, "rank k is the first GPU of node k (PAT's setting); the counts are nodes"), collective});
  mode_options.push_back({cmd->add_option("--routing", o->routings, "all-to-all traffic: uniform, skewed (both)")->delimiter(','), collective});
  mode_options.push_back({cmd->add_flag("--per-pair", o->per_pair, "all-to-all as one flow per pair, PAT as one flow per send, instead of summed per link"), collective});
  cmd->add_option("--set", o->sets,
                  "override a field first: cluster.PATH=VALUE for the --cluster; any scenario key for --scenarios, --search, "
                  "--sweep, --goodput; serving keys for --serve (repeatable)");
  cmd->add_option("--scenarios", o->scenarios, "time one training iteration of each scenario instead")->delimiter(',');
  mode_options.push_back({cmd->add_option("--fold", o->fold, "with --scenarios: how replicas fold, as in run (assume)"), {"scenarios"}});
  cmd->add_flag("--fabric-only", o->fabric_only, "time building and routing the --cluster instead of a collective");
  cmd->add_option("--search", o->search, "time search's screen over each scenario's whole space instead")->delimiter(',');
  cmd->add_option("--sweep", o->sweep, "time a small sweep of this scenario (4 cluster points) instead");
  cmd->add_option("--goodput", o->goodput, "time the goodput Monte-Carlo of this scenario over 54 days instead");
  mode_options.push_back({cmd->add_option("--trials", o->trials, "with --goodput: Monte-Carlo trials (1000)"), {"goodput"}});
  cmd->add_flag("--serve", o->serve, "time serve: 1 h at 10 req/s on one 8-GPU replica, and 1,000 replicas for 10 min, instead");
  cmd->add_option("--json", o->json, "also write the timings as JSON (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--csv", o->csv, "also write the timings as CSV (- or /dev/stdout: to stdout, without the table)");
  cmd->callback([o, counts, mode_options] {
    const int modes = !o->scenarios.empty() + o->fabric_only + !o->search.empty() + !o->sweep.empty() + !o->goodput.empty() + o->serve;
    if (modes > 1)
      throw UserError("command line", 0, "bench",
                      "expected one of --scenarios, --fabric-only, --search, --sweep, --goodput and --serve (each is a bench of its own)");
    const std::string mode = o->serve               ? "serve"
                             : !o->search.empty()   ? "search"
                             : !o->sweep.empty()    ? "sweep"
                             : !o->goodput.empty()  ? "goodput"
                             : !o->scenarios.empty() ? "scenarios"
                             : o->fabric_only       ? "fabric-only"
                                                    : "collective";
    check_mode_options(mode_options, mode);
    const long repeat = parse_integer(o->repeat, "--repeat", 1, 1000);
    if (!o->json.empty()) check_json_path(o->json);  // before any timing
    check_csv_path(o->csv, o->json);
    if (o->serve) return write_outputs(*o, bench_serve(o->sets, repeat));
    if (!o->search.empty()) return write_outputs(*o, bench_search(o->search, o->sets, repeat));
    if (!o->sweep.empty()) return write_outputs(*o, bench_sweep(o->sweep, o->sets, repeat));
    if (!o->goodput.empty())
      return write_outputs(*o, bench_goodput(o->goodput, o->sets, parse_integer(o->trials, "--trials", 1, 10'000'000), repeat));
    if (!o->scenarios.empty()) return write_outputs(*o, bench_scenarios(o->scenarios, o->sets, parse_fold(o->fold)));
    if (o->cluster == kDefaultCluster) o->cluster = shipped_file(kDefaultCluster);  // from any directory
    if (o->fabric_only) return write_outputs(*o, bench_fabric(o->cluster, o->sets));
    CollectiveBench b;
    b.cluster = o->cluster;
    b.sets = o->sets;
    std::tie(b.gpu_counts, b.gpu_counts_option) = gpu_counts(*o, counts->count() > 0);
    b.size = o->size;
    b.algo = o->algo;
    b.all_to_all = o->all_to_all;
    b.op = o->op;
    b.one_gpu_per_node = o->one_gpu_per_node;
    b.per_pair = o->per_pair;
    b.routings = o->routings;
    write_outputs(*o, bench_collective(b, repeat));
  });
}

}  // namespace clustersim::cli
