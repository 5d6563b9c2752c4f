// How the naive MLA form walks the context of a step's prefill sequences within a bound of
// `limit` context tokens a call: each call gathers its context from the latent cache and expands
// it with kv_b_proj into scratch of [tokens, heads, dn + dv] F32, so the bound, not the longest
// context, sizes that scratch. Runs of whole sequences whose contexts sum to at most the bound
// share a call; a sequence whose own context is longer is attended in pieces of at most the
// bound, merged by log-sum-exp (Ops::mla_attention_naive_piece), as vLLM's chunked context does.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/ops.h"
#include "ops/step_input.h"

namespace myriad {

// Context tokens one naive-form call may gather unless ModelOptions say otherwise: 128 MB of
// expanded kv at Moonlight's 16 heads, 512 MB at Kimi-K2's 64 on one GPU.
inline constexpr int64_t kNaiveContextTokens = 8192;

struct NaiveCall {
    size_t seq_begin = 0, seq_end = 0;  // whole sequences [seq_begin, seq_end) in one call ...
    bool pieced = false;                // ... or this piece of sequence seq_begin's context
    ContextPiece piece;
    int64_t tokens(const std::vector<SeqSlice>& seqs) const;  // context tokens it gathers
};

// The calls for sequences [first, seqs.size()), in order, into `calls` (cleared first; a step
// reuses its vector). Each gathers at most `limit` (≥ 1) tokens.
void plan_naive_calls(const std::vector<SeqSlice>& seqs, size_t first, int64_t limit,
                      std::vector<NaiveCall>& calls);

}  // namespace myriad
