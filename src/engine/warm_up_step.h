// The shape of the engine's warm-up step (Engine::warm_up): one step as large as the scheduler
// makes them, run before serving so that a GPU backend sizes its step scratch then and no real
// step grows it later.
#pragma once

#include <cstdint>

#include "ops/step_input.h"

namespace myriad {

struct WarmUpLimits {
    int64_t max_num_batched_tokens = 0;
    int64_t max_num_seqs = 0;
    int64_t max_model_len = 0;
    int64_t kv_blocks = 0, block_size = 0;
    int64_t naive_context_tokens = 0;  // ModelOptions::naive_context_tokens
};

// min(max_num_batched_tokens, the KV cache, max_model_len) tokens: up to max_num_seqs - k
// one-token decode sequences, then k prefill sequences of at least two tokens each (so they take
// the naive form) whose contexts add up to naive_context_tokens where max_model_len and the
// budgets allow: the largest naive-form call a step makes, whose kv_b_proj product takes scratch
// in proportion to its context. k is 1 unless one context of max_model_len cannot reach that.
// Context before a prefill's new tokens is read, never written: its block-table entries repeat
// the sequence's first new block. The block tables are then padded (their last block repeated,
// past every position the step reads) to max_num_seqs tables of a max_model_len context, so that
// a backend's staging of the step's inputs is as large as any real step's. Each sequence's last
// row is a logit row. No sequences when no token fits.
StepInput warm_up_step(const WarmUpLimits& limits);

}  // namespace myriad
