#pragma once
// A decoder-only transformer as the user writes it (scenarios/models/*.yaml): dense, or with
// mixture-of-experts FFNs (`moe:`) and multi-head latent attention (`attention: {type: mla}`).
// Pure data; the FLOP and parameter counts derived from it live in model_math.hpp.
#include <optional>
#include <string>

#include "topologies/yaml_reader.hpp"

namespace clustersim {

/// gelu: GPT-style (biases, learned positions); swiglu: Llama-style gated FFN; squared_relu:
/// Nemotron-4-style, Llama's family (no biases, rotary positions) with an ungated FFN.
enum class FfnType { gelu, swiglu, squared_relu };

/// The FFN activation's name as a model file spells it, and as its op is named ("gelu", ...).
const char* ffn_activation_name(FfnType kind);

/// Multi-head latent attention (DeepSeek-V2 section 2.1, DeepSeek-V3 section 2.1.1). Queries and
/// keys/values go through a low-rank latent (down-projection, RMSNorm, per-head up-projection).
/// Each query and key head is a position-free part (nope) plus a rotary part (rope); the key's rope
/// part is projected once from the hidden state and shared by every head. Widths in elements.
struct MlaSpec {
  int q_lora_rank = 0;       // d_c': query latent
  int kv_lora_rank = 0;      // d_c: the key/value latent (what inference caches)
  int qk_nope_head_dim = 0;  // d_h: per-head query/key part without positions
  int qk_rope_head_dim = 0;  // d_h^R: per-head query rope part; the one shared key rope part
  int v_head_dim = 0;        // per-head value width; the output projection reads heads x this

  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

/// Mixture-of-experts FFNs. The first dense_layers layers keep the dense FFN (ffn_hidden); every
/// later layer is an MoE layer: a router (hidden x routed_experts) picks top_k routed experts per
/// token, and every token also runs the shared_experts. Each expert is an FFN of the model's `ffn`
/// type with inner size expert_ffn_hidden.
struct MoeSpec {
  int routed_experts = 0;
  int shared_experts = 0;     // default 0 (Mixtral)
  int top_k = 0;              // routed experts per token, 1..routed_experts
  int expert_ffn_hidden = 0;  // one expert's FFN inner size
  int dense_layers = 0;       // default 0: every layer is MoE
  /// Tokens an expert takes before dropping, as a multiple of its uniform share (GShard, Switch).
  /// Absent means dropless, the default: every routed token is computed.
  std::optional<double> capacity_factor;
  /// Most nodes one token's routed experts may span (DeepSeek-V3's node-limited routing, M = 4);
  /// absent means no limit.
  std::optional<int> node_limit;
};

/// A vision or speech encoder tower feeding the language model (a ViT on image patches, a
/// Conformer-like stack on audio frames): dense transformer layers of their own shape over `tokens`
/// positions per sample, then a projection to the language model's width. It runs on the first
/// pipeline stage, before the language model's layers (placement: first_stage).
/// Where an encoder runs: on the first pipeline stage before the language model's first layers, or
/// as a pipeline stage of its own (Megatron-Core's encoder pipeline stage), whose ranks hold only it.
enum class EncoderPlacement { first_stage, own_stage };

struct EncoderSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int ffn_hidden = 0;
  FfnType ffn = FfnType::gelu;
  int tokens = 0;  // positions per sample (patches, frames)
  EncoderPlacement placement = EncoderPlacement::first_stage;
};

struct ModelSpec {
  std::string file;
  std::string name;
  int layers = 0;
  int hidden = 0;            // h
  int heads = 0;             // a
  int kv_heads = 0;          // GQA/MQA: == heads for plain multi-head attention (and for MLA)
  int ffn_hidden = 0;        // dense FFN inner size (4h for GPT-3); 0 when every layer is MoE
  FfnType ffn = FfnType::gelu;
  int vocab = 0;             // V
  int seq_len = 0;           // s
  bool tied_embeddings = true;
  std::optional<MlaSpec> mla;  // absent: standard attention (MHA / GQA from heads and kv_heads)
  std::optional<MoeSpec> moe;  // absent: every layer dense
  std::optional<EncoderSpec> encoder;  // absent: text only
  /// DeepSeek-V3's multi-token prediction (report section 2.2): D sequential modules, module k
  /// predicting token i + k + 1. Each has its own RMSNorms on the previous depth's hidden state and
  /// on the next token's embedding, a projection M_k (2h x h) of their concatenation, one transformer
  /// block shaped like the model's last layer, and a norm before the output head; the embedding and
  /// the output head are the main model's. They run on the last pipeline stage, beside the head.
  int mtp_depth = 0;

  /// Standard attention's head width. MLA states its head widths in `mla` instead.
  int head_dim() const { return hidden / heads; }
  /// Layer index 0..layers-1: the first moe->dense_layers are dense, every later one MoE.
  bool is_moe_layer(int layer) const { return moe && layer >= moe->dense_layers; }
  int moe_layer_count() const { return moe ? layers - moe->dense_layers : 0; }
};

/// The encoder as a dense model of its own (seq_len = its tokens, no vocabulary), for the op and
/// memory models.
ModelSpec encoder_model(const ModelSpec& m);

/// Reads and validates a model file. Throws UserError on any bad field.
ModelSpec load_model_spec(const std::string& path);
ModelSpec parse_model_spec(const YamlField& root);

}  // namespace clustersim
