#include "workloads/fp8_scaling.hpp"

#include <set>
#include <string>

namespace clustersim {

namespace {

ComputeOp quantize(const std::string& name, long rows, long width, OpPass pass) {
  ComputeOp op;
  op.name = name;
  op.kind = ComputeKind::elementwise;
  op.pass = pass;
  op.shape = {rows, width, 0};
  op.hbm_bytes = static_cast<Bytes>(kFp8QuantizeBytesPerElement * double(rows) * double(width));
  return op;
}

std::string gemm_of(const std::string& name) { return name.substr(0, name.find('.')); }

/// The input a forward GEMM reads, named so GEMMs sharing it share one quantization; empty when it
/// arrives quantized (the routed experts' gate and up read the FP8 dispatch).
std::string input_of(const std::string& gemm) {
  if (gemm == "qkv" || gemm == "q_down" || gemm == "kv_down") return "attention input";
  if (gemm == "ffn_gate" || gemm == "ffn_up" || gemm == "shared_gate" || gemm == "shared_up") return "ffn input";
  if (gemm == "expert_gate" || gemm == "expert_up") return "";
  return gemm;
}

}  // namespace

bool runs_fp8_gemm(const ComputeOp& op) {
  return op.kind == ComputeKind::gemm && !op.keeps_16bit && !op.weightless && !op.attention_core && op.score_bytes == 0;
}

std::vector<ComputeOp> with_input_quantization(const std::vector<ComputeOp>& forward) {
  std::vector<ComputeOp> out;
  std::set<std::string> done;
  for (const ComputeOp& op : forward) {
    if (runs_fp8_gemm(op)) {
      const std::string input = input_of(op.name);
      if (!input.empty() && done.insert(input).second)
        out.push_back(quantize(op.name + ".quantize", op.shape.m, op.shape.k, OpPass::forward));
    }
    out.push_back(op);
  }
  return out;
}

std::vector<ComputeOp> with_gradient_quantization(const std::vector<ComputeOp>& backward) {
  std::vector<ComputeOp> out;
  for (const ComputeOp& op : backward) {
    // backward_ops writes "<gemm>.dgrad" as m x k from the m x n output gradient: its shape.k is n.
    if (runs_fp8_gemm(op) && op.pass == OpPass::backward_input && op.name.size() > 6 &&
        op.name.compare(op.name.size() - 6, 6, ".dgrad") == 0)
      out.push_back(quantize(gemm_of(op.name) + ".grad_quantize", op.shape.m, op.shape.k, OpPass::backward_input));
    out.push_back(op);
  }
  return out;
}

}  // namespace clustersim
