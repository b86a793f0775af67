#include "simulator/cli/search_verify.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "simulator/training_run.hpp"

namespace clustersim::cli {

std::string verify_one(const std::string& scenario, const std::vector<std::string>& overrides) {
  nlohmann::json j;
  try {
    const ScenarioSpec s = load_scenario(scenario, overrides);
    const RunReport r = run_training(s, false);
    double memory = 0, exposed = 0, bubble = 0;
    for (const StageReport& st : r.stages) {
      memory = std::max(memory, static_cast<double>(st.memory.total));
      const RankBreakdown& b = st.time;
      exposed = std::max(exposed, b.tp_s + b.cp_s + b.ep_s + b.pp_exposed_s + b.dp_exposed_s);
      bubble = std::max(bubble, b.bubble_s);
    }
    j = {{"ok", true}, {"iteration_s", r.iteration_s}, {"tokens_per_s", r.tokens_per_s}, {"mfu", r.mfu},
         {"memory_bytes", memory}, {"exposed_comm_s", exposed}, {"bubble_s", bubble}};
  } catch (const std::exception& e) {
    j = {{"ok", false}, {"why", e.what()}};
  }
  return j.dump();
}

std::vector<std::string> configuration_overrides(const std::vector<std::string>& base, const Configuration& c) {
  std::vector<std::string> overrides = base;
  for (const std::string& x : c.overrides()) overrides.push_back(x);
  return overrides;
}

Verified verified_from(const ScreenPrediction& screen, const std::string& text, const std::string& failed) {
  Verified v;
  v.screen = screen;
  if (text.empty()) {
    v.why = failed;
    return v;
  }
  const nlohmann::json j = nlohmann::json::parse(text);
  v.ok = j["ok"].get<bool>();
  if (!v.ok) {
    v.why = j["why"].get<std::string>();
  } else {
    v.iteration_s = j["iteration_s"], v.tokens_per_s = j["tokens_per_s"], v.mfu = j["mfu"];
    v.memory_bytes = j["memory_bytes"], v.exposed_comm_s = j["exposed_comm_s"], v.bubble_s = j["bubble_s"];
  }
  return v;
}

/// Runs every configuration in its own forked child, `jobs` at a time; results in input order.
std::vector<Verified> verify(const std::string& scenario, const std::vector<std::string>& overrides,
                             const std::vector<ScreenPrediction>& top, int jobs, Progress& bar) {
  std::vector<Verified> out(top.size());
  struct Child {
    pid_t pid;
    int fd;
    std::size_t index;
    std::string text;
  };
  std::vector<Child> running;
  std::size_t next = 0, finished = 0;
  std::cout.flush();
  while (finished < top.size()) {
    while (next < top.size() && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        close(fds[0]);
        const std::string text = verify_one(scenario, configuration_overrides(overrides, top[next].config));
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
      const bool exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      out[c.index] = verified_from(top[c.index], exited ? c.text : "", "the engine's child process failed");
      bar.update(static_cast<long>(++finished), static_cast<long>(top.size()));
      running.erase(running.begin() + static_cast<long>(i));
      polls.erase(polls.begin() + static_cast<long>(i));
    }
  }
  return out;
}

std::string no_configuration(const ScreenResult& r) {
  // The last rule that removed any: it removed the last survivors of the rules before it.
  const ScreenRemoval* last = nullptr;
  for (const ScreenRemoval& rm : r.removed)
    if (rm.count > 0) last = &rm;
  std::string counts;
  for (const ScreenRemoval& rm : r.removed)
    if (rm.count > 0) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", rm.rule, rm.count);
  return fmt::format("expected at least one valid configuration among {}; {} removed the last of them (e.g. {}); removed by: {}",
                     r.candidates, last ? last->rule : "nothing", last ? last->example : "", counts);
}

nlohmann::ordered_json row_json(const Verified& v) {
  const Configuration& c = v.screen.config;
  nlohmann::ordered_json j{{"configuration", c.text()}, {"tp", c.tp}, {"pp", c.pp}, {"dp", c.dp}, {"cp", c.cp}, {"ep", c.ep},
                           {"virtual_stages", c.virtual_stages}, {"microbatch", c.microbatch},
                           {"recompute", recompute_text(c.recompute, {})}, {"zero_stage", c.zero_stage},
                           {"schedule", c.schedule->name()},
                           {"screen", {{"iteration_s", v.screen.iteration_s}, {"tokens_per_s", v.screen.tokens_per_s},
                                       {"mfu", v.screen.mfu}, {"memory_bytes", v.screen.memory_bytes},
                                       {"exposed_comm_s", v.screen.exposed_comm_s}, {"bubble_s", v.screen.bubble_s}}}};
  if (v.ok)
    j["engine"] = {{"iteration_s", v.iteration_s}, {"tokens_per_s", v.tokens_per_s}, {"mfu", v.mfu},
                   {"memory_bytes", v.memory_bytes}, {"exposed_comm_s", v.exposed_comm_s}, {"bubble_s", v.bubble_s}};
  else
    j["engine"] = {{"why", v.why}};
  return j;
}

}  // namespace clustersim::cli
