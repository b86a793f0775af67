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
#include <string>
#include <utility>
#include <vector>

#include "topologies/units.hpp"
#include "workloads/model.hpp"

namespace clustersim {

enum class Recompute {
  none,       // store everything (but what `modules` recomputes)
  selective,  // recompute the attention core (scores, softmax, dropout): drops the 5 a s^2 b term
  full,       // store only each layer's input (2 s b h, split over t with sequence parallelism)
};

/// Parts of a layer recomputed in its backward instead of stored, as Megatron-Core's
/// `--recompute-modules` names them (transformer_config.py, recompute_modules; v0.13) and as
/// DeepSeek-V3 ran (technical report section 3.2.3: every RMSNorm and the MLA up-projections
/// recomputed; section 3.3.3: the MoE SwiGLU's inputs cached in FP8, its output recomputed).
/// Each drops its own terms of LayerActivations and repeats its own forward ops before the
/// layer's backward:
///  - layernorm: every norm's output (the QKV or MLA down-projection input, the FFN input; MLA's
///    latent norms' outputs, the up-projections' inputs); recomputed from the norm's stored input.
///  - core_attn: the attention core (what `selective` recomputes; under context parallelism the
///    K/V exchange repeats with it).
///  - mla_up_proj: MLA's up-projection and rotary outputs (Q, K, V as the core reads them),
///    recomputed from the stored latents. Only for MLA models.
///  - activation: every FFN's activation function output (the down projection's input: dense FFN,
///    shared and routed experts), recomputed from its stored inputs.
///  - moe_act: the same for an MoE layer's experts only (routed and shared), Megatron's name. Under
///    FP8 the activation's inputs are then cached in FP8 (1 B), as DeepSeek-V3 does. Only for MoE
///    models; `activation` under FP8 does the same for the MoE layers' experts.
///  - experts: the routed experts' whole FFN (gate/up outputs and the down projection's input),
///    recomputed from the dispatched tokens, which stay (not counted here, as the dispatch buffers
///    are not). Only for MoE models.
///  - mlp: a dense layer's whole MLP, its pre-MLP norm included (Transformer Engine's fused
///    LayerNormMLP), recomputed from the norm's stored input with its TP collectives: the FFN
///    input and activations go. MoE layers are untouched, as in Megatron-Core
///    (transformer_layer.py: recompute_mlp only where the MLP is not an MoELayer).
///  - moe: an MoE layer's whole block from its normed input (moe_layer.py: MoELayer.forward under
///    checkpoint): router, shared experts, dispatch and combine all-to-alls, routed experts, each
///    repeated before the layer's backward; the shared and routed experts' activations go, the
///    normed input stays as the checkpoint's. Only for MoE models.
///  - shared_experts: an MoE layer's shared experts alone, with their TP all-gather and reduction
///    (moe_layer.py: shared_experts_recompute); their activations go. Under `moe` it adds nothing.
///    Only for models with shared experts.
enum class RecomputeModule { layernorm, core_attn, mla_up_proj, activation, moe_act, experts, mlp, moe, shared_experts };

struct RecomputeModules {
  unsigned bits = 0;
  bool has(RecomputeModule m) const { return bits & (1u << static_cast<unsigned>(m)); }
  RecomputeModules& add(RecomputeModule m) {
    bits |= 1u << static_cast<unsigned>(m);
    return *this;
  }
  bool empty() const { return bits == 0; }
  bool operator==(const RecomputeModules&) const = default;
};

/// Every module by its YAML name, in the order above.
const std::vector<std::pair<std::string, RecomputeModule>>& recompute_module_names();
/// "full", "selective", "no" or the modules joined by '+' ("layernorm+mla_up_proj"), for reports.
std::string recompute_text(Recompute mode, RecomputeModules modules);

/// What one transformer layer stores for one microbatch on one tensor-parallel rank when nothing is
/// recomputed, term by term (bytes; g = 2, or 1 for what FP8 training keeps in FP8; ws = t with
/// sequence parallelism, else 1; a_t = heads / t; f the FFN width on the rank):
///  - norm_inputs: the two pre-norms' inputs, 4 s b h / ws (Korthikanti Table 2: the LayerNorms'
///    2 s b h each); MLA adds its two latent norms' inputs, 2 s b (d_c' + d_c) / ws.
///  - norm_outputs: what the norms hand to GEMMs: the QKV (MLA: down-projection) input and the FFN
///    input, g s b h / ws each (Korthikanti's "QKV input" and "MLP input"); MLA adds the
///    up-projections' inputs, g s b (d_c' + d_c) / ws.
///  - dropout_masks: attention and FFN dropout, 1 B each, 2 s b h / ws.
///  - qkv: what the core reads: Q 2 s b h / t and K, V 2 s b x their width on the rank each
///    (Korthikanti's 4 s b h / t + 2 s b h / t for MHA); MLA: Q and K 2 s b a_t (d_h + d_h^R) each,
///    V 2 s b a_t d_v (DeepSeek-V2 section 2.1.2's per-head widths).
///  - attention_core: 5 a_t s^2 b (scores, softmax, dropout mask), or with a flash kernel the fp32
///    log-sum-exp, 4 a_t s b.
///  - attention_output: the output projection's input, g s b h / t (MLA: g s b a_t d_v).
///  - ffn_act_inputs: the dense FFN's (an MoE layer: the shared experts') activation inputs, GELU
///    2 s b f, SwiGLU gate and up 4 s b f (Korthikanti's 8 s b h / t at f = 4h / t).
///  - ffn_act_outputs: the down projection's input, g s b f.
///  - expert_act_inputs, expert_act_outputs: the same for the top_k routed experts of each token,
///    f = top_k x expert_ffn_hidden / t.
struct LayerActivations {
  double norm_inputs = 0, norm_outputs = 0, dropout_masks = 0, qkv = 0, attention_core = 0, attention_output = 0,
         ffn_act_inputs = 0, ffn_act_outputs = 0, expert_act_inputs = 0, expert_act_outputs = 0;
  double total() const {
    return norm_inputs + norm_outputs + dropout_masks + qkv + attention_core + attention_output + ffn_act_inputs +
           ffn_act_outputs + expert_act_inputs + expert_act_outputs;
  }
};

struct ActivationLayout;
/// Layer `layer`'s terms (0-based; an MoE layer has expert terms) under `layout`, nothing recomputed.
LayerActivations layer_activations(const ModelSpec& m, int layer, const ActivationLayout& layout);

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
StateBytes zero_state_bytes(double params_on_rank, int data_parallel, int zero_stage,
                            double gradient_bytes_per_param = kGradientBytesPerParam,
                            double optimizer_bytes_per_param = kOptimizerBytesPerParam);

/// How each microbatch's activations are laid out on the rank.
struct ActivationLayout {
  int microbatch = 1;  // sequences per microbatch, b
  int tensor_parallel = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  /// FP8 training keeps what its GEMMs read in FP8, 1 B/element and a 4-B scale per 1 x 128 tile
  /// (DeepSeek-V3 sections 3.3.2-3.3.3): the QKV and FFN inputs, the attention projection's input
  /// and the FFN down projection's input; its weights carry a 4-B scale per 128 x 128 block.
  bool fp8_gemm_inputs = false;
  /// A fused (flash) attention kernel never writes the a s^2 b scores, softmax and dropout mask
  /// Korthikanti counts (5 a s^2 b / t bytes); it keeps one fp32 log-sum-exp per query and head.
  bool flash_attention = false;
  /// Modules recomputed on top of `recompute` (none or selective; full recomputes everything).
  RecomputeModules recompute_modules = {};
};

/// What a layer stores under the layout's recompute mode and modules.
double stored_activation_bytes(const ModelSpec& m, int layer, const ActivationLayout& layout);

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
  /// Microbatches whose embedding / output-layer activations are held at once: the peak of the
  /// chunk holding the first / last model stage, not of the rank (under DualPipe the rank holding
  /// the last stage also holds the first, with p + 1 microbatches in flight there, but finishes
  /// each microbatch's last stage as soon as it starts it). Negative: in_flight_microbatches.
  double embedding_in_flight_microbatches = -1;
  double head_in_flight_microbatches = -1;
  /// Multi-token prediction modules on this (last) stage. Each keeps, per microbatch held by the
  /// head: one layer like the model's last, its two norms' inputs (2 s b h / ws each) and the
  /// projection's input (the concatenation, g 2 s b h / ws), and a second head's final-norm and
  /// output-layer inputs and fp32 logits (as the main head's).
  int mtp_modules = 0;
  int data_parallel = 1;
  bool distributed_optimizer = false;
  double gradient_bytes_per_param = kGradientBytesPerParam;  // the gradient buffer's width
  double optimizer_bytes_per_param = kOptimizerBytesPerParam;  // Adam's state: 12 in fp32, 6 in bf16
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
