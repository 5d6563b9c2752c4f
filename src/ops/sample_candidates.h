// Sampling across vocabulary slices: with the lm_head split by vocabulary over tensor-parallel
// ranks, a row whose choice needs only its best few tokens (greedy; top_k up to
// kMaxSliceCandidates, with or without top-p and min-p applied among them) crosses as each
// rank's top candidates of its slice (after the row's edits and mask) instead of the whole row:
// a few hundred bytes, not vocab floats. Every rank merges the gathered lists (logit descending,
// ties by id) and chooses with choose_among_sorted (ops/token_choice.h), so every rank ends the
// step with the token that choose_token picks from the whole row. The other rows (top-p or
// min-p without top-k, top_k above the bound, rows the engine samples on the host) are gathered
// whole.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/step_input.h"
#include "ops/step_sampling.h"

namespace myriad {

// The largest top_k sampled from candidates; rows with more are gathered whole.
inline constexpr int32_t kMaxSliceCandidates = 64;

// One rank's view of a step's sampling across `world` slices of `shard` columns.
struct SliceSampling {
    std::vector<int32_t> rows;  // logit rows chosen from candidates, ascending
    std::vector<int32_t> full;  // logit rows gathered whole, ascending
    // Candidates each rank sends per candidate row: the largest top_k among the rows (1 when all
    // are greedy), less than half the slice's width.
    int64_t k = 0;
    // The step's sampling for this rank's columns (token c of the slice is c here): edits moved
    // by -vocab_begin (those of other slices fall outside [0, shard) and are ignored), masks cut
    // to the slice; every row not in `rows` is marked host, so that the ops skip it.
    StepSampling local;
};

// Whether `row` is chosen from candidates of slices of `shard` columns: greedy or top_k up to
// kMaxSliceCandidates, not a host row, and its candidates (a logit and an id each) fewer bytes
// than the slice (2 * top_k < shard; a tiny vocabulary crosses whole).
bool samples_from_candidates(const SampleRow& row, int64_t shard);

// Splits `sampling` for the rank holding columns [vocab_begin, vocab_begin + shard).
SliceSampling slice_sampling(const StepSampling& sampling, int64_t vocab_begin, int64_t shard);

// The candidates of one candidate row: `logits` [shard] of this rank's slice, edited and masked
// per local's row already; out[0, k) the best k logits (ties by id), out[k, 2k) their ids
// (vocab_begin + column) as int32 bits.
void slice_candidates_row(const float* logits, int64_t shard, int64_t vocab_begin, int64_t k,
                          float* out);

// The token of candidate row j (of `m`) from the gathered candidates [m, world * 2k] (the
// ranks' lists side by side, as all_gather_columns places them).
TokenId choose_from_candidates(const float* gathered, int64_t world, int64_t m, int64_t k,
                               int64_t j, const SampleRow& row);

}  // namespace myriad
