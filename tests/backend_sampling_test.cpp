// Sampling in the backend (Ops::sample, as a GPU does) against sampling in the engine: the CPU
// backend's own sampler (BackendSampling::On) must give the engine's tokens, logprobs and finish
// reasons for every kind of request: greedy, temperature with top-k / top-p / min-p, penalties,
// logit bias, min_tokens over stop ids, logprobs and forced tokens (those rows go to the host).
// The GPU's sampler is held to the same reference in tests/gpu/sampling_test.cpp.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace myriad::testing
