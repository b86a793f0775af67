#pragma once
// nccl-tests' text output, read and written. A user's measured bandwidth tables come in as they are
// printed (all_reduce_perf, all_gather_perf, ...): header lines starting with '#', then one row per
// size, `size count type redop root` and the out-of-place and in-place triples `time algbw busbw
// #wrong`. `clustersim collective --nccl-tests FILE` writes a simulated sweep in the same text, so a
// file the simulator made can be fed back to `clustersim calibrate`.
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "simulator/collective_sweep.hpp"

namespace clustersim {

/// One result row, as printed; `line` is where it is written (1-based).
struct NcclTestsRow {
  int line = 0;
  Bytes size_bytes = 0;
  int root = -1;
  Seconds time_s = 0;           // out-of-place
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  Seconds in_place_time_s = 0;
  double in_place_busbw_GBps = 0;
};

struct NcclTestsFile {
  std::string file;
  Op op = Op::all_reduce;
  int ranks = 0;
  std::string device;  // the first Rank line's device name ("NVIDIA H100 80GB HBM3"), or empty
  std::vector<NcclTestsRow> rows;
};

/// The nccl-tests binary name of an op ("all_reduce_perf", "alltoall_perf", "sendrecv_perf").
std::string nccl_tests_binary(Op op);

/// Reads a file. The op comes from nccl-tests' `# Collective test starting: NAME_perf` line, else
/// from the file name (all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv, or
/// our own op names); the rank count from its `#  Rank N ...` device lines, else `ranks_given`
/// (the caller's --gpus). NCCL_DEBUG log lines (`NCCL INFO`, `NCCL WARN`) and blank lines are
/// skipped. Anything else that is not a '#' line must be a 13-column row; a line that is not is a
/// UserError at that line naming the column and what it should hold.
NcclTestsFile read_nccl_tests(const std::string& path, std::optional<int> ranks_given, const std::string& named_by = "");
NcclTestsFile parse_nccl_tests(const std::string& text, const std::string& file, std::optional<int> ranks_given);

/// A simulated sweep in nccl-tests' text. The in-place triple repeats the out-of-place one (the
/// model does not tell them apart) and #wrong is N/A (nothing was checked); the first line says the
/// file is synthetic and what made it.
std::string nccl_tests_text(const SweepSpec& spec, const std::vector<SweepRow>& rows, const std::string& made_by);

}  // namespace clustersim
