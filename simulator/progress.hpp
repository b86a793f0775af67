#pragma once
// A one-line progress bar with an ETA on stderr, for the long commands (validate, compare, bench,
// search, sweep). Drawn only when the caller wants it (not -q, not -v: -v's log lines already say
// each step) and stderr is a terminal, so logs, pipes and tests stay clean. A caller in the CLI
// writes `Progress bar("validate", cli::progress_wanted());` then `bar.update(done, total, item)`.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace clustersim {

class Progress {
 public:
  /// `what` heads the line ("validate"); `wanted`: the user did not ask for quiet or verbose.
  Progress(std::string what, bool wanted) : Progress(std::move(what), wanted, stderr, isatty(STDERR_FILENO) == 1) {}
  /// The same, drawn on `out` when `terminal` (tests draw into a file).
  Progress(std::string what, bool wanted, std::FILE* out, bool terminal)
      : what_(std::move(what)), out_(out), shown_(wanted && terminal) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Ends the line if finish() was not called (an error unwinding past the bar).
  ~Progress() { finish(); }

  bool shown() const { return shown_; }

  /// `done` of `total` steps, the current one named by `item` (may be empty). At most ten redraws
  /// a second, but the first and the last are always drawn.
  void update(long done, long total, const std::string& item = "") {
    if (!shown_ || total <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    const double elapsed_s = std::chrono::duration<double>(now - start_).count();
    const double fraction = static_cast<double>(done) / static_cast<double>(total);
    const int width = 30, filled = static_cast<int>(fraction * width);
    const std::string eta = done > 0 ? fmt::format("ETA {:.0f} s", elapsed_s * (1 - fraction) / fraction) : "ETA ?";
    // A long item name is cut so the line stays on one terminal row and \r can redraw it.
    const std::string shown_item = item.size() > 40 ? item.substr(0, 37) + "..." : item;
    std::fprintf(out_, "\r%s [%s%s] %ld/%ld %s %-40s", what_.c_str(), std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), done, total, eta.c_str(), shown_item.c_str());
    std::fflush(out_);
  }
  /// Ends the line, so what follows starts on its own.
  void finish() {
    if (shown_ && drawn_) std::fprintf(out_, "\n"), std::fflush(out_);
    drawn_ = false;
  }

 private:
  std::string what_;
  std::FILE* out_;
  bool shown_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

}  // namespace clustersim
