// Forced output tokens (SamplingParams::forced_tokens): the server forces a tool-call header for
// tool_choice and replays a given text in its test mode. The forced tokens come out first and in
// order whatever the sampler would pick, sampling continues after them, a forced stop token ends
// the request, and logprobs of forced tokens are the model's.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "model_runner.h"

namespace myriad::testing {
namespace {

std::string shipped_model() {
    return std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny";
}

std::vector<TokenId> run(Engine& engine, const std::vector<TokenId>& prompt, SamplingParams p,
                         RequestOutput* last = nullptr, std::vector<SampleResult>* lp = nullptr) {
    auto h = engine.submit(prompt, p);
    engine.run_until_idle();
    std::vector<TokenId> out;
    RequestOutput o;
    while (h->try_next(o)) {
        out.insert(out.end(), o.tokens.begin(), o.tokens.end());
        if (lp) lp->insert(lp->end(), o.logprobs.begin(), o.logprobs.end());
        if (o.finished && last) *last = o;
    }
    return out;
}

TEST(ForcedTokens, ComeFirstThenSamplingContinues) {
    auto model = load_model(shipped_model(), 1);
    EngineConfig ec;
    ec.eos_ids = {3841};
    Engine engine(*model->workers, ec);
    const std::vector<TokenId> prompt = {3840, 3843, 100, 200, 300};
    SamplingParams greedy;
    greedy.temperature = 0;
    greedy.max_tokens = 8;
    greedy.ignore_eos = true;
    const std::vector<TokenId> free_run = run(engine, prompt, greedy);
    ASSERT_EQ(free_run.size(), 8u);

    SamplingParams forced = greedy;
    forced.forced_tokens = {3851, 3853, 42};
    forced.top_logprobs = 2;
    std::vector<SampleResult> lp;
    const std::vector<TokenId> out = run(engine, prompt, forced, nullptr, &lp);
    ASSERT_EQ(out.size(), 8u);
    EXPECT_EQ(std::vector<TokenId>(out.begin(), out.begin() + 3), forced.forced_tokens);
    // After the forced tokens the greedy continuation is the model's, not a replay of free_run.
    std::vector<TokenId> expect_tail = run(
        engine,
        [&] {
            std::vector<TokenId> p = prompt;
            p.insert(p.end(), forced.forced_tokens.begin(), forced.forced_tokens.end());
            return p;
        }(),
        [&] {
            SamplingParams g = greedy;
            g.max_tokens = 5;
            return g;
        }());
    EXPECT_EQ(std::vector<TokenId>(out.begin() + 3, out.end()), expect_tail);
    ASSERT_EQ(lp.size(), 8u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(lp[i].token, forced.forced_tokens[i]);
        EXPECT_LT(lp[i].logprob, 0.0f);
        ASSERT_EQ(lp[i].top.size(), 2u);
        EXPECT_GE(lp[i].top[0].logprob, lp[i].logprob);
    }
}

TEST(ForcedTokens, ForcedStopTokenEndsTheRequest) {
    auto model = load_model(shipped_model(), 1);
    EngineConfig ec;
    ec.eos_ids = {3841};
    Engine engine(*model->workers, ec);
    SamplingParams p;
    p.temperature = 1;
    p.max_tokens = 50;
    p.forced_tokens = {10, 11, 12, 3841};
    RequestOutput last;
    const std::vector<TokenId> out = run(engine, {3840, 5, 6}, p, &last);
    EXPECT_EQ(out, p.forced_tokens);
    EXPECT_EQ(last.reason, FinishReason::Stop);
    EXPECT_EQ(last.completion_tokens, 4);
    EXPECT_EQ(engine.block_manager().num_used(), 0);
}

TEST(ForcedTokens, OutOfVocabularyIsBadInput) {
    auto model = load_model(shipped_model(), 1);
    Engine engine(*model->workers, EngineConfig{});
    SamplingParams p;
    p.forced_tokens = {4096};
    EXPECT_THROW(engine.submit({1, 2}, p), std::exception);
}

}  // namespace
}  // namespace myriad::testing
