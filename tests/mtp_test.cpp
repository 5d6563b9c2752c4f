// The MTP drafter (engine/mtp_drafter.h, DeepseekV3::forward_mtp): the MTP layer's logits against
// a torch reference of reference.md §1.9 (tests/goldens_mtp/v3_mtp, tools/make_mtp_golden.py), at
// TP 1 and 2, as one chunk, in pieces through its cache, and chained; the drafter's first
// proposal after a prompt is the reference's chain; and greedy output with --speculative mtp is
// token for token the output without, in mixed batches at TP 1 and 2, with the acceptance
// counted. A checkpoint without MTP layers is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "drafter_runs.h"
#include "engine/engine.h"
#include "engine/mtp_drafter.h"
#include "golden_reference.h"
#include "model/tensor_layout.h"
#include "model_runner.h"
#include "random_model.h"
#include "temp_dir.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

constexpr double kTol = 1e-3;  // max |ours - ref| <= kTol * max |ref| per row, as the goldens
constexpr double kHiddenTol = 1e-3;

// An MTP step of rows [begin, end) of the sequence (cache blocks 0, 1, ...): row p pairs
// hidden[p] with next[p]; every row's logits and output hidden states.
struct MtpRows {
    std::vector<float> logits, out;
};
MtpRows mtp_rows(WorkerGroup& w, const std::vector<TokenId>& next, const std::vector<float>& hidden,
                 int64_t begin, int64_t end) {
    const int64_t H = w.config().hidden_size, V = w.config().vocab_size;
    std::vector<TokenId> ids(next.begin() + begin, next.begin() + end);
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < end - begin; ++i) rows.push_back(static_cast<int32_t>(i));
    StepInput st = single_sequence_step(ids, begin, w.options().kv_block_size, rows);
    st.eager = true;
    MtpRows r;
    r.logits.assign(static_cast<size_t>((end - begin) * V), NAN);
    r.out.assign(static_cast<size_t>((end - begin) * H), NAN);
    w.mtp_step(st, hidden.data() + begin * H, r.logits.data(), r.out.data());
    return r;
}

class MtpGolden : public ::testing::TestWithParam<int> {};

TEST_P(MtpGolden, LogitsMatchTheReference) {
    const MtpReference ref = load_mtp_reference();
    auto m = load_model(mtp_golden_dir(), GetParam(), {}, 64, KvCacheDtype::Auto, false, true);
    WorkerGroup& w = *m->workers;
    const int64_t T = static_cast<int64_t>(ref.prompt.size()), V = m->config.vocab_size;
    const int64_t H = m->config.hidden_size;
    ASSERT_EQ(static_cast<int64_t>(ref.hidden.size()), T * H);
    std::vector<TokenId> next(ref.prompt.begin() + 1, ref.prompt.end());
    next.push_back(ref.g0);

    // One chunk (the naive form over the whole context).
    const MtpRows all = mtp_rows(w, next, ref.hidden, 0, T);
    EXPECT_LE(max_row_rel_diff(all.logits, ref.logits, V), kTol);
    // A prefix chunk, then row by row through the cache (the absorbed form).
    const int64_t split = T - 6;
    const MtpRows head = mtp_rows(w, next, ref.hidden, 0, split);
    std::vector<float> pieced = head.logits;
    for (int64_t p = split; p < T; ++p) {
        const MtpRows one = mtp_rows(w, next, ref.hidden, p, p + 1);
        pieced.insert(pieced.end(), one.logits.begin(), one.logits.end());
    }
    EXPECT_LE(max_row_rel_diff(pieced, ref.logits, V), kTol);

    // Chained: the reference's draft tokens, each with our layer's own last output.
    ASSERT_EQ(ref.chain.size(), 3u);
    EXPECT_EQ(argmax_token(all.logits.data() + (T - 1) * V, V), ref.chain[0]);
    std::vector<float> prev(all.out.end() - H, all.out.end()), chained;
    std::vector<TokenId> tokens = next;
    for (size_t j = 1; j < ref.chain.size(); ++j) {
        tokens.push_back(ref.chain[j - 1]);
        std::vector<float> hidden(static_cast<size_t>((T + static_cast<int64_t>(j)) * H), 0.0f);
        std::copy(prev.begin(), prev.end(), hidden.end() - H);
        const int64_t p = T + static_cast<int64_t>(j) - 1;
        const MtpRows one = mtp_rows(w, tokens, hidden, p, p + 1);
        chained.insert(chained.end(), one.logits.begin(), one.logits.end());
        EXPECT_EQ(argmax_token(one.logits.data(), V), ref.chain[j]) << "chained draft " << j;
        prev = one.out;
    }
    EXPECT_LE(max_row_rel_diff(chained, ref.chain_logits, V), kTol);
}

