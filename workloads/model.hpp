#pragma once
// A dense decoder-only transformer as the user writes it (scenarios/models/*.yaml). Pure data; the
// FLOP and parameter counts derived from it live in model_math.hpp.
#include <string>

#include "topologies/yaml_reader.hpp"

namespace clustersim {

enum class FfnType { gelu, swiglu };

struct ModelSpec {
  std::string file;
  std::string name;
  int layers = 0;
  int hidden = 0;            // h
  int heads = 0;             // a
  int kv_heads = 0;          // GQA/MQA: == heads for plain multi-head attention
  int ffn_hidden = 0;        // FFN inner size (4h for GPT-3; SwiGLU models state theirs)
  FfnType ffn = FfnType::gelu;
  int vocab = 0;             // V
  int seq_len = 0;           // s
  bool tied_embeddings = true;

  int head_dim() const { return hidden / heads; }
};

/// Reads and validates a model file. Throws UserError on any bad field.
ModelSpec load_model_spec(const std::string& path);
ModelSpec parse_model_spec(const YamlField& root);

}  // namespace clustersim
