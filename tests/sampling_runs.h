// Requests of every sampling kind run through an engine on the kimi_k2 golden checkpoint, for the
// tests that compare where sampling happens (the engine, or the backend: CPU or GPU).
#pragma once

#include <vector>

#include "engine/engine.h"

namespace myriad::testing {

struct SamplingOutcome {
    std::vector<TokenId> tokens;
    std::vector<float> logprobs;  // per token: the chosen one's, then its top alternatives'
    FinishReason reason = FinishReason::Length;
};

// Greedy; temperature with top-k, top-p, min-p and their mix; repetition, presence and frequency
// penalties; logit bias (a token twice); stop ids masked until min_tokens; logprobs and forced
// tokens (rows the engine samples on the host); top_k 1. All seeded: 12 kinds, 20 tokens each.
std::vector<SamplingParams> request_kinds();

// One engine (one rank on `device`, sampling `mode`, warm-up `warm`) running every kind at once,
// kind i on the golden prompt i % (their number); the outcomes in kind order.
std::vector<SamplingOutcome> run_request_kinds(Device device, BackendSampling mode,
                                               WarmUp warm = WarmUp::Auto);

// The same tokens, logprobs and finish reason, kind by kind (failures name the kind).
void expect_same_outcomes(const std::vector<SamplingOutcome>& got,
                          const std::vector<SamplingOutcome>& want);

}  // namespace myriad::testing
