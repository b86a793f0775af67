#pragma once
// How a scenario's transformer layers are split over the model stages (parallel.*): evenly; as a
// listed stage_layers; or by Megatron-Core's uneven-split options. A stage may hold no transformer
// layer when it is the first (it still holds the embedding) or the last (the output layer and the
// loss), as Llama 3 405B's pipeline did and Megatron-Core allows; any other empty stage, and any
// split Megatron-Core would reject, is a UserError at the field that asked for it.
//
// Megatron-Core's options, as megatron/core/transformer/transformer_block.py
// (get_num_layers_to_build) reads them:
//  - decoder_first_pipeline_num_layers / decoder_last_pipeline_num_layers (its
//    --decoder-first/last-pipeline-num-layers, TransformerConfig.num_layers_in_first/last_pipeline_stage):
//    the first (last) pipeline rank holds that many layers, split evenly over its virtual stages;
//    the other ranks share the rest evenly. They apply to Megatron's layout, rank r holding model
//    stages r, r + pp, r + 2 pp, ...
//  - account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split: the embedding
//    (the loss) counts as one more layer in an even split over the model stages, and the first
//    (last) model stage builds one transformer layer fewer in its place.
// Megatron-Core refuses to combine the two kinds; so does this.
#include <vector>

#include "topologies/yaml_reader.hpp"

namespace clustersim {

struct ScenarioSpec;

/// The parallel.* keys that choose the split, stage_layers first.
inline constexpr const char* kStageSplitFields[] = {
    "stage_layers", "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
    "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"};

/// Whether the scenario chooses the split itself (any of kStageSplitFields), so the layer count need
/// not divide evenly.
bool stage_split_given(const YamlField& parallel);

/// Layers per model stage for `s` (its schedule, virtual stages and model already read).
/// `schedule` is the scenario's schedule field, blamed when an even split does not divide.
std::vector<int> split_stage_layers(const YamlField& parallel, const YamlField& schedule, const ScenarioSpec& s);

}  // namespace clustersim
