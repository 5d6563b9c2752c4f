// Added (and special) tokens: found in the raw text before pre-tokenization, as HF tokenizers
// does: at the leftmost position the longest token wins; single_word tokens only match between
// non-word characters; lstrip/rstrip take the white space on that side into the match.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace myriad {

struct AddedToken {
    TokenId id = 0;
    std::string content;
    bool special = false;
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
    bool normalized = false;  // matched in the normalized text (else in the raw text)
};

// A stretch of text, or an added token (id >= 0) with the text it took.
struct Segment {
    size_t begin, end;
    TokenId id;  // -1: ordinary text
};

class AddedTokenMatcher {
  public:
    // `patterns[k]` is what token k matches (its content, or its normalized content).
    AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns);
    AddedTokenMatcher() = default;

    bool empty() const { return tokens_.empty(); }
    // Appends the segments of `text` to `out`, offsets shifted by `base`; they cover the text.
    void split(std::string_view text, size_t base, std::vector<Segment>& out) const;

  private:
    struct Node {
        int32_t token = -1;  // index into tokens_ of the pattern ending here
        std::vector<std::pair<uint8_t, int32_t>> children;
    };
    // The longest pattern starting at text[i]: its token index and length (-1 when none).
    int32_t longest_at(std::string_view text, size_t i, size_t* length) const;

    std::vector<AddedToken> tokens_;
    std::vector<Node> nodes_;
    int32_t root_[256];
};

// Rust regex's `\w` (Alphabetic, marks, decimal numbers, connector punctuation, joiners) and
// `\s` (White_Space), which HF applies to single_word, lstrip and rstrip.
bool is_word_char(uint32_t cp);
bool is_white_space(uint32_t cp);

}  // namespace myriad
