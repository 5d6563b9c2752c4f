// Reading tokenizer.json: a streaming (SAX) parse that stores model.vocab and model.merges
// compactly (hundreds of thousands of entries: a JSON tree of them would cost a second) and
// keeps everything else as a JSON tree.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace myriad {

struct TokenizerJson {
    nlohmann::ordered_json root;  // the file without model.vocab and model.merges
    std::vector<std::pair<std::string, int64_t>> vocab;       // in file order
    std::vector<std::pair<std::string, std::string>> merges;  // "a b" or ["a", "b"]
};

// Parses `text`; errors are bad input naming `source` and the field.
TokenizerJson parse_tokenizer_json(std::string_view text, const std::string& source);

}  // namespace myriad
