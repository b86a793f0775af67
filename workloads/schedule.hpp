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
/// backward_weight (W).
enum class PassKind { forward, backward, backward_input, backward_weight };
const char* to_string(PassKind kind);

struct PassOp {
  PassKind kind = PassKind::forward;
  int microbatch = 0;
  int chunk = 0;  // slot on this rank, 0..v-1; Schedule::chunk_stage gives its model stage
  /// DualPipe's F&B unit: this forward runs overlapped with the rank's next op, an input-gradient
  /// pass (backward or backward_input) of another microbatch or chunk. The pair is one unit: it
  /// starts when the rank is free and both passes' dependencies are met, and both end together.
  bool overlap_next = false;
  bool operator==(const PassOp&) const = default;
};

/// A (rank, chunk) place that holds one model stage's parameters.
struct Slot {
  int rank;
  int chunk;
  bool operator==(const Slot&) const = default;
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
  /// Why this schedule cannot run the shape; nullopt when it can. Checks the shape's positivity,
  /// and v against chunks_required().
  virtual std::optional<std::string> not_applicable(const ScheduleShape& shape) const;
  /// The passes rank `rank` runs, in order. Only for shapes with no not_applicable reason.
  virtual std::vector<PassOp> rank_ops(const ScheduleShape& shape, int rank) const = 0;
  /// The model stage (0..model_stages-1) that chunk `chunk` of rank `rank` holds. Default: Megatron's
  /// round-robin, chunk * p + rank (so v = 1 is stage = rank); a V-shaped placement overrides it.
  /// A bijection onto the stages, except where parameters are held twice (DualPipe: two slots a stage).
  virtual int chunk_stage(const ScheduleShape& shape, int rank, int chunk) const;
  /// How many stages the model is cut into: p * v by default; DualPipe's p (each held twice).
  virtual int model_stages(const ScheduleShape& shape) const;
  /// The slots microbatch `microbatch` visits in forward order; position i holds model stage i.
  /// Default: each stage's one slot, by inverting chunk_stage. DualPipe sends half the microbatches
  /// down the ranks and half up.
  virtual std::vector<Slot> route(const ScheduleShape& shape, int microbatch) const;
  /// The chunk count v this schedule runs; 0 when it takes any.
  virtual int chunks_required() const { return 0; }
  /// Whether blocking send/recv (Megatron-LM's synchronous p2p) is modelled for this schedule's
  /// tables: Megatron's own schedules, whose sends and receives pair up in the order we replay.
  virtual bool runs_blocking_p2p() const { return false; }
};

const Schedule* find_schedule(const std::string& name);
std::vector<const Schedule*> all_schedules();
std::string schedule_names();

/// Replays every rank's table against the pass dependencies along each microbatch's route - F at
/// route position i needs F at i-1; the input gradient (B or backward_input) at i needs its own F and
/// the input gradient at i+1; W needs its B - and says what is wrong: not applicable, a pass out of
/// range or off its microbatch's route, missing or duplicated, a bad overlap_next, or a deadlock
/// (with what each stuck rank waits for). nullopt when valid.
std::optional<std::string> check_schedule(const Schedule& schedule, const ScheduleShape& shape);

/// The schedule replayed with uniform stages and free communication.
///
/// Bubble: idle_s is makespan - busy, the whole iteration as one rank sees it. The zero-bubble papers
/// measure a rank's own span instead (end_s - start_s - busy_s): the wait before a rank's first pass
/// is not counted, since with optimizer post-validation the next iteration fills it (ZB-H2's
/// parallelogram has none within any span, yet its last rank starts (p-1)F late).
///
/// Activations: a rank holds a chunk's activations for a microbatch from the start of its forward
/// until its input gradient is done (the end of backward or backward_input). W still needs a smaller
/// residue (the GEMMs' inputs and output gradients) until it runs; neither this count nor the memory
/// model holds it yet, so split-backward schedules' activation peaks are low by that residue.
struct ScheduleTiming {
  Seconds makespan_s = 0;
  std::vector<Seconds> busy_s;              // per rank: time spent in passes
  std::vector<Seconds> idle_s;              // per rank: makespan - busy, the bubble
  std::vector<Seconds> start_s;             // per rank: when its first pass starts
  std::vector<Seconds> end_s;               // per rank: when its last pass ends
  std::vector<int> peak_chunk_activations;  // per rank: most (microbatch, chunk) activation sets held at once
  std::vector<std::vector<int>> peak_held_by_chunk;  // per rank and chunk: most microbatches that chunk holds at once
  std::vector<double> peak_in_flight_microbatches;  // per rank: the same in 1/p-of-the-model units
};

/// Event-driven list scheduling: each rank runs its passes in table order, each pass (or F&B unit)
/// starting when the rank is free and its dependencies are done. Times are one microbatch through 1/p
/// of the model - one rank's whole share in a one-way pipeline - so one pass takes time * p /
/// model_stages: 1/v of it for interleaved or ZB-V, all of it for DualPipe, whose chunk is a whole
/// stage. backward_s is the full backward; weight_s is the part of it that is weight gradient, so
/// backward_input takes backward_s - weight_s. An F&B unit takes its two passes' times summed, or
/// overlapped_s (same scale) when that is not negative. Peak in-flight microbatches are peak chunk
/// activations * p / model_stages. `rank_scale` (empty, or one factor per rank) multiplies each
/// rank's passes: ranks on GPUs of different speeds. Throws std::invalid_argument for a schedule
/// check_schedule rejects.
ScheduleTiming replay(const Schedule& schedule, const ScheduleShape& shape, Seconds forward_s, Seconds backward_s,
                      Seconds weight_s = 0, Seconds overlapped_s = -1, const std::vector<double>& rank_scale = {});

}  // namespace clustersim
