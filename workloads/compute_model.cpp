#include "workloads/compute_model.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

// ---------------------------------------------------------------------------------------------
// Kernel table

std::optional<Seconds> KernelTable::find(const std::string& gpu, const std::string& op, const std::string& dtype,
                                         const OpShape& shape) const {
  auto it = times_.find(Key{gpu, op, dtype, shape.m, shape.n, shape.k});
  if (it == times_.end()) return std::nullopt;
  return it->second;
}

bool KernelTable::add(const std::string& gpu, const std::string& op, const std::string& dtype, const OpShape& shape,
                      Seconds time_s) {
  return times_.emplace(Key{gpu, op, dtype, shape.m, shape.n, shape.k}, time_s).second;
}

namespace {

const std::vector<std::string> kColumns = {"gpu", "op", "dtype", "m", "n", "k", "time_us"};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(trim(field));
  if (!line.empty() && line.back() == ',') fields.emplace_back();  // getline drops a trailing empty field
  return fields;
}

/// Reads rows against the header's column order; every failure names file, line and column.
class CsvRows {
 public:
  CsvRows(std::string file, int line, const std::vector<std::string>& header) : file_(std::move(file)) {
    for (std::size_t i = 0; i < header.size(); ++i) {
      const std::string& name = header[i];
      if (std::find(kColumns.begin(), kColumns.end(), name) == kColumns.end())
        throw UserError(file_, line, name.empty() ? "header" : name,
                        "expected only the columns gpu,op,dtype,m,n,k,time_us; got '" + name + "'");
      if (!index_.emplace(name, i).second) throw UserError(file_, line, name, "expected each column once");
    }
    for (const auto& name : kColumns)
      if (!index_.count(name)) throw UserError(file_, line, name, "expected a '" + name + "' column in the header");
  }

  void start_row(int line, std::vector<std::string> fields) {
    line_ = line;
    fields_ = std::move(fields);
    if (fields_.size() > kColumns.size())
      throw UserError(file_, line_, "row", "expected " + std::to_string(kColumns.size()) + " fields, got " +
                                               std::to_string(fields_.size()));
  }

  std::string text(const std::string& column) const {
    const std::size_t i = index_.at(column);
    if (i >= fields_.size() || fields_[i].empty()) fail(column, "expected a value");
    return fields_[i];
  }

  long dimension(const std::string& column) const {
    const std::string s = text(column);
    long value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || value < 0)
      fail(column, "expected a non-negative integer; got '" + s + "'");
    return value;
  }

  /// A number in [min, max]: a kernel time from 1 ns to 1000 s, so none overflows an iteration.
  double number_in(const std::string& column, double min, double max, const std::string& unit) const {
    const std::string s = text(column);
    char* end = nullptr;
    const double value = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(value) || value < min || value > max)
      fail(column, "expected a number from " + fmt_g(min) + " to " + fmt_g(max) + " " + unit + "; got '" + s + "'");
    return value;
  }

  static std::string fmt_g(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }

  [[noreturn]] void fail(const std::string& column, const std::string& expected) const {
    throw UserError(file_, line_, column, expected);
  }

 private:
  std::string file_;
  std::map<std::string, std::size_t> index_;
  int line_ = 0;
  std::vector<std::string> fields_;
};

}  // namespace

KernelTable parse_kernel_table(const std::string& csv_text, const std::string& name) {
  KernelTable table(name);
  std::optional<CsvRows> rows;
  std::stringstream in(csv_text);
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    const std::string content = trim(raw);
    if (content.empty() || content.front() == '#') continue;
    if (!rows) {
      rows.emplace(name, line, split_fields(content));
      continue;
    }
    rows->start_row(line, split_fields(content));
    const OpShape shape{rows->dimension("m"), rows->dimension("n"), rows->dimension("k")};
    const Seconds time_s = microseconds(rows->number_in("time_us", 1e-3, 1e9, "us"));
    if (!table.add(rows->text("gpu"), rows->text("op"), rows->text("dtype"), shape, time_s))
      rows->fail("op", "expected one row per (gpu, op, dtype, m, n, k); this one is listed twice");
  }
  if (!rows) throw UserError(name, 0, "header", "expected a header line gpu,op,dtype,m,n,k,time_us");
  return table;
}

