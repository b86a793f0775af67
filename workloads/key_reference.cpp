#include "workloads/key_reference.hpp"

#include <cstring>

#include "workloads/key_aliases.hpp"

namespace clustersim {

// Units as the loaders read them (the ranges are in the folder READMEs); defaults as the loaders
// fill them in. The key sets are checked against the loaders by test_key_reference.
const std::vector<KeyReference>& key_reference() {
  static const std::vector<KeyReference> table{
      // A scenario (workloads/scenario.cpp). Paths are relative to the scenario file.
      {"scenario", "name", "text", ""},
      {"scenario", "description", "text", "none"},
      {"scenario", "cluster", "path of a cluster file", ""},
      {"scenario", "catalog", "path of a GPU catalog", "gpus.yaml beside the cluster file, else in the folder above it; --catalog FILE"},
      {"scenario", "model", "path of a model file", ""},
      {"scenario", "gpus", "GPUs (the cluster's first N)", ""},
      {"scenario", "parallel", "mapping", ""},
      {"scenario", "parallel.tp", "ranks (tensor parallel)", "one of tp, pp, dp may be left out: gpus / (the other two x cp)"},
      {"scenario", "parallel.pp", "ranks (pipeline stages)", "one of tp, pp, dp may be left out"},
      {"scenario", "parallel.dp", "ranks (data parallel)", "one of tp, pp, dp may be left out"},
      {"scenario", "parallel.cp", "ranks (context parallel)", "1"},
      {"scenario", "parallel.ep", "ranks (expert parallel, within dp)", "1"},
      {"scenario", "parallel.cp_comm", "p2p or all_gather", "p2p"},
      {"scenario", "parallel.virtual_stages", "model chunks per pipeline rank", "1"},
      {"scenario", "parallel.stage_layers", "layers per stage, a list", "an even split"},
      {"scenario", "parallel.decoder_first_pipeline_num_layers", "layers", "an even split"},
      {"scenario", "parallel.decoder_last_pipeline_num_layers", "layers", "an even split"},
      {"scenario", "parallel.account_for_embedding_in_pipeline_split", "boolean", "false"},
      {"scenario", "parallel.account_for_loss_in_pipeline_split", "boolean", "false"},
      {"scenario", "parallel.sequence_parallel", "boolean", "false"},
      {"scenario", "parallel.distributed_optimizer", "boolean (ZeRO-1)", "false"},
      {"scenario", "parallel.zero_stage", "0 to 3", "1 with the distributed optimizer, else 0"},
      {"scenario", "parallel.reshard_after_forward", "boolean (zero_stage 3 only)", "true"},
      {"scenario", "parallel.overlap_grad_reduce", "boolean", "true"},
      {"scenario", "parallel.grad_reduce_dtype", "fp32, bf16 or fp16", "fp16 under precision fp16, else fp32"},
      {"scenario", "parallel.optimizer_dtype", "fp32 or bf16 (Adam's parameter copy and moments)", "fp32"},
      {"scenario", "parallel.fp8_param_gather", "boolean (an 8-bit precision and the distributed optimizer or ZeRO)", "false"},
      {"scenario", "parallel.overlap_param_gather", "boolean (the distributed optimizer, ZeRO 1 or 2)", "false"},
      {"scenario", "parallel.overlap_p2p_comm", "boolean", "true"},
      {"scenario", "parallel.overlap_tp_backward", "boolean", "true"},
      {"scenario", "parallel.gradient_accumulation_fusion", "boolean", "true"},
      {"scenario", "parallel.order", "rank order, e.g. tp-cp-dp-pp", "tp-cp-dp-pp (Megatron-LM's)"},
      {"scenario", "parallel.stage_gpus", "GPU models, one per pipeline rank (a heterogeneous cluster)", "the nodes' own, in order"},
      {"scenario", "schedule", "a schedule from clustersim list", ""},
      {"scenario", "global_batch", "sequences per iteration", ""},
      {"scenario", "microbatch", "sequences per microbatch", ""},
      {"scenario", "precision", "a datatype of the GPU (bf16, fp8, ...)", ""},
      {"scenario", "recompute", "none, selective, full or {modules: [...]}", ""},
      {"scenario", "recompute.modules", "module names (core_attn, mlp, ...; clustersim list)", ""},
      {"scenario", "attention", "flash or unfused", "flash"},
      {"scenario", "moe", "mapping (MoE models only)", "none"},
      {"scenario", "moe.routing", "uniform, skewed or random", "uniform"},
      {"scenario", "moe.hot_factor", "ratio (skewed routing)", "none"},
      {"scenario", "moe.seed", "integer (random routing)", "0"},
      {"scenario", "moe.dispatch", "all_to_all or deepep", "all_to_all"},
      {"scenario", "collectives", "mapping", "none"},
      {"scenario", "collectives.algorithm", "nccl, best or an algorithm to pin (ring, tree, nvls, ...; clustersim list)", "nccl"},
      {"scenario", "calibration", "path of a calibration file", "none"},
      {"scenario", "variability", "mapping (README, Variability)", "none"},
      {"scenario", "variability.seed", "integer", "0"},
      {"scenario", "variability.gpu_speed", "mapping: a distribution of speeds", "none"},
      {"scenario", "variability.gpu_speed.distribution", "normal, lognormal or empirical", ""},
      {"scenario", "variability.gpu_speed.mean", "speed (normal)", "1"},
      {"scenario", "variability.gpu_speed.stddev", "speed (normal)", ""},
      {"scenario", "variability.gpu_speed.median", "speed (lognormal)", "1"},
      {"scenario", "variability.gpu_speed.sigma", "log of speed (lognormal)", ""},
      {"scenario", "variability.gpu_speed.values", "speeds, a list (empirical)", ""},
      {"scenario", "variability.gpu_speed.source", "text", "none"},
      {"scenario", "variability.gpus", "mapping of GPU index to speed", "none"},
      {"scenario", "variability.nodes", "mapping of node index to speed", "none"},
      {"scenario", "variability.links", "mapping of link name to a fraction of its bandwidth", "none"},
      {"scenario", "variability.failed_links", "link names, a list", "none"},
      {"scenario", "variability.flapping_links", "links down for a while every period, a list", "none"},
      {"scenario", "variability.flapping_links[].link", "a link name", ""},
      {"scenario", "variability.flapping_links[].down_s", "s, each time it is down", ""},
      {"scenario", "variability.flapping_links[].period_s", "s, from one going down to the next (> down_s)", ""},
      {"scenario", "variability.flapping_links[].note", "text", "none"},
      {"scenario", "reliability", "mapping (README, Faults and goodput)", "none"},
      {"scenario", "reliability.components", "mapping of component kinds", ""},
      {"scenario", "reliability.components.gpu", "{mtbf_hours, source}", "none"},
      {"scenario", "reliability.components.node", "{mtbf_hours, source}", "none"},
      {"scenario", "reliability.components.nic", "{mtbf_hours, source}", "none"},
      {"scenario", "reliability.components.switch", "{mtbf_hours, source}", "none"},
      {"scenario", "reliability.components.link", "{mtbf_hours, source}", "none"},
      {"scenario", "reliability.components.software", "{mtbf_hours, source}", "none"},
      {"scenario", "reliability.components.KIND.mtbf_hours", "hours between failures of one component", ""},
      {"scenario", "reliability.components.KIND.source", "text", ""},
      {"scenario", "reliability.detection_s", "s", ""},
      {"scenario", "reliability.relaunch_s", "s", ""},
      {"scenario", "reliability.checkpoint", "mapping", "no checkpoints"},
      {"scenario", "reliability.checkpoint.interval_s", "s of training between checkpoints", ""},

      // A model (workloads/model.cpp).
      {"model", "name", "text", ""},
      {"model", "description", "text", "none"},
      {"model", "source", "text", "none"},
      {"model", "layers", "layers", ""},
      {"model", "hidden", "elements", ""},
      {"model", "heads", "heads", ""},
      {"model", "kv_heads", "heads (grouped-query attention)", "heads"},
      {"model", "ffn_hidden", "elements", "required unless every layer is MoE (then refused)"},
      {"model", "ffn", "gelu, swiglu or squared_relu", ""},
      {"model", "vocab", "tokens", ""},
      {"model", "seq_len", "tokens", ""},
      {"model", "tied_embeddings", "boolean", ""},
      {"model", "attention", "mapping", "standard (MHA/GQA from heads and kv_heads)"},
      {"model", "attention.type", "standard or mla", ""},
      {"model", "attention.q_lora_rank", "elements (mla)", ""},
      {"model", "attention.kv_lora_rank", "elements (mla)", ""},
      {"model", "attention.qk_nope_head_dim", "elements (mla)", ""},
      {"model", "attention.qk_rope_head_dim", "elements (mla)", ""},
      {"model", "attention.v_head_dim", "elements (mla)", ""},
      {"model", "moe", "mapping", "none (dense)"},
      {"model", "moe.routed_experts", "experts", ""},
      {"model", "moe.shared_experts", "experts", "0"},
      {"model", "moe.top_k", "experts per token", ""},
      {"model", "moe.expert_ffn_hidden", "elements", ""},
      {"model", "moe.dense_layers", "layers (the first ones)", "0"},
      {"model", "moe.capacity_factor", "ratio", "dropless"},
      {"model", "moe.dropless", "true", "true"},
      {"model", "moe.node_limit", "nodes a token's experts span", "none"},
      {"model", "encoder", "mapping (a vision encoder)", "none"},
      {"model", "encoder.name", "text", ""},
      {"model", "encoder.layers", "layers", ""},
      {"model", "encoder.hidden", "elements", ""},
      {"model", "encoder.heads", "heads", ""},
      {"model", "encoder.ffn_hidden", "elements", ""},
      {"model", "encoder.ffn", "gelu, swiglu or squared_relu", ""},
      {"model", "encoder.tokens", "tokens per sample", ""},
      {"model", "encoder.placement", "first_stage or own_stage", "first_stage"},
      {"model", "mtp_depth", "modules (multi-token prediction)", "0"},

      // A cluster (topologies/cluster_spec.cpp; ranges in topologies/README.md).
      {"cluster", "name", "text", ""},
      {"cluster", "description", "text", "none"},
      {"cluster", "gpu", "a GPU of the catalog", ""},
      {"cluster", "node_groups", "nodes of other GPU models, a list (a heterogeneous cluster)", "none: every node holds gpu"},
      {"cluster", "node_groups[].gpu", "a GPU of the catalog, not the cluster's gpu", ""},
      {"cluster", "node_groups[].nodes", "node ids and ranges (\"8-15\"), one or a list", ""},
      {"cluster", "node_groups[].note", "text", "none"},
      {"cluster", "link_types", "mapping of link type names", ""},
      {"cluster", "link_types.NAME.bandwidth_efficiency", "fraction of line rate, (0, 1]", ""},
      {"cluster", "link_types.NAME.note", "text (its source)", "none"},
      {"cluster", "node", "mapping", ""},
      {"cluster", "node.gpus", "GPUs per node", ""},
      {"cluster", "node.scale_up", "mapping", ""},
      {"cluster", "node.scale_up.topology", "nvswitch or full_mesh", ""},
      {"cluster", "node.scale_up.link_type", "a link_types name", ""},
      {"cluster", "node.scale_up.bandwidth_GBps", "GB/s per GPU per direction", ""},
      {"cluster", "node.scale_up.latency_us", "us", ""},
      {"cluster", "node.scale_up.nvls", "boolean (NVLink SHARP)", "false"},
      {"cluster", "node.scale_up.second_level", "mapping (two-level NVSwitch, NVL576-style)", "none: one NVSwitch"},
      {"cluster", "node.scale_up.second_level.domain_gpus", "GPUs per first-level NVSwitch", ""},
      {"cluster", "node.scale_up.second_level.oversubscription", "down:up of a first-level switch", "1"},
      {"cluster", "node.nics", "mapping", ""},
      {"cluster", "node.nics.count", "NICs per node", ""},
      {"cluster", "node.nics.ports", "ports per NIC", "1"},
      {"cluster", "node.nics.link_type", "a link_types name", ""},
      {"cluster", "node.nics.bandwidth_Gbps", "Gb/s per port per direction", ""},
      {"cluster", "node.nics.latency_us", "us", ""},
      {"cluster", "node.nics.gpus", "the GPU index each NIC sits next to, a list", ""},
      {"cluster", "node.pcie", "mapping", ""},
      {"cluster", "node.pcie.link_type", "a link_types name", ""},
      {"cluster", "node.pcie.bandwidth_GBps", "GB/s per direction", ""},
      {"cluster", "node.pcie.latency_us", "us", ""},
      {"cluster", "fabric", "mapping", ""},
      {"cluster", "fabric.type", "a fabric from clustersim list", ""},
      {"cluster", "fabric.nodes", "nodes", ""},
      {"cluster", "fabric.nodes_per_unit", "nodes per scalable unit (rail_optimized)", "required on rail_optimized, refused on the others"},
      {"cluster", "fabric.planes", "planes, 1 to 8 (multi_plane)", ""},
      {"cluster", "fabric.dims", "routers per dimension, a list (torus)", ""},
      {"cluster", "fabric.groups", "groups (dragonfly)", ""},
      {"cluster", "fabric.routers_per_group", "routers (dragonfly)", ""},
      {"cluster", "fabric.global_links", "links per router (dragonfly)", ""},
      {"cluster", "fabric.routing", "ecmp, adaptive, spray or valiant (dragonfly)", "ecmp"},
      {"cluster", "fabric.qps_per_connection", "integer 1-64, each queue pair hashed (routing: ecmp)", "1"},
      {"cluster", "fabric.sharing", "equal or latency (how a full link splits between its flows)", "equal"},
      {"cluster", "fabric.sharp", "boolean: the switches reduce in the network (InfiniBand SHARP; collnet_direct, collnet_chain)", "false"},
      {"cluster", "fabric.link_type", "a link_types name (switch to switch)", ""},
      {"cluster", "fabric.bandwidth_Gbps", "Gb/s per direction", ""},
      {"cluster", "fabric.latency_us", "us", ""},
      {"cluster", "fabric.tiers", "switch tiers from the leaves up, a list", "none"},
      {"cluster", "fabric.tiers[].radix", "ports", ""},
      {"cluster", "fabric.tiers[].oversubscription", "down:up ports", "1"},
      {"cluster", "fabric.tiers[].switches", "switches per pod (spines) or per plane (cores), tiers above the leaves", "the fewest that fit"},
      {"cluster", "storage", "mapping (where checkpoints go)", "none"},
      {"cluster", "storage.description", "text", "none"},
      {"cluster", "storage.write_GBps", "GB/s, the whole system", ""},
      {"cluster", "storage.read_GBps", "GB/s, the whole system", "write_GBps"},
      {"cluster", "storage.per_node_GBps", "GB/s per node", ""},
      {"cluster", "storage.source", "text", ""},
  };
  return table;
}

std::string key_aliases_of(const KeyReference& k) {
  const std::string file = k.file, key = k.key;
  const std::vector<KeyAlias>* aliases = nullptr;
  std::string canonical = key;
  if (file == "model") aliases = &model_key_aliases();
  if (file == "scenario" && key.rfind("parallel.", 0) == 0) aliases = &parallel_key_aliases(), canonical = key.substr(9);
  else if (file == "scenario") aliases = &scenario_key_aliases();
  std::string out;
  if (aliases)
    for (const KeyAlias& a : *aliases)
      if (canonical == a.canonical) out += (out.empty() ? "" : ", ") + std::string(a.alias) + " (" + a.source + ")";
  return out;
}

std::string key_reference_markdown() {
  std::string out;
  const char* last = "";
  for (const KeyReference& k : key_reference()) {
    if (std::strcmp(k.file, last) != 0) {
      out += std::string(out.empty() ? "" : "\n") + "| " + k.file + " key | unit / values | default | alias (source) |\n|---|---|---|---|\n";
      last = k.file;
    }
    const std::string aliases = key_aliases_of(k);
    out += std::string("| `") + k.key + "` | " + k.unit + " | " + (*k.default_value ? k.default_value : "required") + " | " + aliases +
           " |\n";
  }
  return out;
}

}  // namespace clustersim
