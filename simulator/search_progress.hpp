#pragma once
// A one-line progress bar with an ETA on stderr, for search's screening and verification. Shown only
// when stderr is a terminal and the user did not ask for quiet, so logs and pipes stay clean.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace clustersim {

class Progress {
 public:
  Progress(std::string what, bool wanted) : what_(std::move(what)), shown_(wanted && isatty(STDERR_FILENO)) {}
  /// At most ten redraws a second.
  void update(long done, long total) {
    if (!shown_ || total <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    const double elapsed_s = std::chrono::duration<double>(now - start_).count();
    const double fraction = static_cast<double>(done) / static_cast<double>(total);
    const int width = 30, filled = static_cast<int>(fraction * width);
    const std::string eta = done > 0 ? fmt::format("ETA {:.0f} s", elapsed_s * (1 - fraction) / fraction) : "ETA ?";
    std::fprintf(stderr, "\r%s [%s%s] %ld/%ld %s   ", what_.c_str(), std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), done, total, eta.c_str());
    std::fflush(stderr);
  }
  /// Ends the line, so what follows starts on its own.
  void finish() {
    if (shown_ && drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  std::string what_;
  bool shown_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

}  // namespace clustersim
