#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/cli/commands.hpp"
#include "simulator/training_run.hpp"
#include "topologies/cluster_overrides.hpp"
#include "topologies/input_file.hpp"
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

ClusterSpec load_cluster_with_sets(const std::string& path, const std::string& option, const std::vector<std::string>& sets) {
  for (const std::string& set : sets)
    if (!is_cluster_override(set))
      throw UserError("command line", 0, "--set",
                      "expected cluster.PATH=VALUE, a field of the cluster file (cluster.fabric.tiers.0.oversubscription=2): "
                      "this command reads no scenario; got '" + set + "'");
  return load_cluster_spec_with(path, sets, option);
}

std::vector<std::optional<std::string>> run_in_children(std::size_t count, const std::function<std::string(std::size_t)>& work,
                                                        int jobs, const std::function<void(std::size_t)>& finished) {
  std::vector<std::optional<std::string>> out(count);
  struct Child {
    pid_t pid;
    int fd;
    std::size_t index;
    std::string text;
  };
  std::vector<Child> running;
  std::size_t next = 0, done = 0;
  std::cout.flush();  // no child may inherit (and print again) buffered output
  while (done < count) {
    while (next < count && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        close(fds[0]);
        const std::string text = work(next);
        const bool ok = write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
        _exit(ok ? 0 : 1);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], next++, {}});
    }
    // Read whichever child has output; a closed pipe means it is done.
    std::vector<pollfd> polls;
    for (const Child& c : running) polls.push_back({c.fd, POLLIN, 0});
    if (poll(polls.data(), polls.size(), -1) < 0) continue;
    for (std::size_t i = 0; i < running.size();) {
      if (!(polls[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        ++i;
        continue;
      }
      Child& c = running[i];
      char buf[4096];
      const ssize_t got = read(c.fd, buf, sizeof buf);
      if (got > 0) {
        c.text.append(buf, static_cast<std::size_t>(got));
        ++i;
        continue;
      }
      close(c.fd);
      int status = 0;
      waitpid(c.pid, &status, 0);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) out[c.index] = std::move(c.text);
      finished(++done);
      running.erase(running.begin() + static_cast<long>(i));
      polls.erase(polls.begin() + static_cast<long>(i));
    }
  }
  return out;
}

std::string run_in_child(const std::function<std::string()>& work) {
  std::optional<std::string> text = run_in_children(1, [&](std::size_t) { return work(); }, 1, [](std::size_t) {}).front();
  if (!text) throw std::runtime_error("a simulation child process failed");
  return std::move(*text);
}

std::string shipped_file(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(relative, ec)) return relative;
  std::vector<fs::path> roots;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (fs::is_regular_file(dir / "scenarios" / "gpus.yaml", ec)) {
        roots.push_back(dir);
        break;
      }
  roots.emplace_back(CLUSTERSIM_SOURCE_DIR);
  for (const fs::path& root : roots)
    if (fs::exists(root / relative, ec)) return (root / relative).string();
  return relative;
}

void write_file(const std::string& path, const std::string& text, const std::string& option) {
  std::ofstream out(path);
  if (!out) throw UserError(path, 0, option, "cannot open the file for writing");
  out << text;
  out.close();
  if (!out) throw UserError(path, 0, option, "could not write the whole file (disk full?)");
}

long parse_integer(const std::string& text, const std::string& option, long min, long max) {
  const std::string range = "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
  const std::size_t first = text.find_first_not_of("+-") == 1 ? 1 : 0;
  if (text.size() <= first || text.find_first_not_of("0123456789", first) != std::string::npos)
    throw UserError("command line", 0, option, range + ", got '" + text + "'");
  errno = 0;
  const long v = std::strtol(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v < min || v > max) throw UserError("command line", 0, option, range + ", got " + text);
  return v;
}

double parse_number(const std::string& text, const std::string& option, double min, double max) {
  char* end = nullptr;
  const double v = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? NAN : std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < min || v > max)
    throw UserError("command line", 0, option,
                    fmt::format("expected a number from {:g} to {:g}, got '{}'", min, max, text));
  return v;
}

void check_input_path(const std::string& path, const std::string& option) {
  if (auto why = input_file_problem(path)) throw UserError(path, 0, option, "cannot open file (" + *why + ")");
}

void check_output_path(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UserError("command line", 0, option, "expected a file name");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw UserError(path, 0, option, "expected a file to write, got a directory");
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  if (!fs::is_directory(dir, ec)) throw UserError(path, 0, option, "cannot write: the directory '" + dir + "' does not exist");
  if (fs::exists(path, ec) ? access(path.c_str(), W_OK) != 0 : access(dir.c_str(), W_OK | X_OK) != 0)
    throw UserError(path, 0, option, "cannot write the file (permission denied)");
}

