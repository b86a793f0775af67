#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <iostream>
#include <stdexcept>
#include <fstream>
#include <limits>

#include "simulator/cli/commands.hpp"
#include "topologies/user_error.hpp"

namespace clustersim::cli {

Bytes parse_size(const std::string& text, const std::string& option) {
  auto bad = [&] { return UserError("command line", 0, option, "expected a size like 8, 64K, 1M or 8G, got '" + text + "'"); };
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw bad();
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  std::string suffix = text.substr(used);
  unsigned long long scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1ULL << 10;
  else if (suffix == "M" || suffix == "m") scale = 1ULL << 20;
  else if (suffix == "G" || suffix == "g") scale = 1ULL << 30;
  else if (!suffix.empty()) throw bad();
  if (value > std::numeric_limits<unsigned long long>::max() / scale) throw bad();  // would wrap around
  return static_cast<Bytes>(value * scale);
}

std::string run_in_child(const std::function<std::string()>& work) {
  std::cout.flush();  // the child must not inherit (and print again) buffered output
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string out = work();
    const bool ok = write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size());
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("a simulation child process failed");
  return text;
}

void write_file(const std::string& path, const std::string& text, const std::string& option) {
  std::ofstream out(path);
  if (!out) throw UserError(path, 0, option, "cannot open the file for writing");
  out << text;
  out.close();
  if (!out) throw UserError(path, 0, option, "could not write the whole file (disk full?)");
}

}  // namespace clustersim::cli
