// Prompt logprobs (SamplingParams::prompt_logprobs) through the engine on the golden checkpoints,
// against the log-softmax of transformers' own logits at every prompt position: one prefill,
// chunked prefill, a prompt whose prefix is cached (the hit must not skip rows), preemption
// (rows are not sent twice) and tensor parallelism (the vocabulary gathered by slice); and the
// host arithmetic of ops/logprob_rows.h on values worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/engine.h"
#include "golden_reference.h"
#include "model_runner.h"
#include "ops/logprob_rows.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

// log_softmax(row)[t] in double, and the row's largest magnitude (the scale of its error).
struct RefRow {
    std::vector<double> lp;
    double scale = 0;
};

RefRow reference_row(const float* logits, int64_t vocab) {
    RefRow r;
    double m = -INFINITY;
    for (int64_t i = 0; i < vocab; ++i) {
        m = std::max(m, double(logits[i]));
        r.scale = std::max(r.scale, std::fabs(double(logits[i])));
    }
    double sum = 0;
    for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - m);
    r.lp.resize(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) r.lp[i] = double(logits[i]) - m - std::log(sum);
    return r;
}

SamplingParams with_prompt_logprobs(int64_t top) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 2;
    p.ignore_eos = true;
    p.prompt_logprobs = top;
    return p;
}

// Everything a request sent: its tokens, and the prompt logprobs (which must come once).
struct Received {
    std::vector<TokenId> tokens;
    std::vector<SampleResult> prompt_lp;
    int prompt_lp_outputs = 0;
    RequestOutput last;
};

Received drain(RequestHandle& h) {
    Received r;
    RequestOutput o;
    while (h.try_next(o)) {
        r.tokens.insert(r.tokens.end(), o.tokens.begin(), o.tokens.end());
        if (!o.prompt_logprobs.empty()) {
            ++r.prompt_lp_outputs;
            r.prompt_lp = o.prompt_logprobs;
        }
        if (o.finished) r.last = o;
    }
    return r;
}

// Every prompt token after the first has its logprob within the engine's logit tolerance (1e-3
// of the row's scale, on the target and on the normaliser) of transformers', and the top N are
// transformers' best N wherever the reference tells them apart by more than that.
void expect_reference(const Received& got, const GoldenPrompt& p, int64_t vocab, int64_t top,
                      const std::string& what) {
    const size_t t = p.ids.size();
    ASSERT_EQ(got.prompt_lp_outputs, 1) << what << ": prompt logprobs sent once";
    ASSERT_EQ(got.prompt_lp.size(), t - 1) << what;
    for (size_t k = 0; k + 1 < t; ++k) {
        const RefRow ref = reference_row(p.prefill.data() + k * vocab, vocab);
        const double tol = 2.5e-3 * ref.scale + 1e-5;
        const SampleResult& r = got.prompt_lp[k];
        EXPECT_EQ(r.token, p.ids[k + 1]) << what << " position " << k;
        EXPECT_NEAR(r.logprob, ref.lp[p.ids[k + 1]], tol) << what << " position " << k;
        ASSERT_EQ(static_cast<int64_t>(r.top.size()), top) << what << " position " << k;
        std::vector<int32_t> order(static_cast<size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + top + 1, order.end(),
                          [&](int32_t a, int32_t b) { return ref.lp[a] > ref.lp[b]; });
        for (int64_t j = 0; j < top; ++j) {
            EXPECT_NEAR(r.top[j].logprob, ref.lp[r.top[j].token], tol) << what << " " << k;
            if (j > 0) {
                EXPECT_LE(r.top[j].logprob, r.top[j - 1].logprob) << what << " " << k;
            }
            const bool clear = (j == 0 || ref.lp[order[j - 1]] - ref.lp[order[j]] > 2 * tol) &&
                               ref.lp[order[j]] - ref.lp[order[j + 1]] > 2 * tol;
            if (clear) {
                EXPECT_EQ(r.top[j].token, order[j]) << what << " position " << k << " top " << j;
            }
        }
    }
}

struct Rig {
    std::unique_ptr<LoadedModel> model;
    std::unique_ptr<Engine> engine;
};

Rig make_rig(const std::string& name, int tp, int64_t kv_blocks, int64_t budget) {
    Rig r;
    r.model = load_model(golden_dir(name), tp, {}, kv_blocks);
    EngineConfig ec;
    ec.scheduler.max_num_batched_tokens = budget;
    ec.check_invariants = true;
    r.engine = std::make_unique<Engine>(*r.model->workers, ec);
    return r;
}

class PromptLogprobs : public ::testing::TestWithParam<std::tuple<std::string, int>> {
  protected:
    std::string name() const { return std::get<0>(GetParam()); }
    int tp() const { return std::get<1>(GetParam()); }
};

TEST_P(PromptLogprobs, OnePrefillMatchesTransformers) {
    auto ref = load_golden_reference(name());
    auto rig = make_rig(name(), tp(), 64, 4096);
    auto h0 = rig.engine->submit(ref.p[0].ids, with_prompt_logprobs(5));
    auto plain = rig.engine->submit(ref.p[1].ids, with_prompt_logprobs(-1));  // same batch
    rig.engine->run_until_idle();
    expect_reference(drain(*h0), ref.p[0], ref.vocab, 5, "one prefill");
    const Received other = drain(*plain);
    EXPECT_EQ(other.prompt_lp_outputs, 0) << "a request that did not ask gets none";
    EXPECT_EQ(other.tokens,
              std::vector<TokenId>(ref.p[1].generated.begin(), ref.p[1].generated.begin() + 2));
}

