#include "simulator/cli/search_verify.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/cli/commands.hpp"
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
  const std::vector<std::optional<std::string>> texts = run_in_children(
      top.size(), [&](std::size_t k) { return verify_one(scenario, configuration_overrides(overrides, top[k].config)); }, jobs,
      [&](std::size_t finished) { bar.update(static_cast<long>(finished), static_cast<long>(top.size())); });
  std::vector<Verified> out;
  for (std::size_t k = 0; k < top.size(); ++k)
    out.push_back(verified_from(top[k], texts[k].value_or(""), "the engine's child process failed"));
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
