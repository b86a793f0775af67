#pragma once
// One transformer layer as steps of a GPU's compute stream: compute runs between the blocking
// collectives Megatron places in it (TP, and for an MoE layer the expert-parallel dispatch and
// combine). plan_iteration stacks these into pipeline stages.
#include <vector>

#include "workloads/compute_model.hpp"
#include "workloads/iteration_plan.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

struct LayerSegments {
  std::vector<Segment> forward, backward_input, backward_weight, recompute;
  double params_on_gpu = 0;         // weights that data parallelism reduces (attention, dense FFN, router, shared)
  double expert_params_on_gpu = 0;  // routed experts on this GPU, reduced over expert data parallelism
};

/// Context parallelism's exchanges, as the plan set them up: ring attention's step traffic forward
/// (K and V) and backward (K, V and their gradients), indices into IterationPlan::traffic; or, for
/// all-gather CP, the bytes of the gathered K and V (the reduce-scatter of their gradients mirrors it).
struct ContextParallelPlan {
  int ring_forward = -1, ring_backward = -1;
  Bytes gathered_kv_bytes = 0;
};

/// A TP collective step on the compute stream (kind tp_comm), hidden under hidden_s of compute
/// that runs beside it and, in a whole backward, hidden_by_weight_s of weight gradient.
Segment tp_collective(Op op, const std::string& label, Bytes bytes, Seconds hidden_s = 0, Seconds hidden_by_weight_s = 0);

LayerSegments dense_layer_segments(const ScenarioSpec& s, const KernelTable* kernels, const ContextParallelPlan& cp = {});

/// The all-to-alls of an MoE layer, as indices into IterationPlan::traffic: forward dispatch and
/// combine; in backward the combine's gradient travels like a dispatch (in BF16, which may differ
/// from the forward dispatch's FP8) and the dispatch's gradient like the combine.
struct MoeTrafficIds {
  int dispatch = -1, combine = -1, dispatch_shaped_grad = -1;
};
/// Token-expert pairs per GPU: what the representative GPU computes (the group's mean) and what
/// the busiest GPU of its expert-parallel group computes, whom every all-to-all waits for.
struct ExpertRows {
  double own = 0, busiest = 0;
};
LayerSegments moe_layer_segments(const ScenarioSpec& s, const KernelTable* kernels, const MoeTrafficIds& traffic,
                                 ExpertRows rows, const ContextParallelPlan& cp = {});

/// One multi-token prediction module (ModelSpec::mtp_depth) on the last pipeline stage, per
/// microbatch: the norms on the hidden state and on the next token's embedding, the projection M_k
/// (2h -> h, split over tp), `block` (the segments of a layer like the model's last, with its own
/// recompute), the norm before the shared output head, the head's logits and cross-entropy.
/// Backward mirrors it; `recompute` is the block's. Its TP collectives are the block's: the
/// projection's and the extra head pass's are not modelled (DeepSeek-V3 runs tp 1).
LayerSegments mtp_module_segments(const ScenarioSpec& s, const KernelTable* kernels, const LayerSegments& block);

}  // namespace clustersim
