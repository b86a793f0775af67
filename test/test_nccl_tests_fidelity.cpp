// Bus bandwidth against published nccl-tests all_reduce_perf and all_gather_perf points on H100, H200,
// H800 and B200 systems (scenarios/validation/nccl-tests/all-reduce-busbw.yaml and all-gather-busbw.yaml,
// each row with its source, each file its op). Every row runs
// as `clustersim collective` runs it: the row's cluster (and --set cluster.* lines), GPUs 0..n-1,
// NCCL's channel count for the size, and NCCL's tuner's pick (`--algo nccl`) or the algorithm the
// source forced. Nothing was fitted on these rows (the file says what was calibrated, and where).
#include <catch2/catch.hpp>

#include <cmath>

#include "collectives/collective.hpp"
#include "collectives/tuner_nccl.hpp"
#include "simulator/collective_sweep.hpp"
#include "simulator/engine.hpp"
#include "support.hpp"
#include "topologies/cluster_overrides.hpp"
#include "topologies/yaml_reader.hpp"

using namespace clustersim;

namespace {

constexpr double kTolerance = 0.05;  // the bar

struct Result {
  double busbw_GBps;
  std::string algorithm;
};

Result simulate(const YamlField& row, Op op) {
  std::vector<std::string> sets;
  if (auto s = row.find("set"))
    for (std::size_t i = 0; i < s->size(); ++i) sets.push_back("cluster." + s->element(i).as_string());
  const Cluster cluster = build_cluster(
      load_cluster_spec_with(test::source_path("scenarios/clusters/" + row.child("cluster").as_string()), sets));
  const Router router(cluster);
  FabricEngine engine(cluster);
  CollectiveRequest req;
  req.op = op;
  for (long g = 0; g < row.child("gpus").as_integer(); ++g) req.ranks.push_back(static_cast<int>(g));
  req.size_bytes = static_cast<Bytes>(row.child("size_bytes").as_integer());
  req.channels = default_channels(cluster);
  const std::string algorithm = row.child("algorithm").as_string();
  SweepRow r;
  if (algorithm == "nccl") {
    r = nccl_collective(engine, router, req, std::nullopt, true);
  } else {
    const Algorithm& a = *find_algorithm(algorithm);
    req.protocol = *find_protocol("Simple");
    req.channels = nccl_channels_for_size(a, req.protocol, req.size_bytes, static_cast<int>(req.ranks.size()), req.channels);
    REQUIRE_FALSE(a.not_applicable(cluster, req));
    r.time_s = time_collective(engine, router, a, req);
    r.algorithm = algorithm;
    r.busbw_GBps = static_cast<double>(req.size_bytes) / r.time_s / 1e9 *
                   bus_bandwidth_factor(op, static_cast<int>(req.ranks.size()));
  }
  return {r.busbw_GBps, r.algorithm};
}

struct Tally {
  int within = 0, misses = 0;
};

/// Runs every row of one file (its op: the file's `op`) and counts those within 5% and the named misses.
Tally check_file(const std::string& path, Op op) {
  const YamlField file = YamlField::load_file(test::source_path(path), "nccl-tests");
  file.expect_keys({"op", "rows"});
  REQUIRE(file.child("op").as_string() == to_string(op));
  const YamlField rows = file.child("rows");
  Tally tally;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const YamlField row = rows.element(i);
    row.expect_keys({"name", "cluster", "set", "gpus", "algorithm", "size_bytes", "published_busbw_GBps", "source", "known_miss"});
    REQUIRE(row.child("source").as_string().size() > 20);
    const double published = row.child("published_busbw_GBps").as_number_in(1, 2000, "GB/s");
    const Result ours = simulate(row, op);
    const double error = test::relative_error(ours.busbw_GBps, published);
    INFO(row.child("name").as_string() << ": published " << published << " GB/s, ours " << ours.busbw_GBps << " GB/s ("
                                       << ours.algorithm << "), error " << 100 * (ours.busbw_GBps / published - 1) << "%");
    if (row.find("known_miss")) {
      CHECK(error >= kTolerance);  // a miss the model fixes loses its note
      ++tally.misses;
    } else {
      CHECK(error < kTolerance);
      ++tally.within;
    }
  }
  return tally;
}

}  // namespace

TEST_CASE("all-reduce bus bandwidth is within 5% of published nccl-tests points, but for the misses named") {
  const Tally t = check_file("scenarios/validation/nccl-tests/all-reduce-busbw.yaml", Op::all_reduce);
  CHECK(t.within >= 8);
  CHECK(t.misses * 3 <= t.within + t.misses);  // named misses stay the exception: a third of the rows at most
}

TEST_CASE("all-gather bus bandwidth is within 5% of published nccl-tests points, but for the misses named") {
  const Tally t = check_file("scenarios/validation/nccl-tests/all-gather-busbw.yaml", Op::all_gather);
  CHECK(t.within >= 7);
  CHECK(t.misses * 3 <= t.within + t.misses);
}
