#pragma once
// What a Chrome/Perfetto trace is made of, as the iteration hands it over: one record per slice on
// one GPU's track, streamed to a sink as the iteration's accounting walks its steps, so no trace is
// ever held whole (trace_writer.hpp writes it event by event).
#include <cstdint>
#include <string_view>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

/// A GPU's tracks, each a named thread of its process in the trace.
enum class TraceTrack { compute, tp, cp, ep, pp_send, pp_recv, dp };
inline constexpr int kTraceTracks = 7;
/// "compute", "TP", "CP", "EP", "PP send", "PP recv", "DP".
const char* to_string(TraceTrack track);

/// One slice. Names are a small set ("F", "B", "W", "F&B", "compute", "wait", "all-reduce", "send",
/// ...); what a slice is about goes in its category and arguments, never in its name.
struct TraceRecord {
  TraceTrack track = TraceTrack::compute;
  const char* name = "";
  const char* cat = "";
  Seconds start_s = 0;
  Seconds end_s = 0;
  std::string_view label;  // args.label: what the model calls it ("attention output all-reduce")
  Bytes bytes = 0;         // args.bytes when > 0
  int microbatch = -1, chunk = -1, stage = -1, layer = -1;  // args when >= 0
  int peer = -1;                           // args.peer: a pipeline transfer's GPU at the other end
  const std::vector<int>* group = nullptr;  // args.group (GPUs as ranges) and args.peers (its size - 1)
  int peers = -1;                           // args.peers when there is no group list
  Seconds exposed_s = -1;  // args.exposed_us: what the compute stream waited for it (>= 0)
  /// A flow arrow (Chrome trace "s"/"f" events) leaving this slice / arriving at it; 0: none.
  std::uint64_t flow_out = 0, flow_in = 0;
  /// The slice of a pass on the compute track: its parts follow and nest inside it.
  bool parent = false;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /// Whether the trace keeps this GPU; `representative`: the first GPU of a simulated pipeline
  /// rank, which a trace keeps when the user named no GPUs.
  virtual bool wants(int gpu, bool representative) const = 0;
  /// A slice on `gpu`; folded_from >= 0: the GPU whose simulated events these are (its replica or
  /// TP rank was folded onto that one's), -1: its own.
  virtual void event(int gpu, int folded_from, const TraceRecord& record) = 0;
  /// How `gpu` sits in the job, for its process name: pipeline rank and data-parallel replica.
  virtual void place(int gpu, int rank, int replica) = 0;
};

}  // namespace clustersim
