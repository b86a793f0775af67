#pragma once
// GPU memory of one pipeline stage in Megatron-style training: weights, gradients and optimizer
// state from the parameters on the rank, and activations after Korthikanti et al., "Reducing
// Activation Recomputation in Large Transformer Models" (2022), Section 4.
//
// Activations are 16-bit (2 B/element) and dropout masks 1 B/element, as in the paper. For GPT
// shapes (GELU, ffn_hidden = 4h, kv_heads = heads) a layer stores exactly the paper's
//   s b h (10 + 24/t) + 5 a s^2 b / t      tensor parallel (t = 1: s b h (34 + 5 a s / h))
//   s b h 34/t + 5 a s^2 b / t              tensor + sequence parallel
// The 24 s b h split over t is Q, K (4), V (2), the attention projection's input (2) and the FFN's
// inner activations (8 + 8). Other shapes scale those terms: K and V by kv_heads (one replica per
// rank once t > kv_heads), the FFN by ffn_hidden f; SwiGLU keeps gate and up (4 s b f) and the down
// projection's input (2 s b f). The 10 s b h kept whole without sequence parallelism is the two
// LayerNorm inputs, the QKV and FFN inputs and two dropout masks. With flash attention the
// 5 a s^2 b scores are never stored (ActivationLayout::flash_attention). Not modelled: training
// without dropout (no masks).
#include "topologies/units.hpp"
#include "workloads/model.hpp"

namespace clustersim {

enum class Recompute {
  none,       // store everything
  selective,  // recompute the attention core (scores, softmax, dropout): drops the 5 a s^2 b term
  full,       // store only each layer's input (2 s b h, split over t with sequence parallelism)
};

/// Bytes of activations one transformer layer keeps for one microbatch on one tensor-parallel
/// rank until its backward pass.
Bytes activation_bytes_per_layer(const ModelSpec& m, int microbatch, int tensor_parallel, bool sequence_parallel,
                                 Recompute recompute);

/// Mixed-precision Adam as Megatron-LM keeps it (bf16 or fp16 params, fp32 grads; the Megatron
/// Core distributed-optimizer guide: 18 B/param, or 6 + 12/d with the distributed optimizer):
inline constexpr double kWeightBytesPerParam = 2;      // 16-bit model weights
inline constexpr double kGradientBytesPerParam = 4;    // fp32 main grads (accumulation and all-reduce in fp32)
inline constexpr double kOptimizerBytesPerParam = 12;  // fp32 master weights + Adam m + Adam v

struct StateBytes {
  Bytes weights = 0;
  Bytes gradients = 0;
  Bytes optimizer = 0;
  Bytes total() const { return weights + gradients + optimizer; }
};

/// The state for `params_on_rank` parameters. ZeRO-1 (Megatron's distributed optimizer) shards only
/// the 12 B of optimizer state over the data-parallel ranks; weights and grads stay whole.
StateBytes state_bytes(double params_on_rank, int data_parallel, bool distributed_optimizer);
/// The same under a ZeRO stage (Rajbhandari et al. 2020), d = data_parallel: stage 1 shards the
/// optimizer state (2 + 4 + 12/d B/param), 2 the gradients too (2 + 4/d + 12/d), 3 the 16-bit
/// weights as well ((2 + 4 + 12)/d); 0 shards nothing.
StateBytes zero_state_bytes(double params_on_rank, int data_parallel, int zero_stage);

/// How each microbatch's activations are laid out on the rank.
struct ActivationLayout {
  int microbatch = 1;  // sequences per microbatch, b
  int tensor_parallel = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  /// FP8 training keeps what its GEMMs read in FP8, 1 B/element (DeepSeek-V3 section 3.3): the
  /// QKV and FFN inputs, the attention projection's input and the FFN down projection's input.
  bool fp8_gemm_inputs = false;
  /// A fused (flash) attention kernel never writes the a s^2 b scores, softmax and dropout mask
  /// Korthikanti counts (5 a s^2 b / t bytes); it keeps one fp32 log-sum-exp per query and head.
  bool flash_attention = false;
};

/// What one pipeline stage holds; the caller takes the counts from the model and the schedule.
struct StageLoad {
  double params_on_rank = 0;           // reduced and sharded over data parallelism
  double expert_params_on_rank = 0;    // routed experts: sharded over the dp / ep expert replicas
  int expert_data_parallel = 1;
  double layers = 0;                    // transformer layers per in-flight unit (all chunks when v = 1)
  double moe_layers = 0;                // of which MoE layers
  double in_flight_microbatches = 1;    // the schedule's peak, in units of the stage's whole layer set
                                        // (1F1B stage 0: p; interleaved: p + (p-1)/v)
  bool first_stage = false;             // holds the input embedding
  bool last_stage = false;              // holds the final LayerNorm, the output layer and the loss
  int data_parallel = 1;
  bool distributed_optimizer = false;
  int zero_stage = -1;                  // 0-3; -1: 1 with distributed_optimizer, else 0
  /// ZeRO-3: 16-bit parameters held gathered at peak, on top of the shards - the layer in use and
  /// the one prefetched, or every layer of the rank when they are not resharded after forward.
  double gathered_params = 0;
  /// Activations per in-flight microbatch beyond the transformer layers counted above (a
  /// multimodal encoder on the first stage).
  double extra_activation_bytes = 0;
};

/// Peak memory of one stage, bytes.
///  - activations: what Korthikanti counts: layers x in-flight x the per-layer bytes, plus on the
///    first stage the embedding dropout mask (s b h, /t with sequence parallelism) and on the last
///    stage the final LayerNorm and output-layer inputs (2 s b h each, /t with sequence parallelism)
///    and the fp32 logits (4 s b V / t), each per in-flight microbatch.
///  - recompute_workspace: not in the paper's count. During a backward pass one layer's recomputed
///    activations live on top: the none-mode bytes minus what the mode stored, one microbatch.
///  - Not modelled: CUDA context, communication buffers, allocator fragmentation.
struct StageMemory {
  Bytes weights = 0;
  Bytes gradients = 0;
  Bytes optimizer = 0;
  Bytes activations = 0;
  Bytes recompute_workspace = 0;
  Bytes total = 0;
};

StageMemory stage_memory(const ModelSpec& m, const ActivationLayout& layout, const StageLoad& stage);

}  // namespace clustersim
