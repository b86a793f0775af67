#include "simulator/trace_writer.hpp"

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "topologies/invariant.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

const char* to_string(TraceTrack track) {
  switch (track) {
    case TraceTrack::compute: return "compute";
    case TraceTrack::tp: return "TP";
    case TraceTrack::cp: return "CP";
    case TraceTrack::ep: return "EP";
    case TraceTrack::pp_send: return "PP send";
    case TraceTrack::pp_recv: return "PP recv";
    case TraceTrack::dp: return "DP";
  }
  return "?";
}

bool GpuSelection::contains(int gpu) const {
  for (const auto& [lo, hi] : ranges)
    if (gpu >= lo && gpu <= hi) return true;
  return false;
}

namespace {

// Timestamps in whole nanoseconds, printed as microseconds (Chrome's unit) with three decimals:
// the same inputs give the same bytes, and a part nests in its pass exactly.
std::int64_t ns(Seconds s) { return std::llround(s * 1e9); }

void append_us(fmt::memory_buffer& out, std::int64_t t_ns) {
  fmt::format_to(std::back_inserter(out), "{}.{:03}", t_ns / 1000, t_ns % 1000);
}

void append_string(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

/// GPUs as ranges ("0-7", "0,8,16"), at most 16 pieces and then how many there are in all.
std::string gpu_ranges(const std::vector<int>& gpus) {
  std::string text;
  int pieces = 0;
  for (std::size_t i = 0; i < gpus.size();) {
    std::size_t j = i;
    while (j + 1 < gpus.size() && gpus[j + 1] == gpus[j] + 1) ++j;
    if (++pieces > 16) return text + ",... (" + std::to_string(gpus.size()) + " GPUs)";
    if (!text.empty()) text += ',';
    text += j == i ? std::to_string(gpus[i]) : std::to_string(gpus[i]) + "-" + std::to_string(gpus[j]);
    i = j + 1;
  }
  return text;
}

constexpr int kLanes = 100;  // tid = track x 100 + lane
constexpr std::size_t kFlushBytes = 1 << 20;

}  // namespace

TraceWriter::TraceWriter(const std::string& path, GpuSelection selection, const std::string& option)
    : path_(path), option_(option), selection_(std::move(selection)) {
  const auto ends_with = [&](std::string_view tail) {
    return path.size() > tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  gzip_ = ends_with(".json.gz");
  if (ends_with(".gz") && !gzip_)
    throw UserError("command line", 0, option, "expected FILE.json.gz for a compressed trace, got '" + path + "'");
  file_ = gzip_ ? static_cast<void*>(gzopen(path.c_str(), "wb6")) : static_cast<void*>(std::fopen(path.c_str(), "wb"));
  if (!file_) throw UserError("command line", 0, option, "cannot write '" + path + "'");
  put("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
}

// An unfinished trace (the run failed after it was opened) is removed, not left half written.
TraceWriter::~TraceWriter() {
  if (!file_) return;
  if (gzip_) gzclose(static_cast<gzFile>(file_));
  else std::fclose(static_cast<std::FILE*>(file_));
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

bool TraceWriter::wants(int gpu, bool representative) const {
  return selection_.ranges.empty() ? representative : selection_.contains(gpu);
}

void TraceWriter::put(std::string_view text) {
  out_.append(text.data(), text.data() + text.size());
  if (out_.size() >= kFlushBytes) flush();
}

void TraceWriter::flush() {
  if (out_.size() == 0) return;
  const bool ok = gzip_ ? gzwrite(static_cast<gzFile>(file_), out_.data(), static_cast<unsigned>(out_.size())) ==
                              static_cast<int>(out_.size())
                        : std::fwrite(out_.data(), 1, out_.size(), static_cast<std::FILE*>(file_)) == out_.size();
  if (!ok) throw UserError("command line", 0, option_, "writing '" + path_ + "' failed (disk full?)");
  out_.clear();
}

void TraceWriter::separator() {
  if (!first_) put(",\n");
  first_ = false;
}

void TraceWriter::place(int gpu, int rank, int replica) {
  Gpu& g = gpus_[gpu];
  g.rank = rank;
  g.replica = replica;
}

void TraceWriter::name_job(int gpu, std::string job) { gpus_[gpu].job = std::move(job); }

void TraceWriter::event(int gpu, int folded_from, const TraceRecord& e) {
  Gpu& g = gpus_[gpu];
  if (folded_from >= 0) g.folded_from = folded_from;
  std::int64_t start = ns(e.start_s), end = ns(e.end_s);
  if (end < start) {
    non_negative_time(e.end_s - e.start_s, std::abs(e.end_s), "a trace slice's duration");
    end = start;
  }
  const int track = static_cast<int>(e.track);
  std::vector<std::int64_t>& lanes = g.lane_end_ns[static_cast<std::size_t>(track)];
  std::size_t lane = 0;
  if (e.track == TraceTrack::compute) {
    // Parts nest in their pass: rounding may not push one past it.
    if (e.parent) g.parent_end_ns = end;
    else if (end > g.parent_end_ns && start < g.parent_end_ns) end = g.parent_end_ns;
    if (lanes.empty()) lanes.push_back(end);
    lanes[0] = std::max(lanes[0], end);
  } else {
    while (lane < lanes.size() && lanes[lane] > start) ++lane;
    if (lane == lanes.size()) {
      if (lane + 1 >= kLanes) lane = kLanes - 1;
      else lanes.push_back(0);
    }
    lanes[lane] = end;
  }
  const int tid = track * kLanes + static_cast<int>(lane);
  fmt::memory_buffer b;
  auto it = std::back_inserter(b);
  fmt::format_to(it, "{{\"name\":");
  append_string(b, e.name);
  fmt::format_to(it, ",\"cat\":");
  append_string(b, e.cat);
  fmt::format_to(it, ",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":", gpu, tid);
  append_us(b, start);
  fmt::format_to(it, ",\"dur\":");
  append_us(b, end - start);
  fmt::format_to(it, ",\"args\":{{");
  bool any = false;
  auto key = [&](const char* k) {
    fmt::format_to(it, "{}\"{}\":", any ? "," : "", k);
    any = true;
  };
  if (!e.label.empty()) {
    key("label");
    append_string(b, e.label);
  }
  if (e.microbatch >= 0) key("microbatch"), fmt::format_to(it, "{}", e.microbatch);
  if (e.chunk >= 0) key("chunk"), fmt::format_to(it, "{}", e.chunk);
  if (e.stage >= 0) key("stage"), fmt::format_to(it, "{}", e.stage);
  if (e.layer >= 0) key("layer"), fmt::format_to(it, "{}", e.layer);
  if (e.bytes > 0) key("bytes"), fmt::format_to(it, "{}", e.bytes);
  if (e.group) {
    key("group");
    append_string(b, gpu_ranges(*e.group));
    key("peers"), fmt::format_to(it, "{}", e.group->size() - 1);
  } else if (e.peers >= 0) {
    key("peers"), fmt::format_to(it, "{}", e.peers);
  }
  if (e.peer >= 0) key("peer"), fmt::format_to(it, "{}", e.peer);
  if (e.exposed_s >= 0) key("exposed_us"), append_us(b, ns(e.exposed_s));
  if (folded_from >= 0) key("folded_from"), fmt::format_to(it, "{}", folded_from);
  fmt::format_to(it, "}}}}");
  separator();
  put({b.data(), b.size()});
  ++slices_;
  // Flow arrows bind to the slice enclosing their timestamp on their thread ("bp":"e").
  for (const auto& [id, ph] : {std::pair(e.flow_out, "s"), std::pair(e.flow_in, "f")}) {
    if (id == 0) continue;
    b.clear();
    fmt::format_to(it, "{{\"name\":\"pipeline transfer\",\"cat\":\"pp\",\"ph\":\"{}\",{}\"id\":{},\"pid\":{},\"tid\":{},\"ts\":",
                   ph, std::string_view(ph) == "f" ? "\"bp\":\"e\"," : "", id, gpu, tid);
    append_us(b, start);
    fmt::format_to(it, "}}");
    separator();
    put({b.data(), b.size()});
  }
}

void TraceWriter::finish() {
  if (gpus_.empty()) {
    if (gzip_) gzclose(static_cast<gzFile>(file_));
    else std::fclose(static_cast<std::FILE*>(file_));
    file_ = nullptr;
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
    throw UserError("command line", 0, option_ == "--trace" ? "--trace-ranks" : option_,
                    "expected GPUs that take part in the job, but the selection keeps none");
  }
  for (const auto& [gpu, g] : gpus_) {
    fmt::memory_buffer b;
    auto it = std::back_inserter(b);
    std::string name = "GPU " + std::to_string(gpu);
    if (g.rank >= 0)
      name += " (" + (g.job.empty() ? "" : "job " + g.job + ", ") + "pipeline rank " + std::to_string(g.rank) + ", replica " +
              std::to_string(g.replica) + ")";
    if (g.folded_from >= 0) name += ", events of GPU " + std::to_string(g.folded_from);
    fmt::format_to(it, "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":", gpu);
    append_string(b, name);
    fmt::format_to(it, "}}}},\n{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}", gpu, gpu);
    for (int t = 0; t < kTraceTracks; ++t)
      for (std::size_t lane = 0; lane < g.lane_end_ns[static_cast<std::size_t>(t)].size(); ++lane) {
        const int tid = t * kLanes + static_cast<int>(lane);
        std::string thread = to_string(static_cast<TraceTrack>(t));
        if (lane > 0) thread += " " + std::to_string(lane + 1);
        fmt::format_to(it, ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":", gpu, tid);
        append_string(b, thread);
        fmt::format_to(it, "}}}},\n{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
                       gpu, tid, tid);
      }
    separator();
    put({b.data(), b.size()});
  }
  put("\n]}\n");
  flush();
  const bool ok = gzip_ ? gzclose(static_cast<gzFile>(file_)) == Z_OK : std::fclose(static_cast<std::FILE*>(file_)) == 0;
  file_ = nullptr;
  if (!ok) throw UserError("command line", 0, option_, "writing '" + path_ + "' failed (disk full?)");
}

}  // namespace clustersim
