// Logprobs at chosen rows of a step (vLLM's prompt_logprobs): the log-softmax of a row's logits,
// the logprob of one target token and the top N tokens with theirs. The host arithmetic below is
// the reference every backend's Ops::logprob_rows follows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/step_input.h"

namespace myriad {

// At most this many top tokens a row reports (OpenAI's limit for logprobs).
inline constexpr int64_t kMaxTopLogprobs = 20;
// The forward pass takes logprob rows through the lm_head this many at a time: their logits
// ([rows, vocab]) never take more scratch than that (about 40 MB for a vocabulary of 163,840).
inline constexpr int64_t kLogprobRowsPerPass = 64;

// The results for a step's logprob rows (StepInput::logprob_spans, in order): row i's target
// logprob, and its top_n tokens by logit, highest first (ties: lower id), with their logprobs.
struct LogprobRows {
    int64_t top_n = 0;
    std::vector<float> target;     // [rows]
    std::vector<TokenId> top_ids;  // [rows, top_n]
    std::vector<float> top;        // [rows, top_n]

    void resize(int64_t rows, int64_t n) {
        top_n = n;
        target.assign(static_cast<size_t>(rows), 0.0f);
        top_ids.assign(static_cast<size_t>(rows * n), -1);
        top.assign(static_cast<size_t>(rows * n), 0.0f);
    }
};

// Row i of `logits` laid out [slices, n, shard]: column c is element (c / shard, i, c % shard),
// the vocabulary as tensor-parallel ranks gather it, a slice each (one slice on one rank);
// columns from `vocab` on are padding and ignored. With m the row's largest logit and
// lse = m + log(sum over columns of exp(double(x) - m)) in double, a column's logprob is
// float(double(x) - lse). Writes target[i] (the logprob of targets[i]) and top_n entries of
// top_ids and top at i * top_n.
void logprob_rows_host(const float* logits, int64_t slices, int64_t n, int64_t shard, int64_t vocab,
                       const TokenId* targets, int64_t top_n, float* target, TokenId* top_ids,
                       float* top);

}  // namespace myriad
