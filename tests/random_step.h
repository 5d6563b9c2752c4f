// A step over sequences of (q_len, ctx_len) with their KV blocks shuffled, for op tests on the
// CPU and the GPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "ops/step_input.h"

namespace myriad::testing {

// One step over `lens` sequences: (q_len, ctx_len) each, KV blocks shuffled so tables are not
// contiguous; logits wanted for each sequence's last row.
inline StepInput make_step(const std::vector<std::pair<int64_t, int64_t>>& lens, int64_t block_size,
                           int64_t num_blocks, std::mt19937& rng, int64_t vocab = 100) {
    std::vector<BlockId> free_blocks(static_cast<size_t>(num_blocks));
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
    size_t next = 0;
    StepInput st;
    for (auto [q_len, ctx] : lens) {
        SeqSlice s;
        s.q_begin = st.num_tokens();
        s.q_len = q_len;
        s.ctx_len = ctx;
        for (int64_t b = 0; b * block_size < ctx; ++b)
            s.block_table.push_back(free_blocks.at(next++));
        for (int64_t i = 0; i < q_len; ++i) {
            const int64_t p = ctx - q_len + i;
            st.token_ids.push_back(static_cast<TokenId>(rng() % vocab));
            st.positions.push_back(static_cast<int32_t>(p));
            st.slots.push_back(int64_t(s.block_table[p / block_size]) * block_size +
                               p % block_size);
        }
        st.logit_rows.push_back(static_cast<int32_t>(s.q_begin + q_len - 1));
        st.seqs.push_back(std::move(s));
    }
    return st;
}

}  // namespace myriad::testing
