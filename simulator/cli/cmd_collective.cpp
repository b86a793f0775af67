// `clustersim collective`: nccl-tests' table for one collective on a simulated cluster.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "collectives/algo_deepep.hpp"
#include "collectives/tuner_nccl.hpp"
#include "simulator/cli/commands.hpp"
#include "simulator/collective_sweep.hpp"
#include "simulator/nccl_tests_text.hpp"
#include "simulator/report_collective.hpp"
#include "workloads/calibration_file.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

namespace {

// Bounds that keep a sweep finite and quick: NCCL runs at most 64 channels (MAXCHANNELS); a
// table of more than 1024 sizes is no longer a table; and an all-to-all is n(n-1) flows.
constexpr long kMaxChannels = 64;
constexpr double kMaxSizes = 1024;
constexpr Bytes kMaxSizeBytes = Bytes{1} << 40;

struct Options {
  std::string cluster;
  std::vector<std::string> sets;  // --set cluster.PATH=VALUE
  std::string gpus;
  std::string op = "all_reduce";
  std::string algo = "best";
  std::string proto = "auto";
  std::string type = "float";
  std::string channels;
  std::string begin = "8", end = "8G";
  std::string factor = "2";
  std::string root = "0";
  bool root_given = false;
  std::string json, csv;
  std::string nccl_tests;
  std::string report;
  std::string calibration;
  std::string solver = "fluid";
};

SweepSpec make_spec(const Options& o, const Cluster& cluster) {
  SweepSpec spec;
  auto op = parse_op(o.op);
  std::string ops;
  for (Op each : all_ops()) ops += (ops.empty() ? "" : ", ") + std::string(to_string(each));
  if (!op) throw UserError("command line", 0, "--op", "expected one of: " + ops + "; got '" + o.op + "'");
  spec.op = *op;
  if (cluster.gpu_count() < 2)
    throw UserError(cluster.spec.file, 0, "--gpus",
                    fmt::format("expected a cluster of at least 2 GPUs for a collective; {} has {}", cluster.spec.name,
                                cluster.gpu_count()));
  const long asked = parse_integer(o.gpus, "--gpus", 1, std::numeric_limits<int>::max());
  if (asked < 2 || asked > cluster.gpu_count())
    throw UserError(cluster.spec.file, 0, "--gpus",
                    fmt::format("expected 2 to {} GPUs (the cluster has {}), got {}", cluster.gpu_count(),
                                cluster.gpu_count(), asked));
  const int gpus = static_cast<int>(asked);
  for (int g = 0; g < gpus; ++g) spec.ranks.push_back(g);
  if (spec.op == Op::all_to_all && static_cast<long>(gpus) * (gpus - 1) > kMaxAllToAllFlows)
    throw UserError("command line", 0, "--gpus",
                    fmt::format("expected at most {} GPUs for all_to_all: {} GPUs make {} transfers, more than the {} "
                                "routed in reasonable time",
                                max_all_to_all_ranks(), gpus, static_cast<long>(gpus) * (gpus - 1), kMaxAllToAllFlows));
  if (o.proto != "auto") {
    spec.protocol = find_protocol(o.proto);
    if (!spec.protocol) throw UserError("command line", 0, "--proto", "expected auto, LL, LL128, Simple or ideal; got '" + o.proto + "'");
  }
  if (!is_best_algorithm(o.algo) && o.algo != "nccl") {
    const Algorithm* a = find_algorithm(o.algo);
    if (!a)
      throw UserError("command line", 0, "--algo",
                      "expected best (alias auto), nccl or one of: " + algorithm_names() + "; got '" + o.algo + "'");
    CollectiveRequest probe;
    probe.op = spec.op;
    probe.ranks = spec.ranks;
    if (spec.protocol) probe.protocol = *spec.protocol;
    if (auto why = a->not_applicable(cluster, probe)) throw UserError(cluster.spec.file, 0, "--algo", *why);
  }
  spec.algorithm = o.algo;
  spec.every_algorithm = true;  // best tries the collective-only algorithms too (NVLS, PAT, ...)
  spec.compare_with_best = o.algo == "nccl";  // where NCCL's pick is not the fastest
  auto type = find_data_type(o.type);
  if (!type) throw UserError("command line", 0, "--dtype", "expected int8, uint8, half, bfloat16, float, int32, double or int64; got '" + o.type + "'");
  spec.type = *type;
  // NCCL opens about two channels per NIC on multi-NIC nodes; it is a knob (--channels).
  // deepep's channels are DeepEP's (two SMs each): 10 by default, its 20 SMs.
  spec.channels = !o.channels.empty() ? static_cast<int>(parse_integer(o.channels, "--channels", 1, kMaxChannels))
                  : o.algo == "deepep" ? DeepEpKernel{}.channels()
                                       : default_channels(cluster);
  // Fewer for small sizes, as NCCL (not DeepEP) chooses them; --channels pins them.
  spec.nccl_channels = o.channels.empty() && o.algo != "deepep";
  const double factor = parse_number(o.factor, "-f", 1, 1e6);
  const Bytes lo = parse_size(o.begin, "-b"), hi = parse_size(o.end, "-e");
  if (lo < 1) throw UserError("command line", 0, "-b", "expected a size of at least 1 byte, got '" + o.begin + "'");
  if (hi > kMaxSizeBytes) throw UserError("command line", 0, "-e", "expected a size up to 1024G, got '" + o.end + "'");
  if (hi < lo) throw UserError("command line", 0, "-e", "expected a maximum size >= the minimum (-b)");
  const double steps = factor > 1 ? std::floor(std::log(double(hi) / double(lo)) / std::log(factor)) + 1 : 1;
  if (steps > kMaxSizes)
    throw UserError("command line", 0, "-f",
                    fmt::format("expected a factor that gives at most {} sizes from -b to -e; {} gives {}", kMaxSizes,
                                o.factor, steps));
  if (factor == 1 && hi > lo)
    throw UserError("command line", 0, "-f", "expected a factor > 1 to step from -b to -e (or -b equal to -e)");
  spec.sizes_bytes = geometric_sizes(lo, hi, factor);
  spec.root = static_cast<int>(parse_integer(o.root, "--root", 0, gpus - 1));
  // Only a broadcast has a root; another op would leave the rank unread.
  if (spec.op != Op::broadcast && o.root_given)
    throw UserError("command line", 0, "--root", "expected --root only with --op broadcast (" + std::string(to_string(spec.op)) + " has no root)");
  if (o.algo == "nccl") {
    // NCCL's tuner chooses among its own protocols; whether one is left does not depend on size.
    const CollectiveRequest probe{spec.op, spec.ranks, spec.sizes_bytes.front(), spec.channels, Protocol{}, spec.root};
    if (!nccl_choose(cluster, probe, spec.protocol, false))
      throw UserError("command line", 0, "--proto",
                      fmt::format("expected a protocol NCCL's tuner runs {} with here (auto, or {}); got '{}'", o.op,
                                  spec.op == Op::all_to_all || spec.op == Op::send_recv ? "Simple" : "LL, LL128, Simple",
                                  o.proto));
  }
  return spec;
}

/// How much slower NCCL's pick ran than the best simulated pair (0 where it is the best).
double nccl_slowdown(const SweepRow& r) {
  return r.best && r.best->time_s > 0 ? r.time_s / r.best->time_s - 1 : 0.0;
}

bool nccl_differs(const SweepRow& r) {
  return r.best && (r.best->algorithm != r.algorithm || r.best->protocol != r.protocol);
}

/// The tuner's estimate, and the best simulated pair where it is not NCCL's pick.
std::string nccl_note(const SweepRow& r) {
  if (!r.best) return "";
  std::string out = r.nccl_predicted_s ? fmt::format("  predicted {:.2f} us", *r.nccl_predicted_s * 1e6) : "  predicted -";
  if (nccl_differs(r))
    out += fmt::format("  best {}/{} {:.2f} us: nccl {:+.1f}%", r.best->algorithm, r.best->protocol, r.best->time_s * 1e6,
                       100 * nccl_slowdown(r));
  return out;
}

std::string nccl_summary(const std::vector<SweepRow>& rows) {
  int differ = 0;
  const SweepRow* worst = nullptr;
  for (const SweepRow& r : rows) {
    if (!nccl_differs(r)) continue;
    ++differ;
    if (!worst || nccl_slowdown(r) > nccl_slowdown(*worst)) worst = &r;
  }
  if (!worst) return fmt::format("# nccl vs best: NCCL's pick is the fastest simulated at all {} sizes\n", rows.size());
  return fmt::format("# nccl vs best: another pair is faster at {} of {} sizes; at most {:.1f}% ({} B: {}/{} over {}/{})\n",
                     differ, rows.size(), 100 * nccl_slowdown(*worst), worst->size_bytes, worst->best->algorithm,
                     worst->best->protocol, worst->algorithm, worst->protocol);
}

void print_table(const Options& o, const Cluster& cluster, const SweepSpec& spec, const std::vector<SweepRow>& rows) {
  std::cout << fmt::format("# clustersim collective: {} on {} GPUs of {} ({}), algo {}, {}{} channels\n", o.op,
                           spec.ranks.size(), cluster.spec.name, cluster.spec.fabric.type, o.algo,
                           spec.nccl_channels ? "up to " : "", spec.channels);
  if (spec.algorithm == "nccl")
    std::cout << fmt::format("# nccl: NCCL 2.30.7's tuner ({} row of src/graph/tuning.cc) picks each size's algorithm, protocol "
                             "and channels; 'predicted' is its own estimate, 'best' the fastest simulated pair where it "
                             "is not NCCL's\n",
                             to_string(gpu_generation(cluster.spec.gpu)));
  std::cout << "#\n";
  // deepep also prints the bandwidths DeepEP's benchmark prints, counted its way.
  const bool deepep = !rows.empty() && rows.front().deepep_nvl_GBps.has_value();
  if (deepep)
    std::cout << "# deepep: size = each rank's tokens (DeepEP's routing: top-8 of 256 experts, at most 4 nodes a token); "
                 "rdma, nvl = DeepEP's count (test_internode.py): (token, node) pairs incl. its own node, and tokens "
                 "received, x token bytes / time\n";
  const std::string extra_head = deepep ? fmt::format(" {:>8} {:>8}", "rdma", "nvl") : "";
  const std::string extra_unit = deepep ? fmt::format(" {:>8} {:>8}", "(GB/s)", "(GB/s)") : "";
  std::cout << fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}{}  {}\n", "size", "count", "type",
                           "redop", "root", "time", "algbw", "busbw", extra_head, "algorithm");
  std::cout << fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}{}\n", "(B)", "(elements)", "", "", "",
                           "(us)", "(GB/s)", "(GB/s)", extra_unit);
  const bool reduces = spec.op == Op::all_reduce || spec.op == Op::reduce_scatter;
  const int root = spec.op == Op::broadcast ? spec.root : -1;
  double busbw_sum = 0;
  for (const SweepRow& r : rows) {
    const std::string extra =
        deepep ? fmt::format(" {:>8} {:>8.2f}", r.deepep_rdma_GBps ? fmt::format("{:.2f}", *r.deepep_rdma_GBps) : "-",
                             r.deepep_nvl_GBps.value_or(0))
               : "";
    std::cout << fmt::format("  {:>10} {:>12} {:>8} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f}{}  {}/{}{}\n", r.size_bytes,
                             r.count, spec.type.name, reduces ? "sum" : "none", root, r.time_s * 1e6, r.algbw_GBps,
                             r.busbw_GBps, extra, r.algorithm, r.protocol, nccl_note(r));
    busbw_sum += r.busbw_GBps;
  }
  std::cout << fmt::format("# Avg bus bandwidth    : {:.3f}\n", rows.empty() ? 0.0 : busbw_sum / rows.size());
  if (spec.algorithm == "nccl") std::cout << nccl_summary(rows);
}

