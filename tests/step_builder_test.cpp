// The step builder's draft padding (StepLimits::pad_drafts): drafts of one step padded to the
// longest where the rows and blocks allow it, and a table that will not grow after all leaves
// the step whole (no exception; the sequences padded so far padded, the rest as they were).
#include <gtest/gtest.h>

#include <numeric>

#include "engine/step_builder.h"

namespace myriad {
namespace {

constexpr int64_t kBlock = 4;

// A decoding sequence of `prompt` + `output` tokens (all but the last with KV) and a draft.
std::unique_ptr<Sequence> decoding(uint64_t id, int64_t prompt, int64_t output, int64_t draft) {
    auto s = std::make_unique<Sequence>();
    s->id = id;
    for (int64_t i = 0; i < prompt + output; ++i) s->tokens.push_back(static_cast<TokenId>(i % 7));
    s->prompt_len = prompt;
    s->num_computed = prompt + output - 1;
    for (int64_t i = 0; i < draft; ++i) s->draft.push_back(static_cast<TokenId>(10 + i));
    return s;
}

struct Pool {
    std::vector<std::unique_ptr<Sequence>> seqs;
    std::vector<ScheduledSeq> batch;
    BlockId next = 0;
    int64_t grows_left = 1 << 20;  // tables that may still grow
    int64_t claimed_free = 1 << 20;

    void add(int64_t prompt, int64_t output, int64_t draft) {
        seqs.push_back(decoding(seqs.size(), prompt, output, draft));
        Sequence& s = *seqs.back();
        // Blocks for its tokens and its draft, as the scheduler gives them.
        const int64_t tokens = s.num_computed + 1 + draft;
        while (static_cast<int64_t>(s.blocks.size()) * kBlock < tokens) s.blocks.push_back(next++);
        batch.push_back({&s, 1 + draft, true, draft, 0});
    }
    StepLimits limits() {
        StepLimits l;
        l.vocab = 32;
        l.max_model_len = 1024;
        l.block_size = kBlock;
        l.pad_drafts = true;
        l.max_rows = 1024;
        l.free_blocks = [this] { return claimed_free; };
        l.grow = [this](Sequence& s, int64_t tokens) {
            if (grows_left == 0) return false;
            --grows_left;
            while (static_cast<int64_t>(s.blocks.size()) * kBlock < tokens)
                s.blocks.push_back(next++);
            return true;
        };
        return l;
    }
};

// Rows, logit rows and masks agree with each sequence's num_tokens, draft and pad.
void expect_whole(const Pool& p, const BuiltStep& b) {
    int64_t rows = 0, logits = 0;
    for (const ScheduledSeq& s : p.batch) {
        EXPECT_EQ(s.num_tokens, 1 + s.draft + s.pad) << "sequence " << s.seq->id;
        rows += s.num_tokens;
        logits += 1 + s.draft + s.pad;
        // Every row's KV slot lies in the sequence's table.
        EXPECT_GE(static_cast<int64_t>(s.seq->blocks.size()) * kBlock,
                  s.seq->num_computed + s.num_tokens);
    }
    EXPECT_EQ(b.input.num_tokens(), rows);
    EXPECT_EQ(static_cast<int64_t>(b.input.logit_rows.size()), logits);
    EXPECT_EQ(static_cast<int64_t>(b.row_mask.size()), logits);
    ASSERT_EQ(b.input.seqs.size(), p.batch.size());
    for (size_t i = 0; i < p.batch.size(); ++i)
        EXPECT_EQ(b.input.seqs[i].draft, p.batch[i].draft + p.batch[i].pad);
}

TEST(StepBuilder, PadsDraftsToTheLongest) {
    Pool p;
    p.add(5, 2, 3);
    p.add(3, 1, 1);
    p.add(6, 4, 0);
    const BuiltStep b = build_step(p.batch, p.limits());
    EXPECT_EQ(p.batch[0].pad, 0);
    EXPECT_EQ(p.batch[1].pad, 2);
    EXPECT_EQ(p.batch[2].pad, 3);
    expect_whole(p, b);
    // Padding repeats the draft's last token (or the sequence's last without a draft).
    const auto& ids = b.input.token_ids;
    EXPECT_EQ(ids[4 + 2], p.seqs[1]->draft.back());
    EXPECT_EQ(ids[4 + 3], p.seqs[1]->draft.back());
    EXPECT_EQ(ids[8 + 3], p.seqs[2]->tokens.back());
}

TEST(StepBuilder, NoPaddingWhereTheBlocksAreShort) {
    Pool p;
    p.add(5, 2, 3);
    p.add(8, 4, 0);  // 11 computed + 4 rows: needs a fourth block
    p.claimed_free = 0;
    const BuiltStep b = build_step(p.batch, p.limits());
    EXPECT_EQ(p.batch[1].pad, 0);
    expect_whole(p, b);
}

// The free count said yes and the third table would not grow: the second sequence (padded first)
// stays padded, the third and fourth run unpadded, and the step is built (it used to throw).
TEST(StepBuilder, ATableThatWillNotGrowLeavesTheStepWhole) {
    Pool p;
    p.add(5, 2, 3);
    p.add(3, 1, 1);
    p.add(6, 4, 0);
    p.add(2, 2, 2);
    p.grows_left = 1;
    const std::vector<size_t> tables_before = {p.seqs[2]->blocks.size(), p.seqs[3]->blocks.size()};
    BuiltStep b;
    ASSERT_NO_THROW(b = build_step(p.batch, p.limits()));
    EXPECT_EQ(p.batch[1].pad, 2);
    EXPECT_EQ(p.batch[2].pad, 0);
    EXPECT_EQ(p.batch[3].pad, 0);
    EXPECT_EQ(p.seqs[2]->blocks.size(), tables_before[0]);
    EXPECT_EQ(p.seqs[3]->blocks.size(), tables_before[1]);
    expect_whole(p, b);
}

}  // namespace
}  // namespace myriad
