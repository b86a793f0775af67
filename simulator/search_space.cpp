// The space search screens (search_space) and how a configuration in it is written: as --set lines
// for the engine's run, and as one line for the table.
#include <fmt/format.h>

#include <algorithm>

#include "simulator/search_screen.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

std::vector<int> powers_of_two(int up_to) {
  std::vector<int> out;
  for (int v = 1; v <= up_to; v *= 2) out.push_back(v);
  return out;
}

bool has(const std::vector<std::string>& vary, const char* d) { return std::find(vary.begin(), vary.end(), d) != vary.end(); }

const char* recompute_name(Recompute r) {
  return r == Recompute::none ? "none" : r == Recompute::selective ? "selective" : "full";
}

}  // namespace

const std::vector<std::string>& search_dimensions() {
  static const std::vector<std::string> dims{"tp", "pp", "dp", "cp", "ep", "vpp", "microbatch", "recompute", "zero", "schedule"};
  return dims;
}

std::vector<std::string> default_search_dimensions(const ScenarioSpec& s) {
  std::vector<std::string> dims = search_dimensions();
  // parallel.stage_gpus names each pipeline rank's GPU model, so it keeps its pp.
  if (!s.stage_gpus.empty()) dims.erase(std::find(dims.begin(), dims.end(), "pp"));
  return dims;
}

std::vector<std::string> Configuration::overrides() const {
  std::vector<std::string> out{
      "parallel.tp=" + std::to_string(tp), "parallel.pp=" + std::to_string(pp), "parallel.dp=" + std::to_string(dp),
      "parallel.cp=" + std::to_string(cp), "parallel.ep=" + std::to_string(ep),
      "parallel.virtual_stages=" + std::to_string(virtual_stages), "microbatch=" + std::to_string(microbatch),
      std::string("recompute=") + recompute_name(recompute), "parallel.zero_stage=" + std::to_string(zero_stage),
      std::string("parallel.distributed_optimizer=") + (zero_stage >= 1 ? "true" : "false"),
      "schedule=" + schedule->name()};
  return out;
}

std::string Configuration::text() const {
  return fmt::format("tp {} pp {} dp {}{}{} v {} mb {} {} zero {} {}", tp, pp, dp, cp > 1 ? fmt::format(" cp {}", cp) : "",
                     ep > 1 ? fmt::format(" ep {}", ep) : "", virtual_stages, microbatch, recompute_name(recompute),
                     zero_stage, schedule->name());
}

SearchSpace search_space(const ScenarioSpec& s, const std::vector<std::string>& vary) {
  SearchSpace out;
  const int gpus = s.gpus();
  const int node = s.cluster.node.gpus;
  auto fixed_or = [&](const char* dim, int own, std::vector<int> all) { return has(vary, dim) ? all : std::vector<int>{own}; };
  out.tp = fixed_or("tp", s.layout.tp, powers_of_two(std::min(node, gpus)));
  std::vector<int> divisors;
  for (int d = 1; d <= std::min(gpus, s.model.layers); ++d)
    if (gpus % d == 0) divisors.push_back(d);
  // parallel.stage_gpus names one GPU model per pipeline rank, so it fixes pp.
  const bool staged = !s.stage_gpus.empty();
  if (staged && has(vary, "pp"))
    throw UserError("command line", 0, "--vary",
                    fmt::format("expected dimensions without pp: the scenario's parallel.stage_gpus names the GPU models "
                                "of {} pipeline ranks, which fixes pp",
                                s.stage_gpus.size()));
  out.pp = fixed_or("pp", s.layout.pp, divisors);
  out.cp = fixed_or("cp", s.layout.cp, powers_of_two(std::min(16, gpus)));
  out.ep = fixed_or("ep", s.ep, s.model.moe ? powers_of_two(std::min(s.model.moe->routed_experts, gpus)) : std::vector<int>{1});
  out.virtual_stages = fixed_or("vpp", s.virtual_stages, {1, 2, 3, 4, 6, 8});
  std::vector<int> micro;
  for (int b : powers_of_two(16))
    if (b <= s.global_batch) micro.push_back(b);
  out.microbatch = fixed_or("microbatch", s.microbatch, micro);
  out.zero_stage = fixed_or("zero", s.zero_stage, {0, 1, 2, 3});
  out.recompute = has(vary, "recompute") ? std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full}
                                         : std::vector<Recompute>{s.recompute};
  out.schedules = has(vary, "schedule") ? all_schedules() : std::vector<const Schedule*>{s.schedule};
  // dp is what the GPUs leave: varying it alone changes nothing, so it is varied through pp (and tp, cp).
  if (has(vary, "dp") && !has(vary, "pp") && !staged) out.pp = divisors;
  return out;
}

}  // namespace clustersim
