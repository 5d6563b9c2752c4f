// Writes a small DeepSeek-V3-family checkpoint with random BF16 weights for tests that compare
// the engine with itself (TP ranks, MLA forms, chunking) or feed it broken files.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace myriad::testing {

// A small valid config (4 heads, 8 experts in 4 groups, q_lora set, YaRN), as JSON to modify.
nlohmann::ordered_json small_config();

// Writes config.json and model.safetensors for `config` into `dir` (which must exist), its MTP
// layers (num_nextn_predict_layers) included. Tensors whose name ends with a key of `scales` are
// multiplied by its value.
void write_random_model(const std::string& dir, const nlohmann::ordered_json& config,
                        uint64_t seed = 1, const std::map<std::string, float>& scales = {});

}  // namespace myriad::testing
