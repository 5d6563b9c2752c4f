#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/sampler.h"

namespace myriad {
namespace {

SampleResult draw(std::vector<float> logits, const SamplingParams& p, uint64_t seed = 1,
                  std::vector<TokenId> output = {}, std::vector<TokenId> prompt = {},
                  std::vector<TokenId> stops = {}) {
    return sample_token(logits.data(), static_cast<int64_t>(logits.size()), p, seed, prompt, output,
                        stops);
}

TEST(Sampler, GreedyAndTopKOnePickTheBest) {
    SamplingParams p;
    p.temperature = 0;
    EXPECT_EQ(draw({0.1f, 3.0f, 2.9f}, p).token, 1);
    p.temperature = 1;
    p.top_k = 1;
    for (uint64_t s = 0; s < 20; ++s) EXPECT_EQ(draw({0.1f, 3.0f, 2.9f}, p, s).token, 1);
}

TEST(Sampler, FollowsTheSoftmaxDistribution) {
    SamplingParams p;
    p.temperature = 0.5;
    std::vector<float> l = {1.0f, 0.5f, 0.0f, -1.0f};
    std::map<TokenId, int> counts;
    const int n = 20000;
    for (int i = 0; i < n; ++i) counts[draw(l, p, 7, std::vector<TokenId>(i, 0)).token]++;
    double z = 0;
    for (float x : l) z += std::exp(x / 0.5);
    for (int t = 0; t < 4; ++t) {
        double want = std::exp(l[t] / 0.5) / z;
        EXPECT_NEAR(counts[t] / double(n), want, 0.015) << "token " << t;
    }
}

TEST(Sampler, TopPAndMinPCutTheTail) {
    std::vector<float> l = {2.0f, 1.9f, 0.0f, -5.0f};
    SamplingParams p;
    p.top_p = 0.6;  // the two best hold ~0.8 of the mass; the first alone < 0.6
    for (uint64_t s = 0; s < 200; ++s) EXPECT_LT(draw(l, p, s).token, 2);
    SamplingParams m;
    m.min_p = 0.5;  // token 2 has e^-2 of the best's probability
    for (uint64_t s = 0; s < 200; ++s) EXPECT_LT(draw(l, m, s).token, 2);
}

TEST(Sampler, SameSeedSameDraw) {
    SamplingParams p;
    std::vector<float> l = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    std::vector<TokenId> a, b;
    for (int i = 0; i < 32; ++i) {
        a.push_back(draw(l, p, 42, a).token);
        b.push_back(draw(l, p, 42, b).token);
    }
    EXPECT_EQ(a, b);
    std::vector<TokenId> c;
    for (int i = 0; i < 32; ++i) c.push_back(draw(l, p, 43, c).token);
    EXPECT_NE(a, c);
}

TEST(Sampler, PenaltiesAndBias) {
    SamplingParams p;
    p.temperature = 0;
    p.logit_bias = {{2, 10.0f}};
    EXPECT_EQ(draw({1.0f, 0.0f, 0.0f}, p).token, 2);
    SamplingParams rep;
    rep.temperature = 0;
    rep.repetition_penalty = 2.0;  // 1.0 -> 0.5 for the seen token, 0.8 stays
    EXPECT_EQ(draw({1.0f, 0.8f}, rep, 1, {}, {0}).token, 1);
    SamplingParams freq;
    freq.temperature = 0;
    freq.frequency_penalty = 0.15;  // seen twice: 1.0 - 0.3
    EXPECT_EQ(draw({1.0f, 0.8f}, freq, 1, {0, 0}).token, 1);
    SamplingParams pres;
    pres.temperature = 0;
    pres.presence_penalty = 0.1;  // once, whatever the count: 1.0 - 0.1 > 0.8
    EXPECT_EQ(draw({1.0f, 0.8f}, pres, 1, {0, 0, 0}).token, 0);
}

TEST(Sampler, TopKSamplesOnlyAmongTheKBestInProportion) {
    // The three best are tokens 1, 3 and 7; top-k 3 must never leave them and must draw each in
    // proportion to its softmax restricted to the three.
    std::vector<float> l = {0.5f, 2.0f, 1.2f, 1.9f, -1.0f, 0.0f, 1.0f, 1.5f, 0.3f, 1.4f};
    SamplingParams p;
    p.temperature = 1;
    p.top_k = 3;
    std::map<TokenId, int> counts;
    const int n = 6000;
    for (int i = 0; i < n; ++i) counts[draw(l, p, 1000 + i).token]++;
    EXPECT_EQ(counts.size(), 3u);
    const double z = std::exp(2.0) + std::exp(1.9) + std::exp(1.5);
    for (TokenId t : {1, 3, 7})
        EXPECT_NEAR(counts[t] / double(n), std::exp(double(l[t])) / z, 0.02) << "token " << t;
}

TEST(Sampler, PresencePenaltyIsSubtractedOnceFromGeneratedTokens) {
    SamplingParams p;
    p.temperature = 0;
    p.presence_penalty = 0.3;  // 1.0 - 0.3 < 0.8: the penalty decides
    EXPECT_EQ(draw({1.0f, 0.8f}, p, 1, {0}).token, 1);
    EXPECT_EQ(draw({1.0f, 0.8f}, p, 1, {}, {0}).token, 0);  // prompt tokens are not penalised
    p.presence_penalty = 0.15;  // once: 0.85 > 0.8 (per occurrence it would be 0.55)
    EXPECT_EQ(draw({1.0f, 0.8f}, p, 1, {0, 0, 0}).token, 0);
    p.presence_penalty = -0.3;  // negative: encourages what was said
    EXPECT_EQ(draw({0.8f, 1.0f}, p, 1, {0}).token, 0);
}

TEST(Sampler, MinTokensMasksStopTokens) {
    SamplingParams p;
    p.temperature = 0;
    p.min_tokens = 2;
    EXPECT_EQ(draw({5.0f, 1.0f}, p, 1, {7}, {}, {0}).token, 1);
    EXPECT_EQ(draw({5.0f, 1.0f}, p, 1, {7, 7}, {}, {0}).token, 0);
}

TEST(Sampler, LogprobsOfTheModelDistribution) {
    SamplingParams p;
    p.temperature = 0;
    p.top_logprobs = 2;
    auto r = draw({2.0f, 1.0f, 0.0f}, p);
    double z = std::log(std::exp(2.0) + std::exp(1.0) + 1.0);
    EXPECT_EQ(r.token, 0);
    EXPECT_NEAR(r.logprob, 2.0 - z, 1e-5);
    ASSERT_EQ(r.top.size(), 2u);
    EXPECT_EQ(r.top[0].token, 0);
    EXPECT_EQ(r.top[1].token, 1);
    EXPECT_NEAR(r.top[1].logprob, 1.0 - z, 1e-5);
}

}  // namespace
}  // namespace myriad