nlohmann::ordered_json to_json(const Options& o, const Cluster& cluster, const SweepSpec& spec, const std::vector<SweepRow>& rows) {
  // The options as resolved: defaults filled in, sizes in bytes.
  nlohmann::ordered_json j = json_document("collective", {{"cluster", cluster.spec.name},
                 {"cluster_file", o.cluster},
                 {"cluster_overrides", o.sets},
                 {"gpus", spec.ranks.size()},
                 {"op", o.op},
                 {"algorithm", o.algo},
                 {"protocol", o.proto},
                 {"type", spec.type.name},
                 {"channels", spec.channels},
                 {"min_bytes", spec.sizes_bytes.empty() ? 0 : spec.sizes_bytes.front()},
                 {"max_bytes", spec.sizes_bytes.empty() ? 0 : spec.sizes_bytes.back()},
                 {"step_factor", parse_number(o.factor, "-f", 1, 1e6)},
                 {"root", spec.root},
                 {"solver", o.solver},
                 {"calibration", o.calibration.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.calibration)}});
  j["cluster"] = cluster.spec.name;
  j["op"] = o.op;
  j["gpus"] = spec.ranks.size();
  j["algorithm"] = o.algo;
  j["channels"] = spec.channels;
  j["type"] = spec.type.name;
  j["rows"] = nlohmann::ordered_json::array();
  for (const SweepRow& r : rows) {
    nlohmann::ordered_json row{{"size_bytes", r.size_bytes},   {"count", r.count},
                               {"time_us", r.time_s * 1e6},    {"algbw_GBps", r.algbw_GBps},
                               {"busbw_GBps", r.busbw_GBps},   {"algorithm", r.algorithm},
                               {"protocol", r.protocol},       {"channels", r.channels}};
    if (r.deepep_nvl_GBps) row["deepep_nvl_GBps"] = *r.deepep_nvl_GBps;
    if (r.best) {
      row["nccl_predicted_us"] = r.nccl_predicted_s ? nlohmann::ordered_json(*r.nccl_predicted_s * 1e6) : nlohmann::ordered_json();
      row["best_algorithm"] = r.best->algorithm;
      row["best_protocol"] = r.best->protocol;
      row["best_channels"] = r.best->channels;
      row["best_time_us"] = r.best->time_s * 1e6;
      row["nccl_slowdown"] = nccl_slowdown(r);
    }
    if (r.deepep_rdma_GBps) row["deepep_rdma_GBps"] = *r.deepep_rdma_GBps;
    j["rows"].push_back(std::move(row));
  }
  return j;
}

