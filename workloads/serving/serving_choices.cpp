#include "workloads/serving/serving_choices.hpp"

namespace clustersim {

const std::vector<ServingChoice>& serving_choices() {
  static const std::vector<ServingChoice> table = {
      {"parallel.dispatch", "all_to_all", "every token-expert copy to its expert's GPU in 2 B (the default)"},
      {"parallel.dispatch", "deepep",
       "DeepEP's kernels: a token once to each other node it needs, then NVLink to its experts' GPUs; FP8 out under an 8-bit precision"},
      {"kv_cache.dtype", "bf16", "2 B a KV value (the default)"},
      {"kv_cache.dtype", "fp16", "2 B a KV value"},
      {"kv_cache.dtype", "fp8", "1 B a KV value: twice the tokens in the same blocks"},
      {"scheduler.priority", "decode", "running decodes first, prefill chunks fill the token budget (Sarathi-Serve's stall-free; the default)"},
      {"scheduler.priority", "prefill", "waiting prompts first, decodes with what is left (vLLM v0's)"},
      {"scheduler.preemption", "recompute", "a preempted request frees its blocks and is prefilled again (the default)"},
      {"scheduler.preemption", "swap", "its blocks are copied to host memory over PCIe and back; recompute when the swap space is full"},
      {"requests.arrival", "poisson", "exponential gaps at rate_per_s"},
      {"requests.arrival", "gamma", "gamma gaps at rate_per_s with coefficient of variation cv (bursty above 1)"},
      {"requests.arrival", "trace", "each request's arrival and tokens from a CSV or JSON Lines file"},
      {"speculative.method", "draft", "a draft model's sequential decode steps propose the tokens"},
      {"speculative.method", "mtp", "multi-token-prediction modules (a target layer and the output layer each) propose them"},
      {"router", "round_robin", "each pool's replicas in turn (the default)"},
      {"router", "least_loaded", "the replica with the fewest requests queued, running or on their way"},
      {"router", "kv_aware", "a replica holding the request's shared prefix, then the most free KV blocks"},
  };
  return table;
}

std::vector<std::string> serving_choice_names(const std::string& key) {
  std::vector<std::string> out;
  for (const ServingChoice& c : serving_choices())
    if (c.key == key) out.push_back(c.name);
  return out;
}

}  // namespace clustersim
