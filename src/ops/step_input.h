// StepInput: one flat batch of tokens for a forward step, and where each sequence's KV lives.
#pragma once

#include <cstdint>
#include <vector>

namespace myriad {

using TokenId = int32_t;
using BlockId = int32_t;

struct SeqSlice {
    int64_t q_begin = 0;  // first row of this sequence's tokens in the flat batch
    int64_t q_len = 0;    // tokens of this sequence in this step
    int64_t ctx_len = 0;  // tokens in the cache after this step (earlier context + q_len)
    std::vector<BlockId> block_table;  // KV blocks holding positions [0, ctx_len)
    // Speculative decoding: a decoding sequence's last token followed by `draft` proposed
    // tokens (q_len = 1 + draft), every row's logits wanted. It attends as decode rows do.
    int64_t draft = 0;
};

// Rows [row, row + n) of the batch whose log-softmax is wanted (prompt logprobs).
struct LogprobSpan {
    int64_t row = 0, n = 0;
};

struct StepInput {
    std::vector<TokenId> token_ids;  // [T]
    std::vector<int32_t> positions;  // [T]; a sequence's new tokens are positions ctx-q_len..ctx-1
    std::vector<int64_t> slots;      // [T] KV slot of each new token: block * block_size + offset
    // Sequences whose q_len == 1 come first (decode), then those verifying a draft; the rest
    // follow (prefill chunks).
    std::vector<SeqSlice> seqs;
    std::vector<int32_t> logit_rows;  // rows of the batch whose logits are wanted
    // Rows whose logprobs are wanted (ops/logprob_rows.h): for each row of the spans, in order,
    // the logprob of logprob_targets[i] and the top logprob_top_n tokens. Most steps have none.
    std::vector<LogprobSpan> logprob_spans;
    std::vector<TokenId> logprob_targets;
    int64_t logprob_top_n = 0;
    // Run op by op, never recorded or replayed as a graph: a step of the MTP drafter's layer, or
    // one whose hidden states leave the device for it.
    bool eager = false;
    int64_t num_logprob_rows() const { return static_cast<int64_t>(logprob_targets.size()); }
    int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
};

// A step of `tokens` for one sequence with `past` cached tokens, its cache in blocks 0, 1, 2, ...
// (tools that run one text through a model: calibration, evaluation, tests).
inline StepInput single_sequence_step(const std::vector<TokenId>& tokens, int64_t past,
                                      int64_t block_size, std::vector<int32_t> logit_rows) {
    StepInput st;
    st.token_ids = tokens;
    const int64_t n = static_cast<int64_t>(tokens.size());
    SeqSlice seq;
    seq.q_len = n;
    seq.ctx_len = past + n;
    for (int64_t b = 0; b * block_size < seq.ctx_len; ++b)
        seq.block_table.push_back(static_cast<BlockId>(b));
    for (int64_t i = 0; i < n; ++i) {
        st.positions.push_back(static_cast<int32_t>(past + i));
        st.slots.push_back(past + i);  // contiguous blocks: slot = position
    }
    st.seqs.push_back(std::move(seq));
    st.logit_rows = std::move(logit_rows);
    return st;
}

}  // namespace myriad
