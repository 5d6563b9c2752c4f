// The arithmetic of choosing a token from one row of logits, on the host: the reference that
// the engine's sampler (engine/sampler.h) and device samplers follow.
#pragma once

#include <cstdint>

#include "ops/step_input.h"
#include "ops/step_sampling.h"

namespace myriad {

// Applies a row's edits in order (tokens outside [0, vocab) are ignored).
void apply_logit_edits(float* logits, int64_t vocab, const LogitEdit* begin, const LogitEdit* end);

// Sets the logits of the tokens whose bit in `mask` (ceil(vocab / 32) words) is clear to -inf.
void apply_token_mask(float* logits, int64_t vocab, const uint32_t* mask);

// The token `row` picks from edited logits: argmax (lowest id on ties) when greedy; else the
// candidates sorted by logit (ties by id), probabilities exp(l * inv_t - max) in double, cut to
// top_k, then to the shortest prefix whose normalised sum reaches top_p, then to those at least
// min_p times the first; the first candidate whose cumulative probability exceeds
// uniform * (the kept total).
TokenId choose_token(const float* logits, int64_t vocab, const SampleRow& row);

// The same choice from the first `count` candidates of a row already in that order: logits[i]
// and ids[i] the i-th by logit (ties by id). choose_token is this on the whole sorted row, so a
// row's top `count` >= its top_k (or the whole row) choose the same token.
TokenId choose_among_sorted(const float* logits, const TokenId* ids, int64_t count,
                            const SampleRow& row);

}  // namespace myriad
