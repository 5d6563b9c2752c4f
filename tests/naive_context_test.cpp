// The naive MLA form within a bound of context tokens per call (model/naive_context.h): how a
// step's prefill sequences are split into calls, that a small bound gives the logits of an
// unbounded one (groups of sequences, pieces merged by log-sum-exp, tensor-parallel heads), and
// that a step's scratch no longer grows with the context its prefill attends to.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "model/deepseek_v3.h"
#include "model/naive_context.h"
#include "model_runner.h"
#include "ops/cpu/cpu_ops.h"
#include "parallel/cpu_communicator.h"
#include "random_model.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {

std::vector<SeqSlice> seqs_of(const std::vector<std::pair<int64_t, int64_t>>& lens) {
    std::vector<SeqSlice> seqs;
    int64_t row = 0;
    for (auto [q_len, ctx] : lens) {
        seqs.push_back({row, q_len, ctx, {}});
        row += q_len;
    }
    return seqs;
}

TEST(PlanNaiveCalls, GroupsWholeSequencesAndPiecesLongOnes) {
    // (q_len, ctx_len); sequence 0 is a decode row of the absorbed form.
    const auto seqs = seqs_of({{1, 30}, {5, 5}, {6, 6}, {2, 20}, {3, 3}, {4, 16}, {7, 17}, {1, 1}});
    std::vector<NaiveCall> calls;
    plan_naive_calls(seqs, 1, 16, calls);
    struct Want {
        size_t begin, end;
        bool pieced;
        int64_t c0, c1;
    };
    const std::vector<Want> want{{1, 3, false, 0, 0},  {3, 4, true, 0, 16}, {3, 4, true, 16, 20},
                                 {4, 5, false, 0, 0},  {5, 6, false, 0, 0}, {6, 7, true, 0, 16},
                                 {6, 7, true, 16, 17}, {7, 8, false, 0, 0}};
    ASSERT_EQ(calls.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE(::testing::Message() << "call " << i);
        EXPECT_EQ(calls[i].seq_begin, want[i].begin);
        EXPECT_EQ(calls[i].seq_end, want[i].end);
        EXPECT_EQ(calls[i].pieced, want[i].pieced);
        if (want[i].pieced) {
            EXPECT_EQ(calls[i].piece.seq, want[i].begin);
            EXPECT_EQ(calls[i].piece.begin, want[i].c0);
            EXPECT_EQ(calls[i].piece.end, want[i].c1);
        }
        EXPECT_LE(calls[i].tokens(seqs), 16);
    }
    // A bound of one token: every context in pieces of one; none naive: no calls.
    plan_naive_calls(seqs, 7, 1, calls);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_FALSE(calls[0].pieced);
    plan_naive_calls(seqs, 6, 1, calls);
    EXPECT_EQ(calls.size(), 18u);
    plan_naive_calls(seqs, 8, 16, calls);
    EXPECT_TRUE(calls.empty());
}

ModelOptions bounded(int64_t tokens, AttentionMode mode = AttentionMode::Auto) {
    ModelOptions o;
    o.attention = mode;
    o.naive_context_tokens = tokens;
    return o;
}

class NaiveContext : public ::testing::Test {
  protected:
    void SetUp() override { write_random_model(dir_.path(), small_config(), 11); }
    std::vector<TokenId> prompt(int n, uint64_t seed = 3) const {
        std::mt19937 rng(static_cast<uint32_t>(seed));
        std::vector<TokenId> p;
        for (int i = 0; i < n; ++i) p.push_back(static_cast<TokenId>(rng() % 128));
        return p;
    }
    TempDir dir_;
};

// Chunks of 40 tokens of a 150-token prompt, each attending to everything before it: with a bound
// of 1 to 64 tokens its context goes in pieces (one key each at 1), merged; the logits must be
// those of one call per chunk. Token-by-token steps in the naive form too.
TEST_F(NaiveContext, ChunkedPrefillOverALongContextEqualsUnbounded) {
    const auto p = prompt(150), d = prompt(5, 9);
    auto ref_model = load_model(dir_.path(), 1, bounded(kNaiveContextTokens));
    const auto ref = sequence_logits(*ref_model->workers, p, 0, 40);
    auto naive_ref = load_model(dir_.path(), 1, bounded(kNaiveContextTokens, AttentionMode::Naive));
    sequence_logits(*naive_ref->workers, p);
    const auto ref_dec = sequence_logits(*naive_ref->workers, d, 150, 1);
    for (int64_t bound : {1, 8, 16, 40, 64}) {
        SCOPED_TRACE(::testing::Message() << "bound " << bound);
        auto m = load_model(dir_.path(), 1, bounded(bound));
        EXPECT_LT(max_row_rel_diff(sequence_logits(*m->workers, p, 0, 40), ref, 128), 1e-5);
        auto n = load_model(dir_.path(), 1, bounded(bound, AttentionMode::Naive));
        sequence_logits(*n->workers, p);
        EXPECT_LT(max_row_rel_diff(sequence_logits(*n->workers, d, 150, 1), ref_dec, 128), 1e-5);
    }
}