KernelTable load_kernel_table(const std::string& path, const std::string& named_by) {
  return parse_kernel_table(read_input_file(path, named_by), path);
}

// ---------------------------------------------------------------------------------------------
// Roofline

namespace {

struct Roofline {
  Seconds seconds = 0;
  std::string missing;  // the catalog field an uncalibrated estimate lacked, empty when calibrated
};

Roofline roofline(const GpuModel& gpu, const std::string& dtype, const ComputeOp& op) {
  const std::optional<double> peak = gpu.peak_flops(dtype);
  // Scenarios check the datatype against the catalog (peak_flops_or_fail) before timing anything.
  if (!peak) throw std::invalid_argument(gpu.name + " has no " + dtype + " peak; check it when loading the scenario");
  Roofline r;
  auto need = [&r](bool present, const char* field) {
    if (!present && r.missing.empty()) r.missing = field;
  };
  double compute_fraction = 1.0;
  double executed_flops = op.flops;
  switch (op.kind) {
    case ComputeKind::gemm:
      need(gpu.gemm_efficiency.has_value(), "gemm_efficiency");
      if (gpu.gemm_efficiency) compute_fraction = gpu.gemm_fraction_of_peak(dtype, op.flops);
      break;
    case ComputeKind::attention:
      need(gpu.attention_efficiency.has_value(), "attention_efficiency");
      if (gpu.attention_efficiency) compute_fraction = gpu.attention_efficiency->fraction_of_peak(double(op.shape.n));
      if (op.causal) executed_flops /= 2;
      break;
    case ComputeKind::elementwise:
    case ComputeKind::optimizer:
      break;  // memory-bound: their arithmetic is not derated
  }
  need(gpu.hbm_efficiency.has_value(), "hbm_efficiency");
  const double hbm_fraction = gpu.hbm_efficiency ? gpu.hbm_efficiency->fraction : 1.0;
  if (op.score_bytes > 0) {
    // The score matrix's traffic does not hide under math this thin (catalog: score_matmul_efficiency).
    need(gpu.score_matmul_efficiency.has_value(), "score_matmul_efficiency");
    const double fraction = gpu.score_matmul_efficiency ? gpu.score_matmul_efficiency->score_hbm_fraction : 1.0;
    r.seconds = op.flops / *peak + double(op.score_bytes) / (gpu.hbm_bandwidth_Bps * fraction);
  } else {
    const Seconds compute_s = executed_flops / (*peak * compute_fraction);
    const Seconds memory_s = double(op.hbm_bytes) / (gpu.hbm_bandwidth_Bps * hbm_fraction);
    r.seconds = std::max(compute_s, memory_s);
  }
  if (gpu.in_training_efficiency) r.seconds /= gpu.in_training_efficiency->fraction;
  return r;
}

/// The datatype an op's kernel runs in. 8-bit training keeps attention, the output head and the
/// MoE router in 16 bits (DeepSeek-V3 section 3.3.1: embedding, output head, gating, normalization
/// and attention stay in BF16/FP32; Transformer Engine's attention is BF16 unless asked).
std::string kernel_dtype(const ComputeOp& op, const std::string& precision) {
  const bool sixteen = op.kind == ComputeKind::attention || op.score_bytes > 0 || op.keeps_16bit;
  return is_eight_bit(precision) && sixteen ? "bf16" : precision;
}

}  // namespace