TEST_P(PromptLogprobs, ChunkedPrefillMatchesTransformers) {
    auto ref = load_golden_reference(name());
    auto rig = make_rig(name(), tp(), 64, 13);  // chunks of 13 that cut across blocks
    auto h = rig.engine->submit(ref.p[1].ids, with_prompt_logprobs(0));
    rig.engine->run_until_idle();
    expect_reference(drain(*h), ref.p[1], ref.vocab, 0, "chunked");
}

TEST_P(PromptLogprobs, ACachedPrefixSkipsNoRow) {
    auto ref = load_golden_reference(name());
    auto rig = make_rig(name(), tp(), 64, 4096);
    auto first = rig.engine->submit(ref.p[0].ids, with_prompt_logprobs(-1));
    rig.engine->run_until_idle();
    drain(*first);
    // The whole prompt is cached now; asking for its logprobs recomputes every row.
    auto again = rig.engine->submit(ref.p[0].ids, with_prompt_logprobs(2));
    rig.engine->run_until_idle();
    const Received got = drain(*again);
    expect_reference(got, ref.p[0], ref.vocab, 2, "after the prompt was cached");
    EXPECT_EQ(got.last.cached_tokens, 0);
    // And a request without prompt logprobs still gets the hit.
    auto third = rig.engine->submit(ref.p[0].ids, with_prompt_logprobs(-1));
    rig.engine->run_until_idle();
    EXPECT_EQ(drain(*third).last.cached_tokens, 64);
}

TEST_P(PromptLogprobs, PreemptionSendsThemOnce) {
    auto ref = load_golden_reference(name());
    // 10 blocks of 16: both 80-token prompts take 5; p0's second token needs a sixth, so p1
    // (admitted last, its prompt logprobs taken already) is preempted and recomputed.
    auto rig = make_rig(name(), tp(), 10, 4096);
    SamplingParams longer = with_prompt_logprobs(1);
    longer.max_tokens = 9;
    auto h0 = rig.engine->submit(ref.p[0].ids, longer);
    auto h1 = rig.engine->submit(ref.p[1].ids, longer);
    rig.engine->run_until_idle();
    EXPECT_GT(rig.engine->stats().preemptions, 0);
    expect_reference(drain(*h0), ref.p[0], ref.vocab, 1, "p0");
    const Received r1 = drain(*h1);
    expect_reference(r1, ref.p[1], ref.vocab, 1, "p1, preempted");
    EXPECT_EQ(r1.tokens, ref.p[1].generated);
    EXPECT_EQ(rig.engine->block_manager().num_used(), 0);
}

std::vector<std::tuple<std::string, int>> params() {
    return {{"kimi_k2", 1}, {"kimi_k2", 2}, {"v3_grouped_yarn", 1}, {"v2lite_yarn_noqlora", 4}};
}

INSTANTIATE_TEST_SUITE_P(Models, PromptLogprobs, ::testing::ValuesIn(params()),
                         [](const auto& info) {
                             return std::get<0>(info.param) + "_tp" +
                                    std::to_string(std::get<1>(info.param));
                         });

TEST(PromptLogprobsEngine, RefusesMoreThanTwentyTop) {
    auto rig = make_rig("kimi_k2", 1, 16, 256);
    EXPECT_THROW(rig.engine->submit({1, 2, 3}, with_prompt_logprobs(21)), myriad::Error);
}

TEST(PromptLogprobsEngine, AOneTokenPromptHasNone) {
    auto rig = make_rig("kimi_k2", 1, 16, 256);
    auto h = rig.engine->submit({5}, with_prompt_logprobs(3));
    rig.engine->run_until_idle();
    const Received got = drain(*h);
    EXPECT_EQ(got.prompt_lp_outputs, 0);
    EXPECT_EQ(got.tokens.size(), 2u);
}

// Two logits 0 and ln 3: probabilities 1/4 and 3/4.
TEST(LogprobRowsHost, WorkedValuesSlicesPaddingAndTies) {
    const float l3 = static_cast<float>(std::log(3.0));
    // Vocabulary of 5 in 2 slices of 3 (the 6th column is padding, and huge: ignored), 2 rows:
    // row 0 = [0, ln3, 0, 0, ln3], row 1 = [1, 1, 1, 1, 1]; laid out [slice, row, column].
    const float pad = 100.0f;
    const std::vector<float> logits = {0, l3, 0,    // slice 0, row 0: columns 0..2
                                       1, 1,  1,    // slice 0, row 1
                                       0, l3, pad,  // slice 1, row 0: columns 3, 4, padding
                                       1, 1,  pad};
    const std::vector<TokenId> targets = {1, 3};
    std::vector<float> target(2), top(6);
    std::vector<TokenId> ids(6);
    logprob_rows_host(logits.data(), 2, 2, 3, 5, targets.data(), 3, target.data(), ids.data(),
                      top.data());
    // Row 0: the exponentials sum to 1 + 3 + 1 + 1 + 3 = 9; token 1 has 3/9.
    EXPECT_NEAR(target[0], std::log(3.0 / 9.0), 1e-6);
    EXPECT_EQ(ids[0], 1);  // ln3 ties between 1 and 4: the lower id first
    EXPECT_EQ(ids[1], 4);
    EXPECT_EQ(ids[2], 0);  // then the zeros, lowest id first
    EXPECT_NEAR(top[0], std::log(3.0 / 9.0), 1e-6);
    EXPECT_NEAR(top[2], std::log(1.0 / 9.0), 1e-6);
    // Row 1: uniform over 5.
    EXPECT_NEAR(target[1], std::log(0.2), 1e-6);
    EXPECT_EQ(ids[3], 0);
    EXPECT_EQ(ids[4], 1);
    EXPECT_EQ(ids[5], 2);
    for (int j = 3; j < 6; ++j) EXPECT_NEAR(top[j], std::log(0.2), 1e-6);
}

}  // namespace
}  // namespace myriad::testing
