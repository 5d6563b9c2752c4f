// SamplingParams: how one request picks its tokens and when it stops (OpenAI and vLLM fields).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ops/step_input.h"

namespace myriad {

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
};

// Defaults that a checkpoint's generation_config.json sets (vLLM: --generation-config auto).
struct SamplingDefaults {
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;
};

}  // namespace myriad