OpTime estimate_op_time(const GpuModel& gpu, const std::string& precision, const ComputeOp& op,
                        const KernelTable* kernels) {
  const std::string dtype = kernel_dtype(op, precision);
  if (kernels)
    if (auto measured = kernels->find(gpu.name, op.name, dtype, op.shape)) return {*measured, TimeSource::kernel_table};
  const Roofline r = roofline(gpu, dtype, op);
  return {r.seconds, r.missing.empty() ? TimeSource::calibrated : TimeSource::uncalibrated};
}

Seconds op_time(const GpuModel& gpu, const std::string& precision, const ComputeOp& op, const KernelTable* kernels) {
  const OpTime t = estimate_op_time(gpu, precision, op, kernels);
  if (t.source != TimeSource::uncalibrated) return t.seconds;
  const std::string missing = roofline(gpu, kernel_dtype(op, precision), op).missing;  // to name it
  throw UserError(gpu.catalog_file, gpu.catalog_line, gpu.catalog_path.empty() ? missing : gpu.catalog_path + "." + missing,
                  "expected a " + missing + " calibration for " + gpu.name + " to time '" + op.name +
                      "' (see the catalog's header), or a kernel table row for it");
}

// ---------------------------------------------------------------------------------------------
// Layer operations

namespace {

constexpr double kActivationBytes = 2;  // bf16 / fp16 activations

ComputeOp gemm(const std::string& name, long m, long n, long k, OpPass pass = OpPass::forward) {
  ComputeOp op;
  op.name = name;
  op.kind = ComputeKind::gemm;
  op.pass = pass;
  op.shape = {m, n, k};
  op.flops = 2.0 * double(m) * double(n) * double(k);
  op.hbm_bytes = Bytes(kActivationBytes * (double(m) * k + double(k) * n + double(m) * n));
  return op;
}

ComputeOp elementwise(const std::string& name, long tokens, long width, double bytes_per_element) {
  ComputeOp op;
  op.name = name;
  op.kind = ComputeKind::elementwise;
  op.shape = {tokens, width, 0};
  op.hbm_bytes = Bytes(bytes_per_element * double(tokens) * double(width));
  return op;
}

long divide(long total, long parts) {
  assert(parts > 0 && total % parts == 0 && "tensor parallel size divides the split dimension");
  return total / parts;
}

}  // namespace

