#include "workloads/stage_split.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "workloads/scenario.hpp"

namespace clustersim {

namespace {

std::string join_counts(const std::vector<int>& counts) {
  std::string out;
  for (int c : counts) out += (out.empty() ? "" : ", ") + std::to_string(c);
  return "[" + out + "]";
}

/// Every model stage holds a layer except, possibly, the first language stage (the embedding is
/// its work) and the last (the output layer and the loss); `blame` is the field that chose them.
void check_empty_stages(const std::vector<int>& counts, const ScenarioSpec& s, const YamlField& blame) {
  const int embedding = s.first_language_stage(), head = static_cast<int>(counts.size()) - 1;
  for (int k = 0; k < static_cast<int>(counts.size()); ++k)
    if (counts[static_cast<std::size_t>(k)] == 0 && k != embedding && k != head && k >= embedding)
      blame.fail("expected a transformer layer on model stage " + std::to_string(k) + " of " + join_counts(counts) +
                 ": only the first stage (which holds the embedding) and the last (the output layer and loss) may hold none");
}

std::optional<int> layer_count(const std::optional<YamlField>& f, const ScenarioSpec& s) {
  if (!f) return std::nullopt;
  const long n = f->as_integer();
  if (n < 0 || n > s.model.layers)
    f->fail("expected a layer count from 0 to the " + std::to_string(s.model.layers) + " layers of " + s.model.name);
  return static_cast<int>(n);
}

std::vector<int> listed_split(const YamlField& listed, const ScenarioSpec& s, int stages) {
  const int encoder_stages = s.first_language_stage();
  const std::vector<long> counts = listed.as_integer_list(0, s.model.layers);
  long sum = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (k < std::size_t(encoder_stages) && counts[k] != 0)
      listed.fail("expected 0 language-model layers on stage 0: the encoder has it to itself (placement own_stage)");
    sum += counts[k];
  }
  if (counts.size() != static_cast<std::size_t>(stages) || sum != s.model.layers)
    listed.fail("expected " + std::to_string(stages) + " layer counts (the model stages of " + s.schedule_name +
                ") adding up to the " + std::to_string(s.model.layers) + " layers of " + s.model.name + "; got " +
                std::to_string(counts.size()) + " adding up to " + std::to_string(sum));
  return {counts.begin(), counts.end()};
}

/// Megatron-Core's uneven first and last pipeline ranks.
std::vector<int> uneven_split(const YamlField& parallel, const ScenarioSpec& s, int stages) {
  const std::optional<YamlField> first_f = parallel.find("decoder_first_pipeline_num_layers"),
                                 last_f = parallel.find("decoder_last_pipeline_num_layers");
  const YamlField& blame = first_f ? *first_f : *last_f;
  for (const char* flag : {"account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"})
    if (auto f = parallel.find(flag); f && f->as_bool())
      f->fail("expected false with " + blame.path() +
              ": Megatron-Core does not combine an uneven first or last stage with the embedding or loss counted as a layer");
  const ScheduleShape shape = s.schedule_shape();
  const int p = shape.stages, v = shape.chunks;
  if (p < 2) blame.fail("expected pp of 2 or more: the first and the last pipeline rank are one rank here");
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < v; ++c)
      if (s.schedule->chunk_stage(shape, r, c) != c * p + r || stages != p * v)
        blame.fail("expected stage_layers with " + s.schedule_name +
                   ": Megatron-Core's first and last stage counts are per rank of its own layout (rank r holding model "
                   "stages r, r + pp, ...), which " + s.schedule_name + " does not use");
  const std::optional<int> first = layer_count(first_f, s), last = layer_count(last_f, s);
  const int left = s.model.layers - first.value_or(0) - last.value_or(0);
  const int middle_ranks = p - (first ? 1 : 0) - (last ? 1 : 0);
  const std::string model = std::to_string(s.model.layers) + " layers of " + s.model.name;
  if (left < 0) blame.fail("expected the first and last stage counts to add up to at most the " + model);
  if (middle_ranks == 0 && left != 0)
    blame.fail("expected the first and last stage counts to add up to the " + model + " with pp 2; they leave " +
               std::to_string(left));
  if (middle_ranks > 0 && left % middle_ranks != 0)
    blame.fail("expected the " + std::to_string(left) + " layers left to divide evenly over the " +
               std::to_string(middle_ranks) + " other pipeline ranks");
  const int middle = middle_ranks > 0 ? left / middle_ranks : 0;
  std::vector<int> counts(static_cast<std::size_t>(stages), 0);
  for (int r = 0; r < p; ++r) {
    const std::optional<int> own = r == 0 ? first : r == p - 1 ? last : std::nullopt;
    const int rank_layers = own.value_or(middle);
    if (rank_layers % v != 0)
      (own ? (r == 0 ? *first_f : *last_f) : blame)
          .fail("expected the " + std::to_string(rank_layers) + " layers of pipeline rank " + std::to_string(r) +
                " to divide evenly over its " + std::to_string(v) + " virtual stages");
    for (int c = 0; c < v; ++c) counts[static_cast<std::size_t>(c * p + r)] = rank_layers / v;
  }
  check_empty_stages(counts, s, blame);
  return counts;
}

