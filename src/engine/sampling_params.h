// SamplingParams: how one request picks its tokens and when it stops (OpenAI and vLLM fields).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ops/step_input.h"

namespace myriad {

namespace grammar {
class Grammar;
class Vocabulary;
}  // namespace grammar

// Structured output: the grammar the output must follow, over the model's vocabulary as the
// grammar sees it. The constraint waits while the model reasons (engine/token_processor.h):
// from the start when the prompt left reasoning open, or when the model's first token is
// think_open, until think_close; and with `trigger` set, until the model writes that token
// (a strict tool's call section under tool_choice auto), the grammar then reading what follows.
struct OutputConstraint {
    std::shared_ptr<const grammar::Grammar> grammar;
    std::shared_ptr<const grammar::Vocabulary> vocab;
    TokenId think_open = -1, think_close = -1;  // -1: the model does not reason
    bool starts_in_reasoning = false;
    TokenId trigger = -1;  // -1: the grammar applies from the start (after reasoning)
};

struct SamplingParams {
    double temperature = 1.0;  // 0: greedy
    double top_p = 1.0;
    int64_t top_k = 0;  // 0 or -1: off
    double min_p = 0.0;
    std::optional<uint64_t> seed;     // none: drawn at submission
    double repetition_penalty = 1.0;  // > 1 discourages tokens already in prompt or output
    double presence_penalty = 0.0;    // subtracted once from tokens already generated
    double frequency_penalty = 0.0;   // subtracted per occurrence in the output
    std::vector<std::pair<TokenId, float>> logit_bias;
    std::vector<TokenId> stop_token_ids;  // in addition to the model's eos ids
    bool ignore_eos = false;
    int64_t max_tokens = 16;
    int64_t min_tokens = 0;     // stop tokens are masked until this many were generated
    int64_t top_logprobs = -1;  // -1: no logprobs; 0: the chosen token's only; N: and the top N
    // The prompt's logprobs (vLLM's prompt_logprobs), sent with the first output: -1 none; 0 each
    // prompt token's after the first; N also the top N at its position. The prefill then runs
    // the lm_head over every prompt row, and the prefix cache skips no row still needed.
    int64_t prompt_logprobs = -1;
    // Emitted as the first output tokens instead of sampled ones (logprobs still come from the
    // model); sampling takes over after them. Used to force a tool-call header (tool_choice) and
    // by the server's test facility that replays a given text.
    std::vector<TokenId> forced_tokens;
    // Structured output (response_format, tool_choice, strict tools); null: unconstrained.
    std::shared_ptr<const OutputConstraint> constraint;
};

// Defaults that a checkpoint's generation_config.json sets (vLLM: --generation-config auto).
struct SamplingDefaults {
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;
};

}  // namespace myriad
