#pragma once
// A Chrome/Perfetto trace written event by event as the iteration hands them over (trace_sink.hpp):
// nothing but the current output buffer and a few numbers per traced GPU stay in memory, so peak
// memory does not grow with the trace. A path ending `.json.gz` is gzip-compressed as it is written
// (zlib). One process per GPU; one thread per track, and a second lane of a track (its thread
// "TP 2") where slices of that track overlap in time, which Chrome's format cannot nest.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "simulator/trace_sink.hpp"

namespace clustersim {

/// GPUs kept in a trace, as ranges: "0-7,64" is {[0, 7], [64, 64]}; never one entry per GPU.
/// Empty: the first GPU of each simulated pipeline rank (what the engine ran for the rank).
struct GpuSelection {
  std::vector<std::pair<int, int>> ranges;
  bool contains(int gpu) const;
};

class TraceWriter : public TraceSink {
 public:
  /// Opens `path` (gzip when it ends .json.gz); a failure is the user's error at `option`.
  TraceWriter(const std::string& path, GpuSelection selection, const std::string& option);
  ~TraceWriter() override;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  bool wants(int gpu, bool representative) const override;
  void event(int gpu, int folded_from, const TraceRecord& record) override;
  void place(int gpu, int rank, int replica) override;
  /// The job `gpu` runs, in its process name, when a scenario puts several jobs on one cluster.
  void name_job(int gpu, std::string job);
  /// Names every process and thread used, closes the document and the file. A selection that kept
  /// no GPU is the user's error (nothing is left at the path).
  void finish();
  std::uint64_t slices() const { return slices_; }

 private:
  struct Gpu {
    int rank = -1, replica = -1, folded_from = -1;
    std::string job;
    std::array<std::vector<std::int64_t>, kTraceTracks> lane_end_ns;  // per track, each lane's last end
    std::int64_t parent_end_ns = 0;  // the compute track's open pass
  };
  void put(std::string_view text);
  void flush();
  void separator();

  std::string path_, option_;
  GpuSelection selection_;
  bool gzip_ = false;
  void* file_ = nullptr;  // gzFile or std::FILE*
  fmt::memory_buffer out_;
  bool first_ = true;
  std::uint64_t slices_ = 0;
  std::map<int, Gpu> gpus_;  // ordered: the metadata comes out in GPU order
};

}  // namespace clustersim
