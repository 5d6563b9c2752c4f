// Sampling across vocabulary-sliced ranks (ops/sample_candidates.h): the tokens chosen from the
// ranks' gathered candidates are those of the whole row (choose_token after the row's edits and
// mask), for random rows at 2, 4 and 8 slices; through the engine at TP 2, 4 and 8, every kind
// of request takes the tokens (and logprobs, finish reasons) of the same ranks gathering whole
// rows, and the tokens of TP 1; and the bytes gathered per token are those of the candidates.
#include <gtest/gtest.h>

#include <cstring>

#include "ops/cpu/cpu_ops.h"
#include "sampling_runs.h"
#include "slice_sampling_cases.h"

namespace myriad::testing {
namespace {

// The rows of `c` chosen across `world` slices with `ops` (host memory): every rank's
// candidates, gathered side by side in rank order, then chosen; -1 for rows not chosen from
// candidates.
std::vector<TokenId> choose_across_slices(Ops& ops, const SliceCase& c, int64_t world,
                                          SliceSampling* first = nullptr) {
    const int64_t n = static_cast<int64_t>(c.sampling.rows.size()), shard = c.vocab / world;
    std::vector<std::vector<float>> cands;
    SliceSampling s0;
    for (int64_t r = 0; r < world; ++r) {
        const SliceSampling s = slice_sampling(c.sampling, r * shard, shard);
        if (r == 0) s0 = s;
        EXPECT_EQ(s.rows, s0.rows);  // every rank takes the same rows and k
        EXPECT_EQ(s.k, s0.k);
        std::vector<float> part = slice_columns(c, r * shard, shard);
        const int64_t m = static_cast<int64_t>(s.rows.size());
        std::vector<float> cand(static_cast<size_t>(m * 2 * s.k));
        if (m > 0)
            ops.slice_candidates(Tensor(part.data(), DType::F32, {n, shard}), s, r * shard,
                                 Tensor(cand.data(), DType::F32, {m, 2 * s.k}));
        cands.push_back(std::move(cand));
    }
    std::vector<TokenId> tokens(static_cast<size_t>(n), -1);
    const int64_t m = static_cast<int64_t>(s0.rows.size());
    std::vector<float> gathered = side_by_side(cands, m);
    if (m > 0)
        ops.choose_candidates(Tensor(gathered.data(), DType::F32, {m, world * 2 * s0.k}), s0,
                              c.sampling, tokens.data());
    if (first) *first = s0;
    return tokens;
}

TEST(SlicedSampling, CandidatesChooseTheTokenOfTheWholeRow) {
    CpuOps ops(1);
    std::mt19937 rng(11);
    int checked = 0, sampled = 0;
    for (auto [vocab, world] : std::vector<std::pair<int64_t, int64_t>>{
             {320, 2}, {320, 4}, {320, 8}, {1000, 8}, {64, 8}, {4096, 4}}) {
        for (int rep = 0; rep < 6; ++rep) {
            SCOPED_TRACE(::testing::Message()
                         << "vocab " << vocab << " world " << world << " rep " << rep);
            const SliceCase c = make_slice_case(rng, 24, vocab);
            SliceSampling s;
            const std::vector<TokenId> got = choose_across_slices(ops, c, world, &s);
            size_t at = 0, full = 0;
            for (int64_t i = 0; i < 24; ++i) {
                const SampleRow& r = c.sampling.rows[static_cast<size_t>(i)];
                const int64_t need = r.greedy ? 1 : r.top_k, shard = vocab / world;
                const bool cand = !r.host && need > 0 && need <= 64 && 2 * need < shard;
                if (!cand) {  // gathered whole
                    ASSERT_LT(full, s.full.size());
                    EXPECT_EQ(s.full[full++], i);
                    EXPECT_EQ(got[static_cast<size_t>(i)], -1);
                    continue;
                }
                ASSERT_LT(at, s.rows.size());
                EXPECT_EQ(s.rows[at++], i);
                EXPECT_EQ(got[static_cast<size_t>(i)], whole_row_token(c, i)) << "row " << i;
                ++checked;
                sampled += r.greedy ? 0 : 1;
            }
            EXPECT_EQ(at, s.rows.size());
            EXPECT_EQ(full, s.full.size());
        }
    }
    EXPECT_GT(checked, 400);
    EXPECT_GT(sampled, 200);
}

// A choice that ignored the other ranks' candidates, or broke ties otherwise than by id, would
// not choose the whole row's token: a row whose best logits sit in different slices.
TEST(SlicedSampling, TheBestCandidatesMayLieInAnySlice) {
    CpuOps ops(1);
    SliceCase c;
    c.vocab = 64;
    c.logits.assign(2 * 64, 0.0f);
    c.logits[50] = 3.0f;       // row 0: the best in the last of 4 slices
    c.logits[64 + 40] = 2.0f;  // row 1: a tie between slices 2 and 1; the lower id wins
    c.logits[64 + 20] = 2.0f;
    SampleRow greedy;
    c.sampling.rows = {greedy, greedy};
    const std::vector<TokenId> got = choose_across_slices(ops, c, 4);
    EXPECT_EQ(got[0], 50);
    EXPECT_EQ(got[1], 20);
}

// The engine at TP 2 and 4 (kimi_k2) and TP 8 (tp8_bf16), its ranks choosing from candidates
// (BackendSampling::Auto) where a kind allows it: the tokens, logprobs and finish reasons of the
// same ranks gathering every row whole (Off), and the tokens of TP 1.
void expect_tp_runs_agree(const std::string& golden, int tp, std::vector<size_t> only) {
    for (bool top_k : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << golden << " tp " << tp << " top_k everywhere " << top_k);
        KindsRun run;
        run.golden = golden;
        run.only = only;
        run.top_k_everywhere = top_k;
        const auto one = run_request_kinds(Device::Cpu, BackendSampling::Off, WarmUp::Auto, nullptr,
                                           3, nullptr, run);
        run.tp = tp;
        int64_t whole_bytes = 0, cand_bytes = 0;
        run.gathered_bytes = &whole_bytes;
        const auto whole = run_request_kinds(Device::Cpu, BackendSampling::Off, WarmUp::Off,
                                             nullptr, 3, nullptr, run);
        run.gathered_bytes = &cand_bytes;
        const auto cand = run_request_kinds(Device::Cpu, BackendSampling::Auto, WarmUp::Off,
                                            nullptr, 3, nullptr, run);
        expect_same_outcomes(cand, whole);
        ASSERT_EQ(cand.size(), one.size());
        for (size_t i = 0; i < one.size(); ++i)
            EXPECT_EQ(cand[i].tokens, one[i].tokens) << "request kind " << i << " against TP 1";
        // Fewer bytes (no more where every row's candidates would outweigh its slice: TP 8 of
        // 256 tokens, slices of 32, crosses top_k 20 or 40 whole).
        if (tp < 8) {
            EXPECT_LT(cand_bytes, whole_bytes);
        }
        EXPECT_LE(cand_bytes, whole_bytes);
    }
}

TEST(SlicedSampling, EngineAtTp2GivesTheTokensOfTheWholeRows) {
    expect_tp_runs_agree("kimi_k2", 2, {});
}

TEST(SlicedSampling, EngineAtTp4GivesTheTokensOfTheWholeRows) {
    expect_tp_runs_agree("kimi_k2", 4, {});
}

TEST(SlicedSampling, EngineAtTp8GivesTheTokensOfTheWholeRows) {
    std::vector<size_t> kinds;  // the unconstrained kinds (the grammar's vocabulary is kimi_k2's)
    for (size_t i = 0; i < kFirstConstrainedKind; ++i) kinds.push_back(i);
    expect_tp_runs_agree("tp8_bf16", 8, kinds);
}

// What crosses per token: a greedy row sends one logit and one id per rank, a top-k row k of
// each, and a row that needs the whole vocabulary its rank's slice of it (4 bytes a token).
TEST(SlicedSampling, BytesGatheredPerTokenAreTheCandidates) {
    const int64_t vocab = 320, tp = 2;
    struct Kind {
        size_t index;
        int64_t bytes_per_token;
    };
    // request_kinds(): 0 greedy, 3 top_k 5, 1 plain temperature (the whole row).
    for (const Kind& k : {Kind{0, tp * 2 * 1 * 4}, Kind{3, tp * 2 * 5 * 4}, Kind{1, vocab * 4}}) {
        SCOPED_TRACE(::testing::Message() << "request kind " << k.index);
        KindsRun run;
        run.tp = static_cast<int>(tp);
        run.only = {k.index};
        int64_t bytes = 0;
        run.gathered_bytes = &bytes;
        const auto out = run_request_kinds(Device::Cpu, BackendSampling::Auto, WarmUp::Off, nullptr,
                                           3, nullptr, run);
        ASSERT_EQ(out.size(), 1u);
        ASSERT_EQ(out[0].tokens.size(), 20u);
        EXPECT_EQ(bytes, 20 * k.bytes_per_token);
    }
}

}  // namespace
}  // namespace myriad::testing
