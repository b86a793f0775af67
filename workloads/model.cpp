#include "workloads/model.hpp"

#include "workloads/key_aliases.hpp"

#include <limits>

namespace clustersim {

const char* ffn_activation_name(FfnType kind) {
  switch (kind) {
    case FfnType::gelu: return "gelu";
    case FfnType::swiglu: return "swiglu";
    case FfnType::squared_relu: return "squared_relu";
  }
  return "gelu";  // unreachable: every kind is listed
}

namespace {

// Upper bounds far above any published model (the widest hidden size is about 25K, the longest
// context 10M tokens, the largest vocabulary 256K) that keep every product of them (weights,
// activations, FLOPs) well inside a double's exact integers and a 64-bit byte count.
constexpr long kMaxLayers = 10'000;
constexpr long kMaxWidth = 1L << 17;       // hidden, head dimensions, latent ranks
constexpr long kMaxFfnHidden = 1L << 20;
constexpr long kMaxHeads = 1L << 14;
constexpr long kMaxVocab = 1L << 22;
constexpr long kMaxSeqLen = 1L << 24;
constexpr long kMaxExperts = 1L << 12;
constexpr long kMaxMtpDepth = 16;  // DeepSeek-V3 trains D = 1; each module is one more layer and head pass

int read_int(const YamlField& f, long max, const char* unit = "") { return static_cast<int>(f.as_integer_in(1, max, unit)); }
int read_count(const YamlField& f, long max) { return static_cast<int>(f.as_integer_in(0, max)); }

FfnType read_ffn(const YamlField& f) {
  const std::string kind = f.as_choice({"gelu", "swiglu", "squared_relu"});
  return kind == "gelu" ? FfnType::gelu : kind == "swiglu" ? FfnType::swiglu : FfnType::squared_relu;
}

/// `attention:`: absent or type standard is MHA/GQA from heads and kv_heads.
std::optional<MlaSpec> parse_attention(const YamlField& root) {
  const auto block = root.find("attention");
  if (!block) return std::nullopt;
  if (block->child("type").as_choice({"standard", "mla"}) == "standard") {
    block->expect_keys({"type"});
    return std::nullopt;
  }
  block->expect_keys({"type", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  MlaSpec mla;
  mla.q_lora_rank = read_int(block->child("q_lora_rank"), kMaxWidth);
  mla.kv_lora_rank = read_int(block->child("kv_lora_rank"), kMaxWidth);
  mla.qk_nope_head_dim = read_int(block->child("qk_nope_head_dim"), kMaxWidth);
  mla.qk_rope_head_dim = read_int(block->child("qk_rope_head_dim"), kMaxWidth);
  mla.v_head_dim = read_int(block->child("v_head_dim"), kMaxWidth);
  return mla;
}

std::optional<MoeSpec> parse_moe(const YamlField& root, int layers) {
  const auto block = root.find("moe");
  if (!block) return std::nullopt;
  block->expect_keys({"routed_experts", "shared_experts", "top_k", "expert_ffn_hidden", "dense_layers",
                      "capacity_factor", "dropless", "node_limit"});
  MoeSpec moe;
  moe.routed_experts = read_int(block->child("routed_experts"), kMaxExperts, "experts");
  const YamlField top_k = block->child("top_k");
  moe.top_k = static_cast<int>(top_k.as_integer_in(1, moe.routed_experts, "experts (routed_experts)"));
  if (auto f = block->find("shared_experts")) moe.shared_experts = read_count(*f, kMaxExperts);
  moe.expert_ffn_hidden = read_int(block->child("expert_ffn_hidden"), kMaxFfnHidden);
  if (auto f = block->find("dense_layers")) {
    moe.dense_layers = read_count(*f, kMaxLayers);
    if (moe.dense_layers >= layers)
      f->fail("expected fewer than layers (" + std::to_string(layers) + "): an MoE model needs an MoE layer");
  }
  const auto capacity = block->find("capacity_factor");
  if (capacity) moe.capacity_factor = capacity->as_number_in(1e-3, 1e3);
  if (auto dropless = block->find("dropless")) {
    if (capacity) dropless->fail("expected either capacity_factor or dropless, not both");
    if (!dropless->as_bool()) dropless->fail("expected true (to drop tokens, give capacity_factor instead)");
  }
  if (auto f = block->find("node_limit")) {
    moe.node_limit = read_int(*f, kMaxExperts, "nodes");
    if (*moe.node_limit > moe.top_k)
      f->fail("expected at most top_k (" + std::to_string(moe.top_k) + "): a token's experts span at most top_k nodes");
  }
  return moe;
}

std::optional<EncoderSpec> parse_encoder(const YamlField& root) {
  const std::optional<YamlField> block = root.find("encoder");
  if (!block) return std::nullopt;
  block->expect_keys({"name", "layers", "hidden", "heads", "ffn_hidden", "ffn", "tokens", "placement"});
  EncoderSpec e;
  e.name = block->child("name").as_string();
  e.layers = read_int(block->child("layers"), kMaxLayers, "layers");
  e.hidden = read_int(block->child("hidden"), kMaxWidth);
  const YamlField heads = block->child("heads");
  e.heads = read_int(heads, kMaxHeads, "heads");
  if (e.hidden % e.heads != 0) heads.fail("expected a divisor of the encoder's hidden (" + std::to_string(e.hidden) + ")");
  e.ffn_hidden = read_int(block->child("ffn_hidden"), kMaxFfnHidden);
  e.ffn = read_ffn(block->child("ffn"));
  e.tokens = read_int(block->child("tokens"), kMaxSeqLen, "tokens");
  if (auto p = block->find("placement"))
    e.placement = p->as_choice({"first_stage", "own_stage"}) == "own_stage" ? EncoderPlacement::own_stage
                                                                             : EncoderPlacement::first_stage;
  return e;
}

}  // namespace

ModelSpec encoder_model(const ModelSpec& m) {
  ModelSpec e;
  e.file = m.file;
  e.name = m.encoder->name;
  e.layers = m.encoder->layers;
  e.hidden = m.encoder->hidden;
  e.heads = e.kv_heads = m.encoder->heads;
  e.ffn_hidden = m.encoder->ffn_hidden;
  e.ffn = m.encoder->ffn;
  e.seq_len = m.encoder->tokens;
  return e;
}

ModelSpec parse_model_spec(const YamlField& root) {
  apply_key_aliases(root, model_key_aliases());  // Megatron-LM's and Hugging Face's names
  root.expect_keys({"name", "description", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "ffn", "vocab",
                    "seq_len", "tied_embeddings", "source", "attention", "moe", "encoder", "mtp_depth"});
  ModelSpec m;
  m.file = root.file();
  m.name = root.child("name").as_string();
  for (const char* text : {"description", "source"})  // free text, but text
    if (auto f = root.find(text)) f->as_string();
  m.layers = read_int(root.child("layers"), kMaxLayers, "layers");
  m.hidden = read_int(root.child("hidden"), kMaxWidth);
  m.mla = parse_attention(root);
  YamlField heads = root.child("heads");
  m.heads = read_int(heads, kMaxHeads, "heads");
  // MLA states its head widths; standard attention splits hidden into heads.
  if (!m.mla && m.hidden % m.heads != 0) heads.fail("expected a divisor of hidden (" + std::to_string(m.hidden) + ")");
  m.kv_heads = m.heads;
  if (auto kv = root.find("kv_heads")) {
    if (m.mla) kv->fail("expected no kv_heads with attention type mla: every head reads the shared latent");
    m.kv_heads = read_int(*kv, kMaxHeads, "heads");
    if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
      kv->fail("expected a divisor of heads (" + std::to_string(m.heads) + ")");
  }
  m.moe = parse_moe(root, m.layers);
  m.ffn = read_ffn(root.child("ffn"));
  if (m.moe && m.moe->dense_layers == 0) {
    if (auto f = root.find("ffn_hidden"))
      f->fail("expected no ffn_hidden: every layer is MoE (moe.dense_layers is 0), experts use moe.expert_ffn_hidden");
  } else {
    m.ffn_hidden = read_int(root.child("ffn_hidden"), kMaxFfnHidden);
  }
  m.vocab = read_int(root.child("vocab"), kMaxVocab, "tokens");
  m.seq_len = read_int(root.child("seq_len"), kMaxSeqLen, "tokens");
  m.tied_embeddings = root.child("tied_embeddings").as_bool();
  m.encoder = parse_encoder(root);
  if (auto d = root.find("mtp_depth")) m.mtp_depth = static_cast<int>(d->as_integer_in(0, kMaxMtpDepth, "modules"));
  return m;
}

ModelSpec load_model_spec(const std::string& path) { return parse_model_spec(YamlField::load_file(path)); }

}  // namespace clustersim
