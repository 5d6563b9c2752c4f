#include "tokenizer/incremental_detokenizer.h"

#include "tokenizer/utf8.h"

namespace myriad {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                               std::vector<TokenId> keep)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens), keep_(keep.begin(), keep.end()) {}

std::string IncrementalDetokenizer::push(TokenId id) {
    if (skip_special_ && tokenizer_.is_special(id) && !keep_.count(id)) return {};
    pending_ += tokenizer_.token_bytes(id);
    size_t n = utf8::complete_prefix(pending_);
    if (n == 0) return {};
    std::string ready = pending_.substr(0, n);
    pending_.erase(0, n);
    return utf8::is_valid(ready) ? ready : utf8::replace_invalid(ready);
}

std::string IncrementalDetokenizer::finish() {
    std::string rest = utf8::replace_invalid(pending_);
    pending_.clear();
    return rest;
}

std::vector<TokenId> parser_special_tokens(const Tokenizer& tokenizer) {
    static const char* kNames[] = {
        "<think>",
        "</think>",
        // Kimi-K2
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        // DeepSeek-V3
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁sep｜>",
        // Qwen
        "<tool_call>",
        "</tool_call>",
    };
    std::vector<TokenId> ids;
    for (const char* name : kNames)
        if (auto id = tokenizer.token_to_id(name); id && tokenizer.is_special(*id))
            ids.push_back(*id);
    return ids;
}

}  // namespace myriad
