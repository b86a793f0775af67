#pragma once
// nccl-tests on a simulated cluster: one collective over a range of sizes, each size timed by the
// engine, with algbw and busbw as nccl-tests defines them. "best" (alias "auto") tries every
// applicable (algorithm, protocol) pair per size and keeps the fastest; "nccl" runs what NCCL's
// tuner picks from its cost model (collectives/tuner_nccl.hpp) and, on request, the best beside it.
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "simulator/engine.hpp"

namespace clustersim {

struct DataType {
  std::string name;
  Bytes size_bytes;
};
std::optional<DataType> find_data_type(const std::string& name);

struct SweepSpec {
  Op op = Op::all_reduce;
  std::vector<int> ranks;
  std::string algorithm = "best";          // a registered name, "best" (alias "auto") or "nccl"
  /// "best" also tries the algorithms a training iteration leaves out (Algorithm::in_iteration_auto):
  /// `clustersim collective` sets it; an iteration's SweepSpec keeps the default.
  bool every_algorithm = false;
  /// `channels` is the most: ring and tree run on fewer for small sizes, as NCCL chooses them
  /// (nccl_channels_for_size). Set by `collective` when --channels is not given.
  bool nccl_channels = false;
  std::optional<Protocol> protocol;        // nullopt: try LL, LL128 and Simple
  /// "nccl": also simulate every applicable pair per size (as "best") to show where NCCL's pick is
  /// not the fastest.
  bool compare_with_best = false;
  int channels = 1;
  DataType type{"float", 4};
  std::vector<Bytes> sizes_bytes;
  int root = 0;
};

struct SweepRow {
  Bytes size_bytes = 0;
  Bytes count = 0;
  Seconds time_s = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::string algorithm;
  std::string protocol;
  /// deepep only: the bandwidths DeepEP's benchmark prints (collectives/algo_deepep.hpp,
  /// deepep_counted_bytes); RDMA only across nodes.
  std::optional<double> deepep_rdma_GBps, deepep_nvl_GBps;
  int channels = 0;  // the winner's
  /// "nccl" only: NCCL's own estimate of its pick (none for all-to-all and send/recv) and, with
  /// compare_with_best, the fastest simulated pair.
  std::optional<Seconds> nccl_predicted_s;
  struct Best {
    std::string algorithm, protocol;
    int channels = 0;
    Seconds time_s = 0;
  };
  std::optional<Best> best;
};

inline bool is_best_algorithm(const std::string& name) { return name == "best" || name == "auto"; }

/// nccl-tests' size list: min, min*factor, ... up to max (factor 1 with step: not supported).
std::vector<Bytes> geometric_sizes(Bytes min_bytes, Bytes max_bytes, double factor);
/// Rounds a size down to what the op can split evenly (a multiple of type size, times ranks where
/// the buffer is per rank), as nccl-tests does.
Bytes aligned_size(Op op, Bytes size_bytes, Bytes type_bytes, int ranks);

/// Channels when the user names none: about two per NIC on multi-NIC nodes, as NCCL opens them
/// (2 to 64, NCCL's MAXCHANNELS).
int default_channels(const Cluster& cluster);

/// Times one request with one algorithm.
Seconds time_collective(FabricEngine& engine, const Router& router, const Algorithm& algorithm,
                        const CollectiveRequest& request);

/// Algorithms that can run `op` on `cluster` (the named one, or all applicable for "best", less
/// those kept out of iterations unless spec.every_algorithm).
std::vector<const Algorithm*> candidate_algorithms(const Cluster& cluster, const SweepSpec& spec);

/// The fastest applicable (algorithm, protocol) pair for one size: what `--algo auto` reports.
/// With `nccl_channels`, each pair runs on nccl_channels_for_size(request.channels) channels.
SweepRow best_collective(FabricEngine& engine, const Router& router, const std::vector<const Algorithm*>& algorithms,
                         const std::vector<Protocol>& protocols, const CollectiveRequest& request,
                         bool nccl_channels = false);

/// The protocol a row ran: NCCL's, by name, or an algorithm's own kernel (ideal, named as the row
/// names it).
Protocol row_protocol(const SweepRow& row);

/// NCCL's pick for one size (nccl_choose), simulated; `only` limits it to one protocol.
SweepRow nccl_collective(FabricEngine& engine, const Router& router, const CollectiveRequest& request,
                         const std::optional<Protocol>& only, bool nccl_channels);

std::vector<SweepRow> run_sweep(FabricEngine& engine, const Router& router, const SweepSpec& spec);

}  // namespace clustersim
