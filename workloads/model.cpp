#include "workloads/model.hpp"

#include <limits>

namespace clustersim {

namespace {
int read_int(const YamlField& f) {
  const long v = f.as_positive_integer();
  if (v > std::numeric_limits<int>::max()) f.fail("expected a positive integer up to 2147483647");
  return static_cast<int>(v);
}
}  // namespace

ModelSpec parse_model_spec(const YamlField& root) {
  root.expect_keys({"name", "description", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "ffn", "vocab",
                    "seq_len", "tied_embeddings", "source"});
  ModelSpec m;
  m.file = root.file();
  m.name = root.child("name").as_string();
  m.layers = read_int(root.child("layers"));
  m.hidden = read_int(root.child("hidden"));
  YamlField heads = root.child("heads");
  m.heads = read_int(heads);
  if (m.hidden % m.heads != 0) heads.fail("expected a divisor of hidden (" + std::to_string(m.hidden) + ")");
  m.kv_heads = m.heads;
  if (auto kv = root.find("kv_heads")) {
    m.kv_heads = read_int(*kv);
    if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
      kv->fail("expected a divisor of heads (" + std::to_string(m.heads) + ")");
  }
  m.ffn = root.child("ffn").as_choice({"gelu", "swiglu"}) == "gelu" ? FfnType::gelu : FfnType::swiglu;
  m.ffn_hidden = read_int(root.child("ffn_hidden"));
  m.vocab = read_int(root.child("vocab"));
  m.seq_len = read_int(root.child("seq_len"));
  m.tied_embeddings = root.child("tied_embeddings").as_bool();
  return m;
}

ModelSpec load_model_spec(const std::string& path) { return parse_model_spec(YamlField::load_file(path)); }

}  // namespace clustersim