/// Megatron-Core's embedding and loss counted as layers of an even split.
std::vector<int> accounted_split(const YamlField& embedding_f, const YamlField& loss_f, bool embedding, bool loss,
                                 const ScenarioSpec& s, int stages) {
  const YamlField& blame = embedding ? embedding_f : loss_f;
  const int counted = s.model.layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (counted % stages != 0)
    blame.fail("expected the " + std::to_string(stages) + " model stages of " + s.schedule_name + " to divide the " +
               std::to_string(s.model.layers) + " layers of " + s.model.name + " plus the embedding and loss counted as layers (" +
               std::to_string(counted) + ")");
  std::vector<int> counts(static_cast<std::size_t>(stages), counted / stages);
  if (embedding) --counts.front();
  if (loss) --counts.back();
  check_empty_stages(counts, s, blame);
  return counts;
}

/// Every language stage the same count; an encoder on its own stage holds none.
std::vector<int> even_split(const YamlField& parallel, const YamlField& schedule, const ScenarioSpec& s, int stages) {
  const ScheduleShape shape = s.schedule_shape();
  const int encoder_stages = s.first_language_stage();
  const int language_stages = stages - encoder_stages;
  std::vector<int> counts(static_cast<std::size_t>(stages), s.model.layers / std::max(language_stages, 1));
  std::fill_n(counts.begin(), encoder_stages, 0);
  const std::string layers = std::to_string(s.model.layers) + " layers of " + s.model.name + " (" + s.model.file + ")";
  if (encoder_stages > 0 && s.model.layers % language_stages != 0)
    (parallel.find("pp") ? *parallel.find("pp") : parallel).fail("expected the " + std::to_string(language_stages) + " model stages after the encoder's to divide the " +
                              layers + ", or a stage_layers list starting with 0");
  if (s.model.layers % stages != 0 && encoder_stages == 0) {
    if (s.schedule->chunks_required() > 0 && !parallel.find("virtual_stages"))
      schedule.fail(s.schedule_name + " splits the model into " + std::to_string(stages) + " stages (pp " +
                    std::to_string(shape.stages) + ", " + std::to_string(shape.chunks) + " chunks per rank); expected that to divide the " +
                    layers);
    parallel.child("virtual_stages")
        .fail("expected pp x virtual_stages (" + std::to_string(long(shape.stages) * shape.chunks) + ") to divide the " + layers);
  }
  return counts;
}

}  // namespace

bool stage_split_given(const YamlField& parallel) {
  for (const char* f : kStageSplitFields)
    if (parallel.find(f)) return true;
  return false;
}

std::vector<int> split_stage_layers(const YamlField& parallel, const YamlField& schedule, const ScenarioSpec& s) {
  const int stages = s.schedule->model_stages(s.schedule_shape());
  const std::optional<YamlField> listed = parallel.find("stage_layers");
  const std::optional<YamlField> embedding_f = parallel.find("account_for_embedding_in_pipeline_split"),
                                 loss_f = parallel.find("account_for_loss_in_pipeline_split");
  const bool embedding = embedding_f && embedding_f->as_bool(), loss = loss_f && loss_f->as_bool();
  const bool uneven = parallel.find("decoder_first_pipeline_num_layers") || parallel.find("decoder_last_pipeline_num_layers");
  if (listed) {
    for (const char* f : kStageSplitFields)
      if (auto other = parallel.find(f); other && std::string(f) != "stage_layers")
        other->fail("expected no " + std::string(f) + " with stage_layers, which already places every layer");
    std::vector<int> counts = listed_split(*listed, s, stages);
    check_empty_stages(counts, s, *listed);
    return counts;
  }
  if (s.first_language_stage() > 0)
    for (const char* f : kStageSplitFields)
      if (auto other = parallel.find(f))
        other->fail("expected stage_layers instead: the encoder has a stage of its own (placement own_stage)");
  if (uneven) return uneven_split(parallel, s, stages);
  if (embedding || loss) return accounted_split(embedding ? *embedding_f : *loss_f, loss ? *loss_f : *embedding_f, embedding, loss, s, stages);
  return even_split(parallel, schedule, s, stages);
}

}  // namespace clustersim
