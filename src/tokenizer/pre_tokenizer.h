// tokenizer.json pre-tokenizers: they cut each stretch of (normalized) text into the pieces that
// BPE encodes one by one: Split (regex or literal; Isolated, Removed, MergedWithPrevious,
// MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space, use_regex: GPT-2's split),
// Digits, Metaspace, Sequence. Each stage re-cuts every piece of the stage before.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace myriad {

// Pieces of one stretch of text: spans of `text`, in order. `at_origin` marks the piece that
// starts where the input itself starts (Metaspace's prepend_scheme "first").
struct Pieces {
    struct Span {
        uint32_t begin, end;
        bool at_origin;
    };
    std::string text;
    std::vector<Span> spans;

    std::string_view view(const Span& s) const {
        return std::string_view(text).substr(s.begin, s.end - s.begin);
    }
};

class PreTokenizer {
  public:
    virtual ~PreTokenizer() = default;
    virtual void apply(Pieces& pieces) const = 0;
};

// The pre-tokenizer a tokenizer.json "pre_tokenizer" object describes; nullptr for null.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::ordered_json& j,
                                                 const std::string& source,
                                                 const std::string& field);

// True when `j` (a pre_tokenizer object) has a ByteLevel stage: the vocabulary is then in
// GPT-2's byte-level alphabet.
bool has_byte_level(const nlohmann::ordered_json& j);

}  // namespace myriad
