#pragma once
// Which traced GPUs get each simulated slice. The engine runs a pipeline rank's TP and CP GPUs as
// one step, and of the data-parallel replicas only those that do not fold onto another
// (fold.hpp); with --fold assume, the first GPU of a rank sends its pipeline transfers for all of
// them. A traced GPU therefore takes its slices from its class: compute from its own unit of the
// replica it folds onto; pipeline transfers from the GPU that sent for it; gradient collectives
// from its own group where that was on the fabric, else from the first GPU of its rank. Slices a
// GPU takes from another GPU say so (args.folded_from).
#include <unordered_map>
#include <vector>

#include "simulator/trace_sink.hpp"

namespace clustersim {

struct TraceLayout {
  const std::vector<std::vector<int>>* units = nullptr;  // [replica * ranks + rank] -> GPUs, tp fastest
  int ranks = 1;
  int replicas = 1;
  std::vector<int> simulated_as;  // by replica
  int own_members = 1;            // GPUs of a unit whose transfers are on the fabric
  int tp = 1;                     // GPUs of a unit's TP group
  std::vector<int> in_dp_groups;  // GPUs whose gradient collectives are on the fabric
};

class TraceFanout {
 public:
  TraceFanout(TraceSink& sink, TraceLayout layout);

  /// A slice every GPU of unit (replica, rank) ran: TP and CP slices get each GPU's own group.
  void unit(int replica, int rank, TraceRecord record);
  /// A pipeline transfer from `member` of (replica, from) to the same member of (replica, to): a
  /// send slice, a receive slice, and the arrow between them where both GPUs are traced.
  void transfer(int replica, int from, int to, int member, std::uint64_t index, TraceRecord record);
  /// A collective over `group`: inside one replica (replica >= 0, its folded copies take it too)
  /// or across replicas (replica -1, a data-parallel group).
  void collective(int replica, const std::vector<int>& group, TraceRecord record);

 private:
  int gpu(int replica, int rank, int member) const;
  void emit(const std::unordered_map<int, std::vector<int>>& targets, int from, const TraceRecord& record);

  TraceSink& sink_;
  TraceLayout layout_;
  int gpus_ = 0;  // 1 + the largest GPU id
  std::vector<int> replica_of_, rank_of_, member_of_;
  std::vector<bool> traced_;
  std::unordered_map<int, std::vector<int>> compute_, pp_, dp_;  // class GPU -> traced GPUs taking its slices
  std::vector<std::vector<int>> tp_group_, cp_group_;               // by traced GPU
};

}  // namespace clustersim