// The target's hidden states before the final norm, as the drafter gets them, match the
// reference's (transformers').
TEST_P(MtpGolden, TargetHiddenStatesMatchTheReference) {
    const MtpReference ref = load_mtp_reference();
    auto m = load_model(mtp_golden_dir(), GetParam(), {}, 64, KvCacheDtype::Auto, false, true);
    const int64_t T = static_cast<int64_t>(ref.prompt.size()), H = m->config.hidden_size;
    StepInput st = single_sequence_step(ref.prompt, 0, m->workers->options().kv_block_size,
                                        {static_cast<int32_t>(T - 1)});
    st.eager = true;
    std::vector<float> logits(static_cast<size_t>(m->config.vocab_size)), hidden(T * H, NAN);
    m->workers->step(st, logits.data(), nullptr, nullptr, nullptr, hidden.data());
    EXPECT_LE(max_row_rel_diff(hidden, ref.hidden, H), kHiddenTol);
    EXPECT_EQ(argmax_token(logits.data(), m->config.vocab_size), ref.g0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, MtpGolden, ::testing::Values(1, 2));

TEST(MtpDrafter, FirstProposalIsTheReferenceChain) {
    const MtpReference ref = load_mtp_reference();
    auto m = load_model(mtp_golden_dir(), 1, {}, 64, KvCacheDtype::Auto, false, true);
    auto rec = std::make_shared<RecordingDrafter>(std::make_unique<MtpDrafter>(*m->workers));
    const EngineRun r =
        run_engine(*m->workers, {ref.prompt}, {greedy(6)}, 512, SpeculativeMethod::Mtp, 3, "", rec);
    ASSERT_EQ(r.tokens.size(), 1u);
    ASSERT_FALSE(r.tokens[0].empty());
    EXPECT_EQ(r.tokens[0][0], ref.g0);
    ASSERT_EQ(rec->drafts.size(), 1u);
    const auto& drafts = rec->drafts.begin()->second;
    ASSERT_FALSE(drafts.empty());
    EXPECT_EQ(drafts[0], ref.chain);  // after the prompt's step, k = 3 chained
}

// Mixed batches on the MTP golden: prompts prefilling in chunks while others decode, the prefix
// cache (a prompt twice), max_tokens inside a run; greedy, and two seeded sampled requests. Drafts
// of the random MTP layer are mostly wrong: the output must not change.
void check_unchanged(int tp) {
    const MtpReference ref = load_mtp_reference();
    auto m = load_model(mtp_golden_dir(), tp, {}, 256, KvCacheDtype::Auto, false, true);
    std::vector<std::vector<TokenId>> prompts = {
        ref.prompt,
        std::vector<TokenId>(ref.prompt.begin(), ref.prompt.begin() + 9),
        std::vector<TokenId>(ref.prompt.begin() + 5, ref.prompt.end()),
        ref.prompt,  // again: from the prefix cache
        {7}};
    std::vector<SamplingParams> params = {greedy(30), greedy(24), greedy(17), greedy(11),
                                          greedy(20)};
    // Seeded sampling: each verified row is drawn as the plain decode of its position would be,
    // and a point-mass draft token is kept exactly when that draw is it, so draw for draw.
    for (uint64_t seed : {11u, 12u}) {
        prompts.push_back(std::vector<TokenId>(ref.prompt.begin() + 3, ref.prompt.begin() + 20));
        SamplingParams p = greedy(25);
        p.temperature = 0.8;
        p.top_p = 0.95;
        p.seed = seed;
        params.push_back(p);
    }
    const EngineRun plain =
        run_engine(*m->workers, prompts, params, 24, SpeculativeMethod::None, 3);
    for (int64_t k : {1, 3}) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp << ", draft length " << k);
        const EngineRun spec =
            run_engine(*m->workers, prompts, params, 24, SpeculativeMethod::Mtp, k);
        EXPECT_EQ(spec.tokens, plain.tokens);
        EXPECT_GT(spec.stats.spec_drafts, 0);
        EXPECT_GT(spec.stats.spec_draft_tokens, 0);
        EXPECT_LE(spec.stats.spec_accepted_tokens, spec.stats.spec_draft_tokens);
    }
}

