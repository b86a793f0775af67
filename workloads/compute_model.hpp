#pragma once
// The time of one compute operation on one GPU. A roofline: the larger of
//   flops / (peak(dtype) * efficiency)   and   hbm_bytes / (hbm_bandwidth * hbm_efficiency).
// Every efficiency is a per-GPU catalog entry (scenarios/gpus.yaml) calibrated once from a named
// kernel measurement, never from end-to-end training runs:
//  - gemm: gemm_efficiency(F), F the GEMM's FLOPs. Size only, not shape: a skinny GEMM (k of a few
//    hundred) runs slower than the curve says; transformer GEMMs have k >= hidden / tp.
//  - attention (flash-attention core): attention_efficiency(sequence length), applied to the FLOPs
//    the kernel executes; a causal kernel skips the masked half of the scores square that
//    model_math counts. Calibrated on forward+backward, so one fraction serves both passes.
//  - elementwise, optimizer: memory-bound; their FLOPs are free, as in model_math.
//  - every op, where the catalog has in_training_efficiency: the time above over that fraction,
//    since a kernel inside a training layer runs slower than the same kernel benchmarked alone.
// The GEMM and attention curves are measured in bf16 and applied to every datatype, except that FP8
// GEMMs take the catalog's fp8_gemm_efficiency where it has one (FP8 kernels fall short of twice
// the bf16 speed on transformer shapes).
//
// A GPU lacking a calibration an op needs: estimate_op_time uses efficiency 1 (a lower bound on
// the time) and marks the result uncalibrated; op_time refuses with a UserError at the GPU's
// catalog entry. A kernel table (measured times) overrides both for the ops it lists.
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "topologies/units.hpp"
#include "workloads/gpu_catalog.hpp"
#include "workloads/model.hpp"

namespace clustersim {

enum class ComputeKind { gemm, attention, elementwise, optimizer };

/// How attention runs. flash: one fused kernel that never writes the scores (FlashAttention).
/// unfused: Megatron-LM before FlashAttention (2021-22, the published runs): batched QK^T GEMM, a
/// fused scale-mask-softmax and a dropout that read and write the b x heads x s x s scores in HBM,
/// then the scores x V GEMM; Korthikanti's 5as^2b activation bytes are those scores.
enum class AttentionKernel { flash, unfused };

/// Which pass an op belongs to; backward splits into input and weight gradients (zero-bubble
/// schedules run them apart).
enum class OpPass { forward, backward_input, backward_weight };

/// Dimensions, by kind: gemm C[m x n] = A[m x k] B[k x n]; attention m = (sequence, head) pairs,
/// n = sequence length, k = head dim; elementwise m = tokens, n = elements per token; optimizer
/// m = parameters. With the op's name and datatype they are the kernel-table key.
struct OpShape {
  long m = 0, n = 0, k = 0;
  bool operator==(const OpShape&) const = default;
};

struct ComputeOp {
  std::string name;  // "qkv", "qkv.dgrad", "attention.bwd", ...: the kernel-table key
  ComputeKind kind = ComputeKind::elementwise;
  OpPass pass = OpPass::forward;
  double flops = 0;  // as model_math counts them (attention: the full scores square)
  Bytes hbm_bytes = 0;
  OpShape shape;
  bool causal = false;  // attention: the kernel executes half of `flops`
  bool weightless = false;  // a GEMM of two activations (unfused attention): both gradients are input gradients
  bool attention_core = false;  // what selective recomputation repeats
  Bytes score_bytes = 0;  // unfused attention's matmuls: the s x s score matrix they write or read
  bool keeps_16bit = false;  // a GEMM 8-bit training still runs in BF16 (output head, MoE router)
};

/// Measured kernel times by (gpu, op, dtype, m, n, k). Matching is exact on all six: a listed op
/// with another shape falls back to the model.
class KernelTable {
 public:
  explicit KernelTable(std::string file = "") : file_(std::move(file)) {}
  std::optional<Seconds> find(const std::string& gpu, const std::string& op, const std::string& dtype,
                              const OpShape& shape) const;
  /// false when the key is already listed.
  bool add(const std::string& gpu, const std::string& op, const std::string& dtype, const OpShape& shape,
           Seconds time_s);
  std::size_t size() const { return times_.size(); }
  const std::string& file() const { return file_; }

