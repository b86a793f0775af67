#include "simulator/nccl_tests_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

// nccl-tests' binary names (without _perf) for the ops we simulate, longest first so that a file
// name matches "reduce_scatter" before anything shorter; then our own op names.
struct OpName {
  const char* name;
  Op op;
};
const std::vector<OpName>& op_names() {
  static const std::vector<OpName> names{
      {"reduce_scatter", Op::reduce_scatter}, {"all_reduce", Op::all_reduce}, {"all_gather", Op::all_gather},
      {"all_to_all", Op::all_to_all},         {"broadcast", Op::broadcast},   {"send_recv", Op::send_recv},
      {"alltoall", Op::all_to_all},           {"sendrecv", Op::send_recv}};
  return names;
}

constexpr const char* kColumns = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong";
constexpr double kMaxBusbw_GBps = 1e6;  // the cluster files' bandwidth bound
constexpr double kMaxTime_us = 1e12;    // 11 days for one collective: beyond any run

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// Reads the row's numeric columns, each with its own error.
class RowReader {
 public:
  RowReader(const std::string& file, int line, const std::vector<std::string>& cols) : file_(file), line_(line), cols_(cols) {}

  [[noreturn]] void fail(const std::string& column, const std::string& expected) const {
    throw UserError(file_, line_, column, expected);
  }
  long integer(std::size_t i, const std::string& column, long min, const std::string& what) const {
    const std::string& t = cols_[i];
    const std::size_t first = t.rfind('-', 0) == 0 ? 1 : 0;
    if (t.size() <= first || t.size() > 18 || t.find_first_not_of("0123456789", first) != std::string::npos)
      fail(column, fmt::format("expected an integer ({}), got '{}'", what, t));
    const long v = std::strtol(t.c_str(), nullptr, 10);
    if (v < min) fail(column, fmt::format("expected an integer of at least {} ({}), got {}", min, what, t));
    return v;
  }
  double number(std::size_t i, const std::string& column, double min, double max, const std::string& what) const {
    const std::string& t = cols_[i];
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || !std::isfinite(v) || v < min || v > max)
      fail(column, fmt::format("expected a number from {:g} to {:g} ({}), got '{}'", min, max, what, t));
    return v;
  }
  /// #wrong: a count of wrong elements, or N/A when nccl-tests ran without its data check (-c 0).
  void wrong(std::size_t i, const std::string& column) const {
    if (cols_[i] == "N/A") return;
    if (integer(i, column, 0, "wrong elements, or N/A") != 0)
      fail(column, "expected 0 wrong elements: this row failed nccl-tests' data check, so its time is not a measurement");
  }

 private:
  const std::string& file_;
  int line_;
  const std::vector<std::string>& cols_;
};

NcclTestsRow read_row(const std::string& file, int line, const std::vector<std::string>& cols) {
  RowReader r(file, line, cols);
  if (cols.size() != 13)
    r.fail("row", fmt::format("expected nccl-tests' 13 columns ({}) or a '#' line, got {} column{}", kColumns,
                              cols.size(), cols.size() == 1 ? "" : "s"));
  NcclTestsRow row;
  row.line = line;
  row.size_bytes = static_cast<Bytes>(r.integer(0, "size", 0, "bytes"));
  r.integer(1, "count", 0, "elements");
  if (std::isdigit(static_cast<unsigned char>(cols[2][0]))) r.fail("type", "expected a data type name like float, got '" + cols[2] + "'");
  if (std::isdigit(static_cast<unsigned char>(cols[3][0]))) r.fail("redop", "expected a reduction name like sum or none, got '" + cols[3] + "'");
  row.root = static_cast<int>(r.integer(4, "root", -1, "a rank, or -1"));
  row.time_s = r.number(5, "time", 0, kMaxTime_us, "out-of-place, us") * 1e-6;
  row.algbw_GBps = r.number(6, "algbw", 0, kMaxBusbw_GBps, "out-of-place, GB/s");
  row.busbw_GBps = r.number(7, "busbw", 0, kMaxBusbw_GBps, "out-of-place, GB/s");
  r.wrong(8, "#wrong");
  row.in_place_time_s = r.number(9, "time", 0, kMaxTime_us, "in-place, us") * 1e-6;
  r.number(10, "algbw", 0, kMaxBusbw_GBps, "in-place, GB/s");
  row.in_place_busbw_GBps = r.number(11, "busbw", 0, kMaxBusbw_GBps, "in-place, GB/s");
  r.wrong(12, "#wrong");
  return row;
}

std::optional<Op> op_in(const std::string& text) {
  for (const OpName& n : op_names())
    if (text.find(n.name) != std::string::npos) return n.op;
  return std::nullopt;
}

std::string known_binaries() {
  std::string out;
  for (Op op : all_ops()) out += (out.empty() ? "" : ", ") + nccl_tests_binary(op);
  return out;
}

}  // namespace

std::string nccl_tests_binary(Op op) {
  switch (op) {
    case Op::all_to_all: return "alltoall_perf";
    case Op::send_recv: return "sendrecv_perf";
    default: return std::string(to_string(op)) + "_perf";
  }
}