TEST(SpeculativeMtp, GreedyOutputUnchangedInMixedBatches) {
    check_unchanged(1);
}
TEST(SpeculativeMtp, GreedyOutputUnchangedTensorParallel) {
    check_unchanged(2);
}

// A model whose head gives every token the same logit: the target's greedy token and the MTP
// layer's draft are both the first of equals, so drafts are accepted: the counters move, steps
// take several tokens, and the output is still the plain one.
TEST(SpeculativeMtp, AcceptedDraftsCountedAndOutputUnchanged) {
    TempDir dir;
    nlohmann::ordered_json c = small_config();
    c["num_nextn_predict_layers"] = 1;
    write_random_model(dir.path(), c, 5, {{"lm_head.weight", 0.0f}});
    for (int tp : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp);
        auto m = load_model(dir.path(), tp, {}, 64, KvCacheDtype::Auto, false, true);
        const std::vector<std::vector<TokenId>> prompts = {{3, 9, 27, 81}, {5, 6}};
        const std::vector<SamplingParams> params = {greedy(20), greedy(13)};
        const EngineRun plain =
            run_engine(*m->workers, prompts, params, 64, SpeculativeMethod::None, 3);
        const EngineRun spec =
            run_engine(*m->workers, prompts, params, 64, SpeculativeMethod::Mtp, 3);
        EXPECT_EQ(spec.tokens, plain.tokens);
        EXPECT_GT(spec.stats.spec_accepted_tokens, 0);
        EXPECT_LT(spec.stats.steps, plain.stats.steps);
    }
}

// The MTP tensors are loaded only when asked for: the same checkpoint's rank holds more bytes
// with them, and a checkpoint without MTP layers is refused naming the config field and flag.
TEST(MtpLoading, OnlyWhenAskedAndRefusedWithoutLayers) {
    auto plain = load_model(mtp_golden_dir(), 1);
    auto with = load_model(mtp_golden_dir(), 1, {}, 64, KvCacheDtype::Auto, false, true);
    EXPECT_GT(with->workers->weight_bytes_per_rank(), plain->workers->weight_bytes_per_rank());
    EXPECT_EQ(plain->workers->mtp_layers(), 0);
    EXPECT_EQ(with->workers->mtp_layers(), 1);
    EXPECT_EQ(parse_speculative_method("mtp"), SpeculativeMethod::Mtp);

    TempDir dir;
    write_random_model(dir.path(), small_config());  // num_nextn_predict_layers 0
    try {
        load_model(dir.path(), 1, {}, 64, KvCacheDtype::Auto, false, true);
        ADD_FAILURE() << "loaded MTP layers of a checkpoint without any";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(std::string(e.what()).find("num_nextn_predict_layers"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("--speculative mtp"), std::string::npos) << e.what();
    }
    // Without the layers loaded, the drafter says so instead of running.
    EXPECT_THROW(MtpDrafter(*plain->workers), Error);
}

}  // namespace
}  // namespace myriad::testing
