#pragma once
// The two clocks a benchmark reads: wall time, and the CPU time of this process, which is what one
// core spends whatever else the machine runs (the figure to compare on a shared, noisy machine).
#include <sys/resource.h>

#include <chrono>

namespace clustersim::cli {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace clustersim::cli