/// The page: the sweep, and the link tiers of its largest size replayed once more with the
/// algorithm and protocol it chose, its bytes recorded.
std::string report_of(const Options& o, const Cluster& cluster, const SweepSpec& spec, const std::vector<SweepRow>& rows,
                      FabricEngine& engine, const Router& router) {
  CollectiveReport r;
  r.title = fmt::format("clustersim collective: {} on {} GPUs of {}", o.op, spec.ranks.size(), cluster.spec.name);
  r.facts = {{"cluster", fmt::format("{} ({}, {})", cluster.spec.name, cluster.spec.fabric.type, o.cluster)},
             {"collective", fmt::format("{} on the first {} GPUs, {} channels, type {}", o.op, spec.ranks.size(),
                                        spec.channels, spec.type.name)},
             {"algorithm", o.algo + ", protocol " + o.proto}};
  r.rows = rows;
  if (!rows.empty()) {
    const SweepRow& last = rows.back();
    const CollectiveRequest req{spec.op, spec.ranks, last.size_bytes, spec.channels, *find_protocol(last.protocol), spec.root};
    engine.record_link_bytes(true);
    const Seconds t = time_collective(engine, router, *find_algorithm(last.algorithm), req);
    r.largest_link_tiers = link_tier_loads(cluster, engine.last_link_bytes(), t);
    r.link_note = fmt::format("Bytes each tier carried while {} ({}/{}, {:.2f} us) ran alone, over what its links carry in "
                              "that time (both directions).",
                              size_text(last.size_bytes), last.algorithm, last.protocol, t * 1e6);
  }
  return collective_report_html(r);
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("collective", "nccl-tests-style bandwidth table for one collective");
  cmd->add_option("--cluster", o->cluster, "cluster YAML file")->required();
  cmd->add_option("--set", o->sets, "change a field of the cluster file: --set cluster.fabric.tiers.0.oversubscription=2 (repeatable)");
  cmd->add_option("--gpus,-g", o->gpus, "number of GPUs (the cluster's first N)")->required();
  cmd->add_option("--op", o->op, "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv");
  cmd->add_option("--algo", o->algo,
                  "best (the default, alias auto: simulate every algorithm and protocol, keep the fastest), nccl "
                  "(NCCL's tuner picks; the best is shown beside it), or an algorithm (see `clustersim list`)");
  cmd->add_option("--proto", o->proto, "LL, LL128, Simple, ideal, or auto");
  cmd->add_option("--dtype,-d", o->type, "element type (float)");
  cmd->add_option("--channels", o->channels, "channels, 1 to 64 (default: up to 2 per NIC, fewer for small sizes as NCCL chooses; deepep: 10, two SMs each)");
  cmd->add_option("-b,--minbytes", o->begin, "smallest size (8)");
  cmd->add_option("-e,--maxbytes", o->end, "largest size (8G)");
  cmd->add_option("-f,--stepfactor", o->factor, "size multiplication factor (2)");
  CLI::Option* root = cmd->add_option("--root", o->root, "broadcast root rank (0)");
  cmd->add_option("--json", o->json, "also write the rows as JSON to this file (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--csv", o->csv, "also write the rows as CSV, JSON's field names (- or /dev/stdout: to stdout, without the table)");
  cmd->add_option("--calibration", o->calibration, "a calibration file (clustersim calibrate) whose link efficiencies replace the cluster's");
  cmd->add_option("--report", o->report, "write a self-contained HTML report: bandwidth against size, link tiers");
  cmd->add_option("--nccl-tests", o->nccl_tests, "also write the rows as nccl-tests prints them (synthetic input for calibrate)");
  cmd->add_option("--solver", o->solver, "max-min solver: fluid (the default), simgrid or simgrid-full");
  cmd->callback([o, root] {
    o->root_given = root->count() > 0;
    const Solver solver = parse_solver(o->solver);
    ClusterSpec cluster_spec = load_cluster_with_sets(o->cluster, "--cluster", o->sets);
    if (!o->calibration.empty()) {
      check_input_path(o->calibration, "--calibration");
      apply_link_calibration(load_calibration(o->calibration, "--calibration"), cluster_spec);
    }
    const Cluster cluster = build_cluster(cluster_spec);
    const SweepSpec spec = make_spec(*o, cluster);
    if (!o->json.empty()) check_json_path(o->json);
    check_csv_path(o->csv, o->json);
    if (!o->nccl_tests.empty()) check_output_path(o->nccl_tests, "--nccl-tests");
    if (!o->report.empty()) check_output_path(o->report, "--report");
    const Router router(cluster);
    FabricEngine engine(cluster, solver);
    const std::vector<SweepRow> rows = run_sweep(engine, router, spec);
    if (table_to_stdout(o->json, o->csv)) print_table(*o, cluster, spec, rows);
    if (!o->csv.empty()) write_csv(o->csv, to_json(*o, cluster, spec, rows)["rows"]);
    if (!o->json.empty()) write_json(o->json, to_json(*o, cluster, spec, rows));
    if (!o->nccl_tests.empty())
      write_file(o->nccl_tests,
                 nccl_tests_text(spec, rows,
                                 "clustersim collective --op " + o->op + " on the first " + std::to_string(spec.ranks.size()) +
                                     " GPUs of " + cluster.spec.name + " (" + o->cluster + "), algo " + o->algo +
                                     (o->calibration.empty() ? "" : ", link efficiencies from " + o->calibration)),
                 "--nccl-tests");
    if (!o->report.empty()) write_file(o->report, report_of(*o, cluster, spec, rows, engine, router), "--report");
  });
}

}  // namespace clustersim::cli
