// Streaming detokenization: ids go in one at a time, text comes out as soon as it is complete
// UTF-8. A character whose bytes are split across tokens is held back until its last byte
// arrives; bytes that can never form a character become U+FFFD (as decode() does), so the
// deltas joined equal decode() of all the ids wherever the decoder works token by token
// (ByteLevel, Replace, ByteFallback: every fixture, every tiktoken file). Decoders that look at
// the position (Metaspace's or Strip's first-token space) keep that space in the stream.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace myriad {

class IncrementalDetokenizer {
  public:
    // With skip_special_tokens, special tokens are dropped except those in `keep` (the markers
    // an output parser needs: </think>, tool-call markers). `tokenizer` must outlive this.
    IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                           std::vector<TokenId> keep = {});

    // The text that `id` completes (possibly empty).
    std::string push(TokenId id);
    // Whatever is still held back, with an unfinished character as U+FFFD. Ends the stream.
    std::string finish();

  private:
    const Tokenizer& tokenizer_;
    bool skip_special_;
    std::unordered_set<TokenId> keep_;
    std::string pending_;  // bytes of an unfinished character
};

// The special tokens of `tokenizer` that output parsers look for (reasoning and tool-call
// markers of the DeepSeek, Kimi and Qwen families), for IncrementalDetokenizer's `keep`.
std::vector<TokenId> parser_special_tokens(const Tokenizer& tokenizer);

}  // namespace myriad
