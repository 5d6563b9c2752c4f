// generation_config.json: stop ids and default sampling values of a checkpoint.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace myriad {

struct GenerationConfig {
    std::vector<int64_t> eos_token_ids;  // eos_token_id as a number or a list
    std::optional<int64_t> bos_token_id;
    std::optional<int64_t> pad_token_id;
    std::optional<bool> do_sample;
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k, max_new_tokens;
};

// Reads `<dir>/generation_config.json`; a missing file gives an empty config, a malformed one a
// bad-input Error naming the file and field.
GenerationConfig load_generation_config(const std::string& dir);

}  // namespace myriad
