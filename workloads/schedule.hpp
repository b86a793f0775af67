#pragma once
// Pipeline schedules as tables: a schedule is a pure function from (stages, microbatches, chunks,
// rank) to the ordered passes that rank runs. Nothing here knows about time or the network; the
// engine replays the table. check_schedule and replay let tests (and the CLI) see a schedule's
// shape - deadlock freedom, bubble, peak in-flight activations - without running a fabric.
#include <optional>
#include <string>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

/// One pass of one microbatch through one chunk. `backward` is the full backward (input and weight
/// gradients together); the zero-bubble family splits it into backward_input (B) and
/// backward_weight (W). DualPipe's overlapped F&B of two microbatches will be a fifth kind whose
/// PassOp names a second (microbatch, chunk); not modelled yet.
enum class PassKind { forward, backward, backward_input, backward_weight };
const char* to_string(PassKind kind);

struct PassOp {
  PassKind kind = PassKind::forward;
  int microbatch = 0;
  int chunk = 0;  // virtual stage on this rank, 0..v-1; Schedule::chunk_stage gives its model stage
  bool operator==(const PassOp&) const = default;
};

struct ScheduleShape {
  int stages = 1;        // p: pipeline ranks
  int microbatches = 1;  // m: per iteration
  int chunks = 1;        // v: virtual stages (model chunks) per rank
  int group_size = 0;    // g: Megatron's microbatch group per chunk; 0 means p
  int group() const { return group_size > 0 ? group_size : stages; }
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  /// Why this schedule cannot run the shape; nullopt when it can. Checks the shape's positivity.
  virtual std::optional<std::string> not_applicable(const ScheduleShape& shape) const;
  /// The passes rank `rank` runs, in order. Only for shapes with no not_applicable reason.
  virtual std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const = 0;
  /// The global model stage (0..p*v-1) that chunk `chunk` of rank `rank` holds. Default: Megatron's
  /// round-robin, chunk * p + rank (so v = 1 is stage = rank); a V-shaped placement overrides it.
  virtual int chunk_stage(const ScheduleShape& shape, int rank, int chunk) const;
};

const Schedule* find_schedule(const std::string& name);
std::vector<const Schedule*> all_schedules();
std::string schedule_names();

/// Replays every rank's table against the pass dependencies - F of stage k needs F of stage k-1;
/// the input gradient (B or backward_input) of stage k needs its own F and the input gradient of
/// stage k+1; W needs its B - and says what is wrong: not applicable, a pass out of range, missing
/// or duplicated, or a deadlock (with what each stuck rank waits for). nullopt when valid.
std::optional<std::string> check_schedule(const Schedule& schedule, const ScheduleShape& shape);

/// The schedule replayed with uniform stages and free communication.
///
/// Activations: a rank holds a chunk's activations for a microbatch from the start of its forward
/// until its input gradient is done (the end of backward or backward_input). W still needs a smaller
/// residue (layer inputs and output gradients), which the memory model accounts for, not this count.
struct ScheduleTiming {
  Seconds makespan_s = 0;
  std::vector<Seconds> busy_s;              // per rank: time spent in passes
  std::vector<Seconds> idle_s;              // per rank: makespan - busy, the bubble
  std::vector<int> peak_chunk_activations;  // per rank: most (microbatch, chunk) activation sets held at once
  std::vector<double> peak_in_flight_microbatches;  // per rank: the same in whole microbatches, /v
};

/// Event-driven list scheduling: each rank runs its passes in table order, each pass starting when
/// the rank is free and its dependencies are done. Times are one microbatch through one rank's whole
/// share of the model (all v chunks), so one chunk's pass takes 1/v of them. backward_s is the full
/// backward; weight_s is the part of it that is weight gradient, so backward_input takes
/// backward_s - weight_s. Throws std::invalid_argument for a schedule check_schedule rejects.
ScheduleTiming replay(const Schedule& schedule, const ScheduleShape& shape, Seconds forward_s, Seconds backward_s,
                      Seconds weight_s = 0);

}  // namespace clustersim
