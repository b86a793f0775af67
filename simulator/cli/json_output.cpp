// What every --json document shares: its header, the resolved scenario, and where it is written.
#include <iostream>

#include "simulator/cli/commands.hpp"
#include "simulator/training_run.hpp"
#include "workloads/memory_model.hpp"

namespace clustersim::cli {

nlohmann::ordered_json json_header(const std::string& command) {
  nlohmann::ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["clustersim_version"] = kVersion;
  j["command"] = command;
  return j;
}

nlohmann::ordered_json json_document(const std::string& command, nlohmann::ordered_json config) {
  nlohmann::ordered_json j = json_header(command);
  j["config"] = std::move(config);
  return j;
}

nlohmann::ordered_json scenario_config_json(const ScenarioSpec& s) {
  const ParallelLayout& l = s.layout;
  nlohmann::ordered_json c;
  c["scenario"] = s.name;
  c["file"] = s.file;
  c["model"] = s.model.name;
  c["cluster"] = s.cluster.name;
  c["cluster_file"] = s.cluster_file;
  c["cluster_overrides"] = s.cluster_overrides;
  c["gpu"] = s.gpu.name;
  c["catalog"] = s.catalog_file;
  c["gpus"] = s.gpus();
  c["tp"] = l.tp;
  c["pp"] = l.pp;
  c["dp"] = l.dp;
  c["cp"] = l.cp;
  c["ep"] = s.ep;
  c["virtual_stages"] = s.virtual_stages;
  c["schedule"] = s.schedule_name;
  c["microbatch"] = s.microbatch;
  c["global_batch"] = s.global_batch;
  c["microbatches"] = s.microbatches();
  c["precision"] = s.precision;
  c["recompute"] = recompute_text(s.recompute, s.recompute_modules);
  c["sequence_parallel"] = s.sequence_parallel;
  c["zero_stage"] = s.zero_stage;
  c["grad_reduce_dtype"] = s.gradient_reduce_dtype();
  c["optimizer_dtype"] = s.optimizer_dtype;
  c["fp8_param_gather"] = s.fp8_param_gather;
  c["overlap_param_gather"] = s.overlap_param_gather;
  c["fabric_sharing"] = to_string(s.cluster.fabric.sharing);
  c["collectives_algorithm"] = s.collectives_algorithm();
  c["calibration"] = s.calibration ? nlohmann::ordered_json(s.calibration->file) : nlohmann::ordered_json();
  return c;
}

nlohmann::ordered_json stage_json(const StageReport& st) {
  const RankBreakdown& b = st.time;
  return {{"stage", st.pipeline_rank},
          {"gpu", st.gpu},
          {"memory_bytes",
           {{"weights", st.memory.weights},
            {"gradients", st.memory.gradients},
            {"optimizer", st.memory.optimizer},
            {"activations", st.memory.activations},
            {"recompute_workspace", st.memory.recompute_workspace},
            {"total", st.memory.total}}},
          {"time_s",
           {{"compute", b.compute_s},
            {"recompute", b.recompute_s},
            {"tp_exposed", b.tp_s},
            {"cp_exposed", b.cp_s},
            {"ep_exposed", b.ep_s},
            {"expert_imbalance", b.imbalance_s},
            {"pp_exposed", b.pp_exposed_s},
            {"dp_exposed", b.dp_exposed_s},
            {"optimizer", b.optimizer_s},
            {"bubble", b.bubble_s},
            {"other_idle", b.other_idle_s}}}};
}

bool json_to_stdout(const std::string& path) { return path == "-" || path == "/dev/stdout"; }

void check_json_path(const std::string& path) {
  if (!json_to_stdout(path)) check_output_path(path, "--json");
}

void write_json(const std::string& path, const nlohmann::ordered_json& document) {
  const std::string text = document.dump(2) + "\n";
  // Through std::cout, which main holds until the command has finished: an error still leaves
  // stdout empty.
  if (json_to_stdout(path)) std::cout << text;
  else write_file(path, text, "--json");
}

}  // namespace clustersim::cli
