#include "simulator/slurm_array.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

namespace fs = std::filesystem;

struct CommandOutput {
  bool started = false;  ///< false: the program was not found (or could not be run)
  int exit_code = -1;
  std::string text;      ///< stdout and stderr together
};

/// Runs argv[0] from PATH and collects what it prints; no shell, so paths need no quoting.
CommandOutput run_command(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);  // not found: the parent tells this from a program's own 127 by the empty output
  }
  close(fds[1]);
  CommandOutput out;
  char buf[4096];
  ssize_t got;
  while ((got = read(fds[0], buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR))
    if (got > 0) out.text.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  out.started = !(out.exit_code == 127 && out.text.empty());
  return out;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "(no message)" : line;
}

/// "0-3,5,7-9": the indices, ascending, as sbatch's --array reads them.
std::string array_spec(const std::vector<long>& indices) {
  std::string spec;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    spec += (spec.empty() ? "" : ",") +
            (j == i ? std::to_string(indices[i]) : fmt::format("{}-{}", indices[i], indices[j]));
    i = j + 1;
  }
  return spec;
}

std::string result_path(const std::string& dir, long index) { return fmt::format("{}/result-{}.json", dir, index); }

std::string shell_quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

UserError slurm_error(const std::string& what) { return UserError("command line", 0, "--slurm", what); }

/// The folder is ours when empty or when it holds this very manifest (a resumed run).
void claim_folder(const std::string& dir, const nlohmann::json& manifest) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw slurm_error("expected a folder that can be created and written; " + dir + ": " + ec.message());
  const std::string path = dir + "/manifest.json";
  if (fs::exists(path)) {
    nlohmann::json held;
    try {
      held = nlohmann::json::parse(read_input_file(path, "--slurm"));
    } catch (const nlohmann::json::exception&) {
      throw slurm_error(path + " is not a manifest clustersim wrote; give an empty or new folder");
    }
    if (held != manifest)
      throw slurm_error(dir + " holds the tasks of another search or sweep (its manifest.json differs); give an empty or new folder");
    return;
  }
  std::ofstream(path) << manifest.dump(1) << "\n";
  if (!fs::exists(path)) throw slurm_error("expected a folder that can be written; cannot create " + path);
}

void write_job_script(const SlurmArrayOptions& o) {
  std::string command;
  for (const std::string& a : o.task_command) command += shell_quoted(a) + " ";
  std::ofstream(o.dir + "/job.sh") << "#!/bin/sh\n"
                                   << "# Written by clustersim: one task of the job array; its index picks the work from\n"
                                   << "# manifest.json and its result goes to result-<index>.json beside it.\n"
                                   << "exec " << command << "\"$SLURM_ARRAY_TASK_ID\"\n";
}

long results_present(const std::string& dir, long count) {
  long n = 0;
  for (long i = 0; i < count; ++i) n += fs::exists(result_path(dir, i));
  return n;
}

}  // namespace

std::string file_fingerprint(const std::string& path) { return text_fingerprint(read_input_file(path)); }

std::string text_fingerprint(const std::string& bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("{:016x}", h);
}

nlohmann::json read_slurm_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  try {
    return nlohmann::json::parse(read_input_file(path, "manifest"));
  } catch (const nlohmann::json::exception&) {
    throw UserError(path, 0, "manifest", "expected the JSON manifest clustersim wrote for this job array");
  }
}

void write_slurm_result(const std::string& dir, long index, const std::string& text) {
  const std::string path = result_path(dir, index), temporary = path + fmt::format(".{}.tmp", getpid());
  std::ofstream(temporary) << text;
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) throw std::runtime_error("cannot write " + path + ": " + ec.message());
}

SlurmArrayOutcome run_slurm_array(const SlurmArrayOptions& o, const nlohmann::json& manifest, long count,
                                  const std::function<void(long, long)>& progress) {
  claim_folder(o.dir, manifest);
  SlurmArrayOutcome out;
  std::vector<long> missing;
  for (long i = 0; i < count; ++i)
    if (!fs::exists(result_path(o.dir, i))) missing.push_back(i);
  out.reused = count - static_cast<long>(missing.size());
  out.submitted = static_cast<long>(missing.size());
  progress(out.reused, count);
  if (!missing.empty()) {
    write_job_script(o);
    std::vector<std::string> sbatch = {"sbatch", "--parsable", "--array=" + array_spec(missing), "--job-name=" + o.job_name,
                                       "--output=" + o.dir + "/log-%a.txt"};
    sbatch.insert(sbatch.end(), o.sbatch_options.begin(), o.sbatch_options.end());
    sbatch.push_back(o.dir + "/job.sh");
    const CommandOutput submitted = run_command(sbatch);
    if (!submitted.started) throw slurm_error("Slurm is not reachable: sbatch was not found on PATH");
    if (submitted.exit_code != 0) throw slurm_error("Slurm did not take the job array: " + first_line(submitted.text));
    out.job_id = first_line(submitted.text).substr(0, submitted.text.find(';'));
    // Wait until squeue no longer lists the array; it forgets a finished job after MinJobAge, which
    // is why "Invalid job id" also means done.
    for (;;) {
      progress(results_present(o.dir, count), count);
      const CommandOutput queue = run_command({"squeue", "-h", "-j", out.job_id, "-o", "%i"});
      const bool done = queue.exit_code == 0 ? queue.text.find_first_not_of(" \n") == std::string::npos
                                             : queue.text.find("Invalid job id") != std::string::npos;
      if (done) break;
      if (!queue.started || queue.exit_code != 0)
        throw slurm_error(fmt::format("Slurm stopped answering while job {} ran ({}); rerun with the same folder to resume",
                                      out.job_id, first_line(queue.text)));
      std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
    }
  }
  progress(results_present(o.dir, count), count);
  out.results.resize(static_cast<std::size_t>(count));
  for (long i = 0; i < count; ++i) {
    std::ifstream in(result_path(o.dir, i));
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    out.results[static_cast<std::size_t>(i)] = text.str();
  }
  return out;
}

}  // namespace clustersim