namespace {

/// The attention core on one GPU: q_heads query heads of width qk_dim, values of width v_dim, over
/// every token against its sequence (FLOPs for the full square, as model_math counts them).
std::vector<ComputeOp> attention_core_ops(const ModelSpec& m, int microbatch, long q_heads, long kv_heads, long qk_dim,
                                          long v_dim, AttentionKernel kernel, long kv_len) {
  const long tokens = long(microbatch) * m.seq_len;
  const long pairs = long(microbatch) * q_heads;
  std::vector<ComputeOp> core;
  if (kernel == AttentionKernel::unfused) {
    // Unfused: one (sequence, head) pair per batch entry; GEMMs fold the batch into m.
    core.push_back(gemm("attn_scores", pairs * m.seq_len, kv_len, qk_dim));
    core.push_back(elementwise("softmax", pairs * m.seq_len, kv_len, 4));
    core.push_back(elementwise("attn_dropout", pairs * m.seq_len, kv_len, 5));
    core.push_back(gemm("attn_context", pairs * m.seq_len, v_dim, kv_len));
    const Bytes scores = Bytes(kActivationBytes * double(pairs) * double(m.seq_len) * double(kv_len));
    for (ComputeOp& op : core) {
      op.attention_core = true;
      op.weightless = op.kind == ComputeKind::gemm;
      if (op.weightless) op.score_bytes = scores;
    }
    return core;
  }
  ComputeOp attention;
  attention.name = "attention";
  attention.kind = ComputeKind::attention;
  attention.causal = true;  // every model here is a decoder
  attention.shape = {pairs, kv_len, qk_dim};
  attention.flops = 2.0 * double(tokens) * double(kv_len) * double(qk_dim + v_dim) * q_heads;
  const double q_elems = double(tokens) * q_heads * qk_dim, k_elems = double(tokens) * kv_heads * qk_dim,
               v_elems = double(tokens) * kv_heads * v_dim, o_elems = double(tokens) * q_heads * v_dim;
  attention.hbm_bytes = Bytes(kActivationBytes * (q_elems + k_elems + v_elems + o_elems) + 4.0 * tokens * q_heads);
  attention.attention_core = true;
  core.push_back(attention);
  return core;
}

/// Norm, projections and core of the attention block, up to its output projection.
std::vector<ComputeOp> attention_ops(const ModelSpec& m, int microbatch, int t, bool sequence_parallel,
                                     AttentionKernel kernel, long kv_len) {
  const long h = m.hidden, tokens = long(microbatch) * m.seq_len;
  const long sp_tokens = sequence_parallel ? divide(tokens, t) : tokens;
  const long q_heads = divide(m.heads, t);
  std::vector<ComputeOp> ops;
  ops.push_back(elementwise("norm1", sp_tokens, h, 4));
  std::vector<ComputeOp> core;
  if (m.mla) {
    // MLA (DeepSeek-V2 section 2.1): down-projections to the latents, their norms, per-head
    // up-projections; the key's rope part comes from the hidden state once for all heads. The
    // down-projections run on 1/t of the tokens on each GPU, as model_math divides them.
    const MlaSpec& a = *m.mla;
    const long down_tokens = (tokens + t - 1) / t;
    ops.push_back(gemm("q_down", down_tokens, a.q_lora_rank, h));
    ops.push_back(elementwise("q_norm", down_tokens, a.q_lora_rank, 4));
    ops.push_back(gemm("q_up", tokens, q_heads * a.qk_head_dim(), a.q_lora_rank));
    ops.push_back(gemm("kv_down", down_tokens, a.kv_lora_rank + a.qk_rope_head_dim, h));
    ops.push_back(elementwise("kv_norm", down_tokens, a.kv_lora_rank, 4));
    ops.push_back(gemm("kv_up", tokens, q_heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank));
    ops.push_back(elementwise("rope", tokens, (q_heads + 1) * a.qk_rope_head_dim, 4));
    core = attention_core_ops(m, microbatch, q_heads, q_heads, a.qk_head_dim(), a.v_head_dim, kernel, kv_len);
  } else {
    const long hd = m.head_dim();
    const long kv_heads = m.kv_heads >= t ? divide(m.kv_heads, t) : 1;  // replicas when tp > kv_heads
    ops.push_back(gemm("qkv", tokens, hd * (q_heads + 2 * kv_heads), h));
    if (m.ffn != FfnType::gelu) ops.push_back(elementwise("rope", tokens, hd * (q_heads + kv_heads), 4));
    core = attention_core_ops(m, microbatch, q_heads, kv_heads, hd, hd, kernel, kv_len);
  }
  ops.insert(ops.end(), core.begin(), core.end());
  const long v_width = m.mla ? q_heads * m.mla->v_head_dim : q_heads * m.head_dim();
  ops.push_back(gemm("attn_out", tokens, h, v_width));
  return ops;
}

/// An FFN's GEMMs and activation over `rows` tokens with inner width `inner` on this GPU, names
/// prefixed ("ffn", "shared", "expert").
void ffn_gemms(const ModelSpec& m, const std::string& prefix, long rows, long inner, std::vector<ComputeOp>& ops) {
  const bool gated = m.ffn == FfnType::swiglu;
  if (rows <= 0 || inner <= 0) return;
  if (gated) ops.push_back(gemm(prefix + "_gate", rows, inner, m.hidden));
  ops.push_back(gemm(prefix + "_up", rows, inner, m.hidden));
  const std::string activation = ffn_activation_name(m.ffn);  // the dense FFN's keeps its bare name
  // Gated: two inputs read and one output written; ungated: one and one (2 bytes each).
  ops.push_back(elementwise(prefix == "ffn" ? activation : prefix + "_" + activation, rows, inner, gated ? 6 : 4));
  ops.push_back(gemm(prefix + "_down", rows, m.hidden, inner));
}

std::string residual_name(const ModelSpec& m, int which) {
  return (m.ffn == FfnType::gelu ? "dropout_residual" : "residual") + std::to_string(which);
}

}  // namespace

