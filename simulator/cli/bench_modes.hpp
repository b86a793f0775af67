#pragma once
// `clustersim bench`'s modes, one file each (bench_*.cpp; goodput's and serve's beside their
// commands). Each hands back what it timed as a BenchResult - the rows, with the --json and --csv
// field names, and the text table - and cmd_bench.cpp writes every mode's output the same way:
// --json (one document per mode, simulator/schemas/bench.schema.json), --csv, the table.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "workloads/iteration_plan.hpp"

namespace clustersim::cli {

struct BenchResult {
  std::string mode;  // collective, scenarios, fabric, search, sweep, goodput or serve: the --json "mode"
  nlohmann::ordered_json config = nlohmann::ordered_json::object();  // what was timed, as resolved
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();     // one per table row
  nlohmann::ordered_json totals = nlohmann::ordered_json::object();  // figures of the whole run (sweep); may be empty
  std::string table;                                                 // the text table, as printed
};

/// The default mode: one collective per GPU count, each in its own process.
struct CollectiveBench {
  std::string cluster;                // the cluster file
  std::vector<std::string> sets;      // --set cluster.PATH=VALUE, applied to it
  std::vector<int> gpu_counts;        // the cases
  std::string gpu_counts_option;      // the option that gave them, for errors (--gpu-counts or --gpus)
  std::string size, algo;             // empty: 1G ring all-reduce, 64M direct all-to-all
  bool all_to_all = false;
  std::string op = "all_reduce";      // without all_to_all: all_reduce, all_gather or reduce_scatter
  bool one_gpu_per_node = false;      // ranks: the first GPU of each of gpu_counts nodes (PAT's setting)
  bool per_pair = false;              // all-to-all as one flow per pair, the reference the per-link sum is checked against
  std::vector<std::string> routings;  // all-to-all traffic: uniform, skewed
};
BenchResult bench_collective(CollectiveBench bench, long repeat);

/// --scenarios: one training iteration of each scenario (after `sets`), each in its own process:
/// wall time (load + plan + simulate) and peak memory.
BenchResult bench_scenarios(const std::vector<std::string>& scenarios, const std::vector<std::string>& sets, FoldMode fold);

/// --fabric-only: builds the cluster, then routes two transfers per GPU - to the same local rank of
/// the next node (a data-parallel ring's hop) and to the next local rank of the node half the
/// cluster away (another rail, across the top tier): build (reading the file, `sets` applied, the
/// graph) and routing wall and CPU times, peak memory.
BenchResult bench_fabric(const std::string& cluster_path, const std::vector<std::string>& sets);

/// --search: screens every configuration of each scenario (every --vary dimension) `repeat` times,
/// each in a fresh Screen (its per-layer caches empty): median wall and CPU time, configurations
/// per second of one core (by CPU time).
BenchResult bench_search(const std::vector<std::string>& scenarios, const std::vector<std::string>& sets, long repeat);

/// --sweep: a small sweep end to end (four cluster points: NIC speed x leaf oversubscription;
/// search over pp and microbatch, the best 2 verified on the engine, 2 at a time), `repeat` times:
/// the median wall time, its points and what each cost.
BenchResult bench_sweep(const std::string& scenario, const std::vector<std::string>& sets, long repeat);

/// --goodput: the 54-day Monte-Carlo of a scenario's goodput, `trials` trials, timed `repeat` times (cmd_goodput.cpp).
BenchResult bench_goodput(const std::string& scenario, const std::vector<std::string>& sets, long trials, long repeat);

/// --serve: issue 19's serving speed cases, each timed `repeat` times (bench_serve.cpp).
BenchResult bench_serve(const std::vector<std::string>& sets, long repeat);

}  // namespace clustersim::cli
