// What a checkpoint says about generation: its stop token ids (generation_config.json's eos list
// ∪ config.json's ∪ the eos_token of tokenizer_config.json) and its default sampling values.
#pragma once

#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "model/model_config.h"

namespace myriad {

struct ModelDefaults {
    std::vector<TokenId> eos_ids;
    SamplingDefaults sampling;
};

ModelDefaults load_model_defaults(const std::string& dir, const ModelConfig& config);

}  // namespace myriad