namespace {
/// The option a CLI11 message starts with ("--json: 1 required TEXT missing"), if any.
std::string leading_option(const std::string& message) {
  const std::size_t end = message.find_first_of(": ");
  return message.substr(0, end);
}
}  // namespace

CommandLineError describe_parse_error(const CLI::ParseError& e, const CLI::App& app) {
  const std::string message = e.what();
  // The subcommand the error belongs to, to point at its --help.
  std::string command = "clustersim";
  for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
  const std::string help = " (see " + command + " --help)";
  if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    if (message.rfind("A subcommand", 0) == 0 || message.rfind("Requires at least", 0) == 0) {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands({}))
        if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();  // not the hidden ones
      const std::vector<std::string> given = app.remaining();
      return {"", "expected a command, one of: " + names + (given.empty() ? "" : "; got '" + given.front() + "'")};
    }
    const std::string option = message.substr(0, message.find(" is required"));
    return {option, "missing: expected this " + std::string(option.rfind("-", 0) == 0 ? "option" : "argument") + help};
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // CLI11 lists them last first; an option among them is the likelier mistake.
    std::istringstream args(message.substr(message.find(": ") + 2));
    std::string word, first, option;
    while (args >> word) {
      first = word;
      if (word.rfind("-", 0) == 0) option = word;
    }
    if (!option.empty()) return {option, "unknown option" + help};
    return {"", "unexpected argument '" + first + "'" + help};
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    if (message.find("disallowed flag override") != std::string::npos) {
      std::string flag = leading_option(message);  // CLI11 names a flag without its dashes here
      if (flag.rfind("-", 0) != 0) flag = (flag.size() == 1 ? "-" : "--") + flag;
      return {flag, "expected no value: it is a flag (give it or leave it out)"};
    }
    if (message.rfind("Expected exactly", 0) == 0) {
      const std::size_t to = message.find(" to ");
      return {to == std::string::npos ? "" : message.substr(to + 4), "expected a value" + help};
    }
    return {leading_option(message), "expected a value" + help};
  }
  if (message.rfind("-", 0) == 0) return {leading_option(message), "invalid value" + help};
  return {"", "could not read the command line" + help};
}

Solver parse_solver(const std::string& text) {
  if (auto s = find_solver(text)) return *s;
  std::string names;
  for (const std::string& n : solver_names()) names += (names.empty() ? "" : ", ") + n;
  throw UserError("command line", 0, "--solver", "expected one of " + names + ", got '" + text + "'");
}

FoldMode parse_fold(const std::string& text) {
  for (FoldMode m : {FoldMode::exact, FoldMode::none, FoldMode::all, FoldMode::assume})
    if (text == to_string(m)) return m;
  throw UserError("command line", 0, "--fold", "expected exact, none, all or assume, got '" + text + "'");
}

FoldMode checked_fold(const ScenarioSpec& s, FoldMode asked, bool given) {
  const FoldMode fold = fold_under(s, asked);
  if (fold != asked && given)
    throw UserError("command line", 0, "--fold",
                    std::string("expected exact, none or all: the scenario ") +
                        (s.variability.varies() ? "declares variability" : "runs on GPUs of several models") +
                        ", which makes replicas unlike, and assume simulates replica 0 for all of them");
  return fold;
}

TpPlacement parse_placement(const std::string& text, FoldMode fold, const std::string& option) {
  const std::string what = option == "--cp-exchanges"     ? "CP exchanges"
                           : option == "--ep-all-to-alls" ? "EP all-to-alls"
                           : option == "--zero-collectives" ? "ZeRO collectives"
                                                          : "TP collectives";
  for (TpPlacement p : {TpPlacement::automatic, TpPlacement::alone, TpPlacement::in_place})
    if (text == to_string(p)) {
      if (p != TpPlacement::automatic && fold == FoldMode::assume)
        throw UserError("command line", 0, option,
                        "expected --fold exact, none or all as well: under assume " + what + " are always timed alone");
      return p;
    }
  throw UserError("command line", 0, option, "expected auto, alone or in-place, got '" + text + "'");
}

std::string catalog_override(const std::string& path) {
  check_input_path(path, "--catalog");
  // Absolute, since the scenario reads its paths relative to its own folder.
  return "catalog=" + std::filesystem::absolute(path).lexically_normal().string();
}

}  // namespace clustersim::cli
