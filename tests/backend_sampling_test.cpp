// Sampling in the backend (Ops::sample, as a GPU does) against sampling in the engine: the CPU
// backend's own sampler (BackendSampling::On) must give the engine's tokens, logprobs and finish
// reasons for every kind of request: greedy, temperature with top-k / top-p / min-p, penalties,
// logit bias, min_tokens over stop ids, logprobs and forced tokens (those rows go to the host),
// and structured output (token masks), whose outputs must spell whole documents of the grammar.
// The GPU's sampler is held to the same reference in tests/gpu/sampling_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "grammar/matcher.h"
#include "sampling_runs.h"

namespace myriad::testing {
namespace {

TEST(BackendSampling, CpuBackendSamplerGivesTheEnginesTokens) {
    auto host = run_request_kinds(Device::Cpu, BackendSampling::Off);
    auto backend = run_request_kinds(Device::Cpu, BackendSampling::On);
    expect_same_outcomes(backend, host);
    int sampled_differently = 0;
    for (const SamplingOutcome& o : host) {
        EXPECT_FALSE(o.tokens.empty());
        if (o.tokens != host[0].tokens) ++sampled_differently;
    }
    // The kinds really differ (a sampler ignoring its parameters would make them alike).
    EXPECT_GE(sampled_differently, 7);
    // min_tokens: the stop ids are masked for 6 tokens, then may end the request.
    EXPECT_GE(host[8].tokens.size(), 6u);
}

// Every constrained output, reasoning markers aside, is a complete document of the grammar, ended
// by the engine when nothing may follow (finish reason stop) within max_tokens; the gated kind
// opened reasoning and was made to close it in time.
TEST(BackendSampling, ConstrainedOutputsAreWholeDocuments) {
    auto vocab = synthetic_vocabulary();
    for (BackendSampling mode : {BackendSampling::Off, BackendSampling::On}) {
        auto outcomes = run_request_kinds(Device::Cpu, mode);
        std::set<std::string> docs;
        for (size_t k = kFirstConstrainedKind; k < outcomes.size(); ++k) {
            SCOPED_TRACE(::testing::Message() << "kind " << k << " mode " << int(mode));
            const std::vector<TokenId>& t = outcomes[k].tokens;
            auto close = std::find(t.begin(), t.end(), kThinkClose);
            const bool gated = k == kFirstConstrainedKind + 2;
            if (gated) {
                ASSERT_FALSE(t.empty());
                EXPECT_EQ(t[0], kThinkOpen);
                ASSERT_NE(close, t.end());
            }
            std::string text;
            for (auto it = gated ? close + 1 : t.begin(); it != t.end(); ++it)
                text += vocab->bytes(*it);
            grammar::Matcher m(constrained_schema_grammar(), vocab);
            EXPECT_TRUE(m.accept_bytes(text) && m.is_accepting()) << text;
            EXPECT_EQ(outcomes[k].reason, FinishReason::Stop) << text;
            docs.insert(text);
        }
        EXPECT_GE(docs.size(), 3u);  // the kinds choose differently
    }
}

}  // namespace
}  // namespace myriad::testing
