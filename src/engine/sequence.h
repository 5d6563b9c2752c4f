// Sequence: the engine's record of one request — its tokens (prompt, then output), how many of
// them have KV in the cache, its blocks, its sampling parameters, its handle, and the draft
// tokens a speculative drafter proposed to follow its last token (verified by the next step).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/ngram_index.h"
#include "engine/request.h"
#include "engine/sampling_params.h"
#include "engine/token_processor.h"

namespace myriad {

struct Sequence {
    uint64_t id = 0;
    std::vector<TokenId> tokens;  // prompt followed by the generated tokens
    int64_t prompt_len = 0;
    int64_t num_computed = 0;   // tokens whose KV is in the cache
    int64_t cached_tokens = 0;  // prompt tokens found in the prefix cache at first admission
    bool admitted = false;      // scheduled at least once
    int64_t preemptions = 0;
    std::vector<BlockId> blocks;
    std::vector<uint64_t> block_hashes;  // chain hashes of its full blocks so far
    SamplingParams params;
    uint64_t seed = 0;
    std::vector<TokenId> stop_ids;  // eos ids (unless ignore_eos) and the request's stop ids
    std::shared_ptr<RequestHandle> handle;
    // Prompt logprobs: positions [0, prompt_logprobs_done) have given the logprob of the token
    // after them (never recomputed after a preemption); their results wait in prompt_logprobs
    // for the first output.
    int64_t prompt_logprobs_done = 0;
    std::vector<SampleResult> prompt_logprobs;
    TokenProcessor processor;  // forced tokens and structured output for its next token
    // Speculative decoding (engine/drafter.h): the tokens proposed to follow tokens.back(),
    // verified by the next step and cleared after it; and the draft length it allows now (it
    // adapts to the sequence's recent acceptance; 0 until the engine's drafter sets it).
    std::vector<TokenId> draft;
    int64_t draft_limit = 0;
    // Drafts refused whole in a row, and the steps it now goes without one (a sequence whose
    // drafts keep missing stops paying for their rows: next_draft_rest).
    int64_t draft_misses = 0;
    int64_t draft_rest = 0;
    NgramIndex ngram_index;  // the ngram drafter's lookup over tokens (empty unless it runs)

    int64_t num_output() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
    int64_t remaining() const { return static_cast<int64_t>(tokens.size()) - num_computed; }
    // Decoding: every token but the last has its KV (a draft may then follow the last).
    bool decoding() const { return num_output() > 0 && remaining() == 1; }
    bool wants_prompt_logprobs() const {
        return params.prompt_logprobs >= 0 && prompt_logprobs_done < prompt_len - 1;
    }
    // Tokens a prefix-cache hit may cover: any, unless prompt logprobs still need rows; then
    // only those whose logprobs were taken already (a hit skips its rows).
    int64_t cacheable_tokens() const {
        return wants_prompt_logprobs() ? prompt_logprobs_done : static_cast<int64_t>(tokens.size());
    }
    std::vector<TokenId> prompt() const {
        return std::vector<TokenId>(tokens.begin(), tokens.begin() + prompt_len);
    }
    std::vector<TokenId> output() const {
        return std::vector<TokenId>(tokens.begin() + prompt_len, tokens.end());
    }
};

}  // namespace myriad
