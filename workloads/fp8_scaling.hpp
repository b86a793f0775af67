#pragma once
// FP8 training with fine-grained scaling as DeepSeek-V3 ran it (technical report section 3.3.2):
// activations quantized per 1 x 128 tile (one fp32 scale per token and 128 channels), weights per
// 128 x 128 block. The GEMM multiplies the scales in while it accumulates (promotion to CUDA cores
// every 128 elements of K), so dequantization costs nothing outside the GEMM; quantization is a
// memory-bound pass of its own: read the 16-bit tensor (2 B), write FP8 (1 B) and a scale per tile.
//
// What these passes cover, per layer and microbatch, for each GEMM that runs in FP8 (not the ones
// 8-bit training keeps in 16 bits, not attention's):
//  - forward: the GEMM's input, once per distinct input (the QKV or MLA down-projections share the
//    normed layer input, gate and up share the FFN's; an MoE layer's normed input is quantized
//    once for its shared experts and the FP8 dispatch, so the routed experts' gate and up read it
//    already quantized);
//  - backward: the output gradient before each input-gradient GEMM.
// Not covered: the 128 x 1 re-quantization of stored activations for weight-gradient GEMMs, and
// the per-step cast of the weights (once per iteration, not per microbatch).
#include <vector>

#include "workloads/compute_model.hpp"
#include "workloads/moe_routing.hpp"

namespace clustersim {

// One fp32 scale per 128 elements, as the FP8 dispatch carries them (moe_routing.hpp).
inline constexpr double kFp8TileElements = kFp8ScaleBlockElements;
inline constexpr double kFp8ScaleBytesPerTile = kFp8ScaleBytes;
/// Bytes per element of an FP8 tensor with its 1 x 128 tile scales.
inline constexpr double kFp8TiledBytesPerElement = 1 + kFp8ScaleBytesPerTile / kFp8TileElements;
/// Bytes of scales per weight, one per 128 x 128 block.
inline constexpr double kFp8WeightScaleBytesPerParam = kFp8ScaleBytesPerTile / (kFp8TileElements * kFp8TileElements);
/// One quantization pass's traffic per element: read 2, write the tiled FP8.
inline constexpr double kFp8QuantizeBytesPerElement = 2 + kFp8TiledBytesPerElement;

/// Whether `op` runs as an FP8 GEMM under 8-bit training.
bool runs_fp8_gemm(const ComputeOp& op);

/// `forward` with a quantization pass ("<gemm>.quantize", elementwise) before the first FP8 GEMM
/// reading each distinct input.
std::vector<ComputeOp> with_input_quantization(const std::vector<ComputeOp>& forward);

/// `backward` (backward_ops' output) with a pass ("<gemm>.grad_quantize") over each FP8 GEMM's
/// output gradient before its input-gradient GEMM.
std::vector<ComputeOp> with_gradient_quantization(const std::vector<ComputeOp>& backward);

}  // namespace clustersim