 private:
  using Key = std::tuple<std::string, std::string, std::string, long, long, long>;
  std::string file_;
  std::map<Key, Seconds> times_;
};

/// Reads a CSV with the header gpu,op,dtype,m,n,k,time_us (any column order). Blank lines and lines
/// starting with '#' are skipped; fields are unquoted. A bad row is a UserError naming the file, the
/// line and the column.
KernelTable load_kernel_table(const std::string& path, const std::string& named_by = "");
KernelTable parse_kernel_table(const std::string& csv_text, const std::string& name);

enum class TimeSource { kernel_table, calibrated, uncalibrated };

struct OpTime {
  Seconds seconds = 0;
  TimeSource source = TimeSource::calibrated;
};

/// The time of `op` in a run at `precision`; under FP8 or MX the ops 8-bit training keeps in 16 bits
/// (attention, output head, MoE router) run, and are looked up in the kernel table, as bf16.
OpTime estimate_op_time(const GpuModel& gpu, const std::string& precision, const ComputeOp& op,
                        const KernelTable* kernels = nullptr);
/// The same, but an uncalibrated estimate is a UserError naming the catalog entry to calibrate.
Seconds op_time(const GpuModel& gpu, const std::string& precision, const ComputeOp& op,
                const KernelTable* kernels = nullptr);

/// Forward ops of one transformer layer on one GPU, in execution order, for `microbatch` sequences
/// split Megatron-style over `tensor_parallel` GPUs (model_math's conventions). GEMMs see every
/// token; with sequence parallelism the norms, dropouts and residual adds see 1/tp of them.
/// GEMM and attention FLOPs sum to layer_forward_flops. HBM bytes, 2-byte activations:
///   GEMM 2(mk + kn + mn); attention 2(Q + K + V + O) + 4 per (query, head) for the log-sum-exp;
///   norm (LayerNorm or RMSNorm) read + write, 4 per element; GELU (bias fused) 4 per FFN element;
///   SwiGLU reads gate and up, writes one, 6 per FFN element; rotary embedding (SwiGLU family)
///   4 per Q and K element; GPT-family dropout + residual add, fused as Megatron does: read both,
///   write the sum and a 1-byte mask, 7 per element; Llama-family residual add (no dropout) 6.
/// Unfused attention: QK^T and scores x V as batched GEMMs (same FLOPs as the flash kernel's full
/// square), the softmax at 4 bytes and the dropout at 5 bytes per score.
/// Context parallelism (cp > 1): every op sees 1/cp of each sequence's tokens, and the attention
/// core runs them against the whole sequence (balanced causal sharding gives each rank 1/cp of it).
std::vector<ComputeOp> layer_forward_ops(const ModelSpec& m, int microbatch, int tensor_parallel,
                                         bool sequence_parallel, AttentionKernel kernel = AttentionKernel::flash,
                                         int context_parallel = 1);

/// An MoE layer's forward ops on one GPU, in three runs around its dispatch and combine
/// all-to-alls: the attention block, the pre-FFN norm, the router (hidden x routed experts) and the
/// shared experts; then the routed experts over `expert_rows` token-expert pairs on this GPU (each
/// expert's FFN split over tensor_parallel, as Megatron-Core's expert tensor parallelism defaults
/// to); then the residual add. Multi-head latent attention (m.mla) replaces the QKV projection by
/// its down-projections, latent norms and up-projections in either kind of layer.
struct MoeLayerOps {
  std::vector<ComputeOp> before_dispatch, experts, after_combine;
};
MoeLayerOps moe_layer_forward_ops(const ModelSpec& m, int microbatch, int tensor_parallel, bool sequence_parallel,
                                  AttentionKernel kernel, double expert_rows, int context_parallel = 1);

/// The backward of `forward`, in reverse order. Each GEMM becomes two of its FLOPs: the input
/// gradient ("<name>.dgrad", m x k from m x n and n x k) and the weight gradient ("<name>.wgrad",
/// k x n from k x m and m x n). Attention backward runs 2.5x the forward FLOPs (five matmuls to
/// two: Dao 2023, FlashAttention-2, section 3.1) and moves twice its bytes (reads Q, K, V, O, dO,
/// writes dQ, dK, dV); an elementwise op's backward moves twice its bytes.
std::vector<ComputeOp> backward_ops(const std::vector<ComputeOp>& forward);

/// A multimodal encoder's projection to the language model's width on one GPU, its output split
/// over tensor_parallel.
ComputeOp encoder_projection_op(const ModelSpec& m, int microbatch, int tensor_parallel);

/// The logit GEMM on one GPU, vocabulary split over tensor_parallel (cross-entropy: cross_entropy_ops),
/// over the 1/context_parallel of each sequence's tokens this GPU holds: under context parallelism
/// the output layer and the loss see only the rank's own tokens, as every layer before them.
ComputeOp logits_forward_op(const ModelSpec& m, int microbatch, int tensor_parallel, int context_parallel = 1);

/// Megatron's vocabulary-parallel cross-entropy on one GPU, over the microbatch's logits (the
/// vocabulary split over tensor_parallel). Forward: the 16-bit logits cast to fp32 (6 B per logit),
/// their max (4), the max subtracted (8), exponentiated (8), summed (4) and divided into the softmax
/// it keeps (8), 38 B; backward: the kept softmax scaled by the loss gradient (8) and cast back to
/// 16 bits (6), 14 B. Its three all-reduces of one float per token are the caller's. Like the
/// logits, it sees 1/context_parallel of each sequence.
struct CrossEntropyOps {
  ComputeOp forward, backward;
};
CrossEntropyOps cross_entropy_ops(const ModelSpec& m, int microbatch, int tensor_parallel, int context_parallel = 1);

/// Accumulating one microbatch's weight gradients into the gradient buffer outside the GEMM, as
/// Megatron-LM's DDP hook does (main_grad.add_(grad)) when gradient accumulation is not fused into
/// the weight-gradient GEMM: reads the buffer (accumulate_bytes per parameter) and the fresh 16-bit
/// gradient (2), writes the buffer.
ComputeOp gradient_accumulation_op(double parameters, int accumulate_bytes);

/// One mixed-precision optimizer step over `parameters` on this GPU, as Megatron-LM runs it (its
/// MixedPrecisionOptimizer.step and the train step's zero_grad_buffer), in bytes per parameter:
/// the gradient-norm read for clipping (4); Adam reading fp32 gradient, master weight and both
/// moments (16) and writing master and moments (12); the master weight copied to the 16-bit model
/// weight (read 4, write 2); the gradient buffer zeroed (its width, gradient_buffer_bytes). A
/// 16-bit buffer (fp16 training) is first cast to the fp32 main gradients (read 2, write 4). With
/// fp16's loss scaling the gradients are unscaled and checked for inf/nan (read and write, 8).
/// Left out: clipping's scale (read and write, 8), run only when the norm exceeds the clip, and the
/// one-float all-reduces of the norm and of fp16's found-inf flag (latency, README "fixed costs").
/// `state_bytes`: each state element's width, 4 (fp32) or 2 (bf16 state, parallel.optimizer_dtype:
/// the master copy, both moments and the copy's read for the weights all at 2).
ComputeOp optimizer_op(double parameters, int gradient_buffer_bytes, bool loss_scaling, int state_bytes = 4);

}  // namespace clustersim
