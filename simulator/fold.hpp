#pragma once
// Folding data-parallel replicas: which replicas of a training job the engine may simulate once
// for several, and only where that is exact.
//
// A replica's "own" flows are those only its GPUs send (pipeline transfers, syncs between its
// stages); "shared" flows cross several replicas (data-parallel rings). Replica d folds onto a
// simulated replica s when (1) no link that either sends its own flows over carries another
// replica's own flows, and (2) d's own flows map onto s's one to one, link by link, with equal
// capacities and latencies, and the same shared flows crossing each pair of mapped links as often.
// Then max-min gives d's flows the same rates as s's at every instant: each own link of d sees
// exactly what its image sees, and a shared flow, frozen at the tightest link it crosses, finds
// that link among s's, whose load folding leaves untouched. Anything that breaks the symmetry
// (an ECMP hash that puts two replicas' transfers on one uplink, a link of another capacity, a GPU
// of another speed)
// leaves the replica unfolded.
#include <optional>
#include <string>
#include <vector>

#include "topologies/cluster.hpp"
#include "workloads/iteration_plan.hpp"

namespace clustersim {

struct OwnFlow {
  std::vector<LinkDir> links;
  Seconds latency_s = 0;
  Bytes size_bytes = 0;
};

struct FoldInput {
  int replicas = 1;
  /// What one of `replicas` is, for messages: a replica, or an expert-parallel group of replicas
  /// whose MoE all-to-alls run in place (they fold as a whole).
  std::string what = "replica";
  /// copies[replica]: the replica's own flows, in the same order for every replica.
  std::vector<std::vector<OwnFlow>> copies;
  /// Flows that cross several replicas: the links each one crosses.
  std::vector<std::vector<LinkDir>> shared;
  /// speeds[replica][rank]: the compute speed of each of the replica's units (variability);
  /// empty when every GPU computes as calibrated. A replica folds only onto one of equal speeds:
  /// a slower GPU runs its steps later, which no mapping of links makes up for.
  std::vector<std::vector<double>> speeds;
};

struct Folding {
  std::vector<int> simulated_as;  // replica -> the replica simulated for it (itself if simulated)
  int simulated_replicas = 0;
  /// Why the first unfolded replica could not fold, for `FoldMode::all`'s error; empty if all fold.
  std::string why_not;
};

/// The replicas to simulate under `mode` (exact folds only what is provably exact; none folds
/// nothing; all folds exactly like exact and leaves the caller to reject a partial fold).
Folding fold_replicas(const Cluster& cluster, const FoldInput& in, FoldMode mode);

}  // namespace clustersim
