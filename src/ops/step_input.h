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
};

struct StepInput {
    std::vector<TokenId> token_ids;  // [T]
    std::vector<int32_t> positions;  // [T]; a sequence's new tokens are positions ctx-q_len..ctx-1
    std::vector<int64_t> slots;      // [T] KV slot of each new token: block * block_size + offset
    // Sequences whose q_len == 1 come first (decode); the rest follow (prefill chunks).
    std::vector<SeqSlice> seqs;
    std::vector<int32_t> logit_rows;  // rows of the batch whose logits are wanted
    int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
};

}  // namespace myriad