/// The model as one context-parallel rank sees it: 1/cp of each sequence's tokens.
static ModelSpec local_shape(const ModelSpec& full, int context_parallel) {
  assert(context_parallel > 0 && full.seq_len % context_parallel == 0 && "cp divides the sequence");
  ModelSpec m = full;
  m.seq_len = full.seq_len / context_parallel;
  return m;
}

std::vector<ComputeOp> layer_forward_ops(const ModelSpec& full, int microbatch, int tensor_parallel, bool sequence_parallel,
                                         AttentionKernel kernel, int context_parallel) {
  assert(microbatch > 0 && tensor_parallel > 0 && "microbatch and tensor parallel size are positive");
  const ModelSpec m = local_shape(full, context_parallel);
  const long t = tensor_parallel, h = m.hidden, tokens = long(microbatch) * m.seq_len;
  const long sp_tokens = sequence_parallel ? divide(tokens, t) : tokens;  // norms, dropouts, residuals
  const bool gpt = m.ffn == FfnType::gelu;
  std::vector<ComputeOp> ops = attention_ops(m, microbatch, tensor_parallel, sequence_parallel, kernel, full.seq_len);
  ops.push_back(elementwise(residual_name(m, 1), sp_tokens, h, gpt ? 7 : 6));
  ops.push_back(elementwise("norm2", sp_tokens, h, 4));
  ffn_gemms(m, "ffn", tokens, divide(m.ffn_hidden, t), ops);
  ops.push_back(elementwise(residual_name(m, 2), sp_tokens, h, gpt ? 7 : 6));
  return ops;
}

MoeLayerOps moe_layer_forward_ops(const ModelSpec& full, int microbatch, int tensor_parallel, bool sequence_parallel,
                                  AttentionKernel kernel, double expert_rows, int context_parallel) {
  assert(full.moe && "an MoE layer needs the model's moe block");
  const ModelSpec m = local_shape(full, context_parallel);
  const long t = tensor_parallel, h = m.hidden, tokens = long(microbatch) * m.seq_len;
  const long sp_tokens = sequence_parallel ? divide(tokens, t) : tokens;
  const bool gpt = m.ffn == FfnType::gelu;
  const MoeSpec& moe = *m.moe;
  MoeLayerOps out;
  out.before_dispatch = attention_ops(m, microbatch, tensor_parallel, sequence_parallel, kernel, full.seq_len);
  out.before_dispatch.push_back(elementwise(residual_name(m, 1), sp_tokens, h, gpt ? 7 : 6));
  out.before_dispatch.push_back(elementwise("norm2", sp_tokens, h, 4));
  // Megatron-Core's router scores the rank's own sequence slice (under SP); the dispatcher gathers.
  out.before_dispatch.push_back(gemm("router", sp_tokens, moe.routed_experts, h));
  out.before_dispatch.back().keeps_16bit = true;
  ffn_gemms(m, "shared", tokens, divide(long(moe.shared_experts) * moe.expert_ffn_hidden, t), out.before_dispatch);
  ffn_gemms(m, "expert", std::lround(expert_rows), divide(moe.expert_ffn_hidden, t), out.experts);
  out.after_combine.push_back(elementwise(residual_name(m, 2), sp_tokens, h, gpt ? 7 : 6));
  return out;
}