// Each rank attends its own heads in pieces.
TEST_F(NaiveContext, TensorParallelPiecesEqualUnbounded) {
    const auto p = prompt(90, 4);
    for (int tp : {2, 4}) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp);
        auto ref = load_model(dir_.path(), tp, bounded(kNaiveContextTokens));
        auto small = load_model(dir_.path(), tp, bounded(8));
        EXPECT_LT(max_row_rel_diff(sequence_logits(*small->workers, p, 0, 30),
                                   sequence_logits(*ref->workers, p, 0, 30), 128),
                  1e-5);
    }
}

// One step of sequences that each bring `tokens` after `past` cached ones, in contiguous blocks
// from `first_block`; logits for every row.
struct SeqSpec {
    std::vector<TokenId> tokens;
    int64_t past = 0;
    BlockId first_block = 0;
};
StepInput batch_step(const std::vector<SeqSpec>& specs, int64_t bs) {
    StepInput st;
    for (const SeqSpec& sp : specs) {
        SeqSlice s;
        s.q_begin = st.num_tokens();
        s.q_len = static_cast<int64_t>(sp.tokens.size());
        s.ctx_len = sp.past + s.q_len;
        for (int64_t b = 0; b * bs < s.ctx_len; ++b) s.block_table.push_back(sp.first_block + b);
        for (int64_t i = 0; i < s.q_len; ++i) {
            const int64_t pos = sp.past + i;
            st.token_ids.push_back(sp.tokens[i]);
            st.positions.push_back(static_cast<int32_t>(pos));
            st.slots.push_back(int64_t{sp.first_block} * bs + pos);
            st.logit_rows.push_back(static_cast<int32_t>(st.num_tokens() - 1));
        }
        st.seqs.push_back(std::move(s));
    }
    return st;
}

// A batch as the scheduler makes them: a decode row (absorbed), then prefill chunks whose
// contexts fit a call together, and ones that go in pieces; the same logits with a bound of 8 or
// 16 tokens as without.
TEST_F(NaiveContext, MixedBatchEqualsUnbounded) {
    const int64_t bs = kKvBlockSize;
    const std::vector<SeqSpec> fill{{prompt(60, 1), 0, 0},
                                    {prompt(9, 2), 0, 8},
                                    {prompt(100, 3), 0, 16},
                                    {prompt(5, 4), 0, 32}};
    const std::vector<SeqSpec> next{{prompt(1, 5), 60, 0},
                                    {prompt(7, 6), 9, 8},
                                    {prompt(20, 7), 100, 16},
                                    {prompt(4, 8), 5, 32}};
    auto run = [&](int64_t bound) {
        auto m = load_model(dir_.path(), 1, bounded(bound));
        std::vector<float> out;
        for (const auto* specs : {&fill, &next}) {
            const StepInput st = batch_step(*specs, bs);
            std::vector<float> logits(st.logit_rows.size() * 128);
            m->workers->step(st, logits.data());
            out.insert(out.end(), logits.begin(), logits.end());
        }
        return out;
    };
    const auto ref = run(kNaiveContextTokens);
    for (int64_t bound : {8, 16}) {
        SCOPED_TRACE(::testing::Message() << "bound " << bound);
        EXPECT_LT(max_row_rel_diff(run(bound), ref, 128), 1e-5);
    }
}

// The CPU backend, counting the scratch bytes a step takes.
class ScratchMeter : public CpuOps {
  public:
    using CpuOps::CpuOps;
    Tensor scratch(DType dt, std::initializer_list<int64_t> dims) override {
        Tensor t = CpuOps::scratch(dt, dims);
        bytes += t.nbytes();
        return t;
    }
    size_t bytes = 0;
};

// A prefill chunk of 8 tokens takes the same scratch at position 0 as after 16 or 500 tokens of
// context (in pieces then): what a warm-up step with a prefill sized, a real step never exceeds.
TEST_F(NaiveContext, StepScratchDoesNotGrowWithTheContext) {
    const ModelConfig config = load_model_config(dir_.path());
    const Checkpoint checkpoint = Checkpoint::open(dir_.path());
    ScratchMeter ops(1);
    CpuCommunicator comm(std::make_shared<CpuCommGroup>(1), 0);
    DeepseekV3 model(config, checkpoint, ops, comm, bounded(16));
    KvCache cache(config, ops, 64, kKvBlockSize);
    std::vector<float> logits(128);
    auto step_bytes = [&](int64_t past) {
        ops.bytes = 0;
        model.forward(single_sequence_step(prompt(8), past, kKvBlockSize, {7}), cache,
                      logits.data());
        return ops.bytes;
    };
    const size_t first = step_bytes(0);
    EXPECT_EQ(step_bytes(16), first);
    EXPECT_EQ(step_bytes(500), first);
}

}  // namespace
}  // namespace myriad::testing