NcclTestsFile parse_nccl_tests(const std::string& text, const std::string& file, std::optional<int> ranks_given) {
  NcclTestsFile out;
  out.file = file;
  std::optional<Op> op;
  int rank_lines = 0;
  std::istringstream in(text);
  int line = 0;
  for (std::string s; std::getline(in, s);) {
    ++line;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    const std::vector<std::string> cols = words(s);
    if (cols.empty()) continue;
    if (s.find("NCCL INFO") != std::string::npos || s.find("NCCL WARN") != std::string::npos) continue;
    if (cols[0][0] != '#') {
      out.rows.push_back(read_row(file, line, cols));
      continue;
    }
    // "# Collective test starting: all_reduce_perf" (nccl-tests 2.13 and later).
    const std::size_t starting = s.find("Collective test starting:");
    if (starting != std::string::npos) {
      const std::string name = s.substr(starting + 25);
      op = op_in(name);
      if (!op) throw UserError(file, line, "op", "expected one of " + known_binaries() + ", got '" + name + "'");
    }
    // "#  Rank  0 Group  0 Pid 1234 on host device  0 [0x1b] NVIDIA H100 80GB HBM3"
    if (cols.size() >= 3 && cols[0] == "#" && cols[1] == "Rank" && std::isdigit(static_cast<unsigned char>(cols[2][0]))) {
      if (rank_lines == 0) {
        const std::size_t bracket = s.find(']');
        if (bracket != std::string::npos) {
          out.device = s.substr(bracket + 1);
          out.device.erase(0, out.device.find_first_not_of(' '));
        }
      }
      ++rank_lines;
    }
  }
  if (!op) op = op_in(std::filesystem::path(file).filename().string());
  if (!op)
    throw UserError(file, 1, "op",
                    "expected nccl-tests' '# Collective test starting: NAME_perf' line or the op in the file name (" +
                        known_binaries() + ")");
  out.op = *op;
  if (out.rows.empty())
    throw UserError(file, line, "rows", std::string("expected at least one result row (") + kColumns + ")");
  if (rank_lines > 0 && ranks_given && *ranks_given != rank_lines)
    throw UserError(file, 0, "--gpus",
                    fmt::format("expected {} GPUs, as the file's '#  Rank' lines list, got {}", rank_lines, *ranks_given));
  if (rank_lines > 0) out.ranks = rank_lines;
  else if (ranks_given) out.ranks = *ranks_given;
  else
    throw UserError(file, 1, "ranks", "expected nccl-tests' '#  Rank N ...' device lines, or --gpus with the GPU count the file was measured on");
  if (out.ranks < 2)
    throw UserError(file, 1, "ranks", fmt::format("expected a measurement on at least 2 GPUs, got {}", out.ranks));
  return out;
}

NcclTestsFile read_nccl_tests(const std::string& path, std::optional<int> ranks_given, const std::string& named_by) {
  return parse_nccl_tests(read_input_file(path, named_by), path, ranks_given);
}

std::string nccl_tests_text(const SweepSpec& spec, const std::vector<SweepRow>& rows, const std::string& made_by) {
  const int n = static_cast<int>(spec.ranks.size());
  // nccl-tests' count column is the elements each rank passes to NCCL: per rank where the buffer
  // is split over ranks (all-gather's send, reduce-scatter's receive, all-to-all's per-peer share).
  const bool per_rank = spec.op == Op::all_gather || spec.op == Op::reduce_scatter || spec.op == Op::all_to_all;
  const bool reduces = spec.op == Op::all_reduce || spec.op == Op::reduce_scatter;
  std::string out;
  out += "# SYNTHETIC, not measured: " + made_by + "\n";
  out += "# Collective test starting: " + nccl_tests_binary(spec.op) + "\n";
  out += fmt::format("# nThread 1 nGpus 1 minBytes {} maxBytes {} step: 2(factor) warmup iters: 0 iters: 1 agg iters: 1 "
                     "validation: 0 graph: 0\n#\n# Using devices\n",
                     rows.empty() ? 0 : rows.front().size_bytes, rows.empty() ? 0 : rows.back().size_bytes);
  for (int r = 0; r < n; ++r)
    out += fmt::format("#  Rank {:>2} Group  0 Pid      0 on  simulated device {:>2} [0x00] GPU {}\n", r, r, spec.ranks[static_cast<std::size_t>(r)]);
  out += "#\n";
  out += "#                                                              out-of-place                       in-place          \n";
  out += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  out += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
  double busbw_sum = 0;
  for (const SweepRow& r : rows) {
    const Bytes count = r.size_bytes / spec.type.size_bytes / (per_rank ? static_cast<Bytes>(n) : 1);
    const std::string triple = fmt::format("{:>8.2f} {:>7.2f} {:>7.2f} {:>6}", r.time_s * 1e6, r.algbw_GBps, r.busbw_GBps, "N/A");
    out += fmt::format("{:>12} {:>13} {:>9} {:>7} {:>7} {} {}\n", r.size_bytes, count, spec.type.name,
                       reduces ? "sum" : "none", spec.op == Op::broadcast ? spec.root : -1, triple, triple);
    busbw_sum += r.busbw_GBps;
  }
  out += "# Out of bounds values : 0 OK\n";
  out += fmt::format("# Avg bus bandwidth    : {:g} \n#\n", rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
  return out;
}

}  // namespace clustersim
