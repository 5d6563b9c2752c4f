// The fields of tokenizer_config.json that tokenization needs: special-token names (strings or
// AddedToken objects), add_bos_token/add_eos_token, added_tokens_decoder and tiktoken's pat_str.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"

namespace myriad {

struct TokenizerConfig {
    std::optional<std::string> bos_token, eos_token;
    bool add_bos_token = false, add_eos_token = false;
    std::optional<std::string> pat_str;
    std::vector<AddedToken> added_tokens_decoder;  // sorted by id
};

// Parses the object `j`; `source` names the file in messages.
TokenizerConfig parse_tokenizer_config(const nlohmann::ordered_json& j, const std::string& source);

// Reads `path`; a missing file gives the defaults.
TokenizerConfig read_tokenizer_config(const std::string& path);

}  // namespace myriad
