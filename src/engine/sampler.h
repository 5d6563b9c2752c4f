// Sampler: turns one sequence's logits into its next token. Randomness comes from a counter-based
// stream keyed by (seed, output index), so a seeded request draws the same numbers whatever else
// shares its batch.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sampling_params.h"
#include "ops/step_sampling.h"
#include "ops/token_choice.h"

namespace myriad {

struct TokenLogprob {
    TokenId token = 0;
    float logprob = 0.0f;
};

struct SampleResult {
    TokenId token = 0;
    float logprob = 0.0f;           // of the chosen token under the model's distribution
    std::vector<TokenLogprob> top;  // the top N alternatives when asked
};

// A uniform number in [0, 1) from (seed, counter): splitmix64 of the pair.
double counter_uniform(uint64_t seed, uint64_t counter);

// `logits` [vocab] is modified (penalties, bias, temperature). `prompt` and `output` are the
// sequence's tokens so far; `stop_ids` are masked while output is shorter than min_tokens.
// `mask` (structured output; null: none) is the allowed-token bitmask applied after the edits
// (ops/step_sampling.h); logprobs stay those of the model's unmasked distribution.
SampleResult sample_token(float* logits, int64_t vocab, const SamplingParams& params, uint64_t seed,
                          const std::vector<TokenId>& prompt, const std::vector<TokenId>& output,
                          const std::vector<TokenId>& stop_ids, const uint32_t* mask = nullptr);

// sample_token in parts, for backends that sample on their device (ops/step_sampling.h):
// - the edits of a row's logits (repetition, presence and frequency penalties, logit bias, stop
//   ids masked before min_tokens), appended to `edits` in the order they apply;
void append_logit_edits(const SamplingParams& params, int64_t vocab,
                        const std::vector<TokenId>& prompt, const std::vector<TokenId>& output,
                        const std::vector<TokenId>& stop_ids, std::vector<LogitEdit>& edits);
// - applying them (apply_logit_edits, ops/token_choice.h);
// - the rest of the choice: greedy or not, temperature, top-k/top-p/min-p and the draw
//   (counter_uniform(seed, tokens generated so far));
SampleRow sample_row(const SamplingParams& params, uint64_t seed, int64_t generated);
// - and the choice itself on edited logits (choose_token, ops/token_choice.h).

// A token chosen by the caller instead of sampled: its logprob (and the top N when asked) under
// the model's unprocessed distribution.
SampleResult forced_token(const float* logits, int64_t vocab, TokenId token,
                          const SamplingParams& params);

}  // namespace myriad