std::vector<ComputeOp> backward_ops(const std::vector<ComputeOp>& forward) {
  std::vector<ComputeOp> out;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const ComputeOp& f = *it;
    if (f.kind == ComputeKind::gemm) {
      const auto [m, n, k] = std::tuple(f.shape.m, f.shape.n, f.shape.k);
      out.push_back(gemm(f.name + ".dgrad", m, k, n, OpPass::backward_input));
      out.push_back(gemm(f.name + ".wgrad", k, n, m, f.weightless ? OpPass::backward_input : OpPass::backward_weight));
      for (ComputeOp* b : {&out[out.size() - 2], &out.back()}) {
        b->attention_core = f.attention_core;
        b->score_bytes = f.score_bytes;  // each gradient of a score matmul writes or reads the scores
        b->keeps_16bit = f.keeps_16bit;
      }
      continue;
    }
    ComputeOp b = f;
    b.name = f.name + ".bwd";
    b.pass = OpPass::backward_input;
    b.hbm_bytes = 2 * f.hbm_bytes;
    if (f.kind == ComputeKind::attention) b.flops = 2.5 * f.flops;
    out.push_back(b);
  }
  return out;
}

ComputeOp encoder_projection_op(const ModelSpec& m, int microbatch, int tensor_parallel) {
  assert(m.encoder && tensor_parallel > 0 && "a model with an encoder");
  return gemm("encoder_projection", long(microbatch) * m.encoder->tokens, long(double(m.hidden) / tensor_parallel),
              m.encoder->hidden);
}

ComputeOp logits_forward_op(const ModelSpec& full, int microbatch, int tensor_parallel, int context_parallel) {
  assert(tensor_parallel > 0 && "tensor parallel size is positive");
  const ModelSpec m = local_shape(full, context_parallel);
  // Megatron pads the vocabulary to a multiple of the tensor-parallel size.
  const long vocab_per_gpu = (long(m.vocab) + tensor_parallel - 1) / tensor_parallel;
  ComputeOp op = gemm("logits", long(microbatch) * m.seq_len, vocab_per_gpu, m.hidden);
  op.keeps_16bit = true;
  return op;
}

CrossEntropyOps cross_entropy_ops(const ModelSpec& m, int microbatch, int tensor_parallel, int context_parallel) {
  const ComputeOp logits = logits_forward_op(m, microbatch, tensor_parallel, context_parallel);
  const long tokens = logits.shape.m, vocab_per_gpu = logits.shape.n;
  CrossEntropyOps ce{elementwise("cross_entropy", tokens, vocab_per_gpu, 6.0 + 4 + 8 + 8 + 4 + 8),
                     elementwise("cross_entropy.bwd", tokens, vocab_per_gpu, 8.0 + 6)};
  ce.backward.pass = OpPass::backward_input;
  return ce;
}

ComputeOp gradient_accumulation_op(double parameters, int accumulate_bytes) {
  return elementwise("grad_accumulation", std::lround(parameters), 1, 2.0 * accumulate_bytes + 2);
}

ComputeOp optimizer_op(double parameters, int gradient_buffer_bytes, bool loss_scaling, int state_bytes) {
  ComputeOp op;
  op.name = "optimizer";
  op.kind = ComputeKind::optimizer;
  op.shape = {long(std::llround(parameters)), 0, 0};
  const double cast_to_fp32 = gradient_buffer_bytes < 4 ? gradient_buffer_bytes + 4.0 : 0.0;
  // The norm's read of the fp32 gradient; Adam reading the state (parameter copy, m, v) and the fp32
  // gradient and writing the state back; the copy into the 16-bit weights; the buffer zeroed.
  const double s = state_bytes;
  const double bytes_per_param =
      4.0 + (3 * s + 4.0 + 3 * s) + (s + 2.0) + gradient_buffer_bytes + cast_to_fp32 + (loss_scaling ? 8.0 : 0.0);
  op.hbm_bytes = Bytes(bytes_per_param * parameters);
  return op;
}

}  // namespace clustersim
