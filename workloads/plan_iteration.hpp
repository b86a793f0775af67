#pragma once
// Builds the iteration plan of a scenario: each model stage's forward and backward per microbatch
// as timed compute steps (compute model) and blocking TP collectives (Megatron's placement), the
// activations sent between stages, the gradients reduced across data parallelism.
#include "workloads/compute_model.hpp"
#include "workloads/iteration_plan.hpp"
#include "workloads/scenario.hpp"

namespace clustersim {

/// Megatron's tensor-parallel collectives in one layer. Without sequence parallelism: an all-reduce
/// after the attention output and after the FFN down projection (forward), and after the QKV and
/// FFN-up input gradients (backward). With it: an all-gather before QKV and before the FFN, a
/// reduce-scatter after the attention output and after the FFN (forward), mirrored in backward.
/// Each moves the layer's activations, microbatch x seq_len x hidden x 2 bytes.
///
/// Recompute: full repeats the layers' forward (with its collectives) before their backward;
/// selective repeats the attention core. Byte counts sent between stages are the layer output
/// split over TP (Megatron scatters it and gathers it again on the receiver). Gradients are
/// reduced in fp32 (4 B per parameter), parameters gathered in 16 bits. With tied embeddings on
/// several stages, the first and last stage all-reduce the embedding's gradient before the step.
IterationPlan plan_iteration(const ScenarioSpec& scenario, const KernelTable* kernels = nullptr);

}  // namespace clustersim
