// Greedy generation of one sequence on a WorkerGroup: prefill (optionally in chunks), then one
// token per step until a stop token or the token limit. Engine core II replaces this with the
// batching engine; tests and `myriad generate` use it until then.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/worker_group.h"

namespace myriad {

struct GreedyOptions {
    int64_t max_tokens = 16;
    int64_t prefill_chunk = 0;  // 0: the whole prompt in one step
    std::vector<TokenId> stop_ids;
};

struct GreedyResult {
    std::vector<TokenId> tokens;  // generated ids, the stop token included when one ended it
    bool stopped = false;         // ended by a stop token
    double prefill_seconds = 0, decode_seconds = 0;
};

GreedyResult generate_greedy(WorkerGroup& workers, const std::vector<TokenId>& prompt,
                             const GreedyOptions& options);

// A StepInput for `count` new tokens of one sequence whose cache holds `past` tokens in blocks
// 0, 1, 2, ... (contiguous block table); logits are asked for the rows in `logit_rows`.
StepInput single_sequence_step(const std::vector<TokenId>& tokens, int64_t past,
                               int64_t block_size, std::vector<int32_t> logit_rows);

}  // namespace myriad
