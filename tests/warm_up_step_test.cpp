// The warm-up step's shape (engine/warm_up_step.h): within the scheduler's and the cache's limits,
// a valid step whose prefills make the largest naive-form call a real step can make.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/warm_up_step.h"
#include "model/naive_context.h"

namespace myriad::testing {
namespace {

// A step the model accepts (positions, block tables, slots in them), inside `w`, whose written
// slots are distinct and inside the cache; returns the most context tokens one naive-form call
// of it gathers.
int64_t check_step(const StepInput& st, const WarmUpLimits& w) {
    const int64_t bs = w.block_size;
    EXPECT_LE(st.num_tokens(), w.max_num_batched_tokens);
    EXPECT_LE(static_cast<int64_t>(st.seqs.size()), w.max_num_seqs);
    EXPECT_EQ(st.logit_rows.size(), st.seqs.size());
    std::set<int64_t> slots;
    size_t first_naive = 0;
    int64_t row = 0;
    for (const SeqSlice& s : st.seqs) {
        EXPECT_EQ(s.q_begin, row);
        EXPECT_GE(s.ctx_len, s.q_len);
        EXPECT_LE(s.ctx_len, w.max_model_len);
        EXPECT_GE(static_cast<int64_t>(s.block_table.size()) * bs, s.ctx_len);
        for (BlockId b : s.block_table) EXPECT_LT(int64_t{b}, w.kv_blocks);
        if (s.q_len == 1 && first_naive == static_cast<size_t>(&s - st.seqs.data())) ++first_naive;
        for (int64_t i = 0; i < s.q_len; ++i) {
            const int64_t r = s.q_begin + i, pos = s.ctx_len - s.q_len + i;
            EXPECT_EQ(st.positions[r], pos);
            const int64_t slot = st.slots[r];
            EXPECT_EQ(slot, int64_t{s.block_table[pos / bs]} * bs + pos % bs);
            EXPECT_LT(slot, w.kv_blocks * bs);
            EXPECT_TRUE(slots.insert(slot).second) << "slot " << slot << " written twice";
        }
        row += s.q_len;
    }
    EXPECT_EQ(row, st.num_tokens());
    std::vector<NaiveCall> calls;
    plan_naive_calls(st.seqs, first_naive, w.naive_context_tokens, calls);
    int64_t most = 0;
    for (const NaiveCall& c : calls) most = std::max(most, c.tokens(st.seqs));
    return most;
}

WarmUpLimits limits(int64_t tokens, int64_t seqs, int64_t max_len, int64_t blocks, int64_t bound) {
    WarmUpLimits w;
    w.max_num_batched_tokens = tokens;
    w.max_num_seqs = seqs;
    w.max_model_len = max_len;
    w.kv_blocks = blocks;
    w.block_size = 16;
    w.naive_context_tokens = bound;
    return w;
}

int64_t decodes(const StepInput& st) {
    return std::count_if(st.seqs.begin(), st.seqs.end(),
                         [](const SeqSlice& s) { return s.q_len == 1; });
}

// Contexts of max_model_len reach the bound: every decode row, and one prefill attending to the
// bound (a chunk shorter than it) or to its own tokens (longer: pieces of the bound).
TEST(WarmUpStep, OnePrefillReachesTheBound) {
    const auto w = limits(2048, 256, 32768, 4096, 8192);
    const StepInput st = warm_up_step(w);
    EXPECT_EQ(st.num_tokens(), 2048);
    EXPECT_EQ(decodes(st), 255);
    EXPECT_EQ(st.seqs.back().ctx_len, 8192);
    EXPECT_EQ(check_step(st, w), 8192);
    const auto big = limits(16384, 8, 32768, 4096, 8192);
    const StepInput long_chunk = warm_up_step(big);
    EXPECT_EQ(long_chunk.seqs.back().q_len, 16384 - 7);
    EXPECT_EQ(check_step(long_chunk, big), 8192);
}

// max_model_len below the bound: as many prefills as it takes, their contexts one call's worth.
TEST(WarmUpStep, SeveralPrefillsWhenOneContextCannotReachTheBound) {
    const auto w = limits(2048, 256, 3000, 4096, 8192);
    const StepInput st = warm_up_step(w);
    EXPECT_EQ(st.num_tokens(), 2048);
    EXPECT_EQ(decodes(st), 253);
    EXPECT_EQ(check_step(st, w), 8192);
}

// A small cache: fewer decode rows, then fewer prefills, until their blocks fit; at worst one
// prefill of its own tokens. Tiny budgets still make a valid step.
TEST(WarmUpStep, FitsTheCache) {
    for (int64_t blocks : {8, 20, 40, 100}) {
        SCOPED_TRACE(::testing::Message() << blocks << " blocks");
        const auto w = limits(2048, 64, std::min<int64_t>(blocks * 16, 500), blocks, 8192);
        const StepInput st = warm_up_step(w);
        EXPECT_EQ(st.num_tokens(), std::min<int64_t>(blocks * 16, 500));
        std::set<int64_t> written;
        for (int64_t slot : st.slots) written.insert(slot / 16);
        EXPECT_LE(static_cast<int64_t>(written.size()), blocks);
        EXPECT_GT(check_step(st, w), 0);
    }
    for (int64_t tokens : {1, 2, 3}) {
        const auto w = limits(tokens, 4, 4096, 64, 16);
        EXPECT_EQ(warm_up_step(w).num_tokens(), tokens);
        check_step(warm_up_step(w), w);
    }
    EXPECT_TRUE(warm_up_step(limits(0, 4, 4096, 64, 16)).seqs.empty());
}

// The block tables come padded to what max_num_seqs sequences of max_model_len contexts (and a
// block ahead) can hold, so that the backend's staging of a step's inputs never grows later.
TEST(WarmUpStep, BlockTablesAsLongAsRealSteps) {
    for (const auto& w : {limits(2048, 256, 32768, 4096, 8192), limits(3, 4, 4096, 64, 16),
                          limits(2048, 64, 320, 20, 8192)}) {
        const StepInput st = warm_up_step(w);
        int64_t entries = 0;
        for (const SeqSlice& s : st.seqs) entries += static_cast<int64_t>(s.block_table.size());
        EXPECT_GE(entries, w.max_num_seqs * ((w.max_model_len + 15) / 16 + 1));
        check_step(st, w);
    }
}

}  // namespace
}  // namespace myriad::testing
