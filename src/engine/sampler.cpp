#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace myriad {

double counter_uniform(uint64_t seed, uint64_t counter) {
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + counter + 0x632be59bd9b4e019ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

namespace {

// log_softmax of x into out, computed in double for the normaliser.
void log_softmax(const float* x, int64_t n, std::vector<float>& out) {
    float mx = *std::max_element(x, x + n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i]) - mx);
    const double lse = mx + std::log(sum);
    out.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] - lse);
}

// The chosen token's logprob and the `top` best of `raw_logprobs` (ties: lower id first).
void fill_logprobs(SampleResult& res, const std::vector<float>& raw_logprobs, int64_t top) {
    const int64_t vocab = static_cast<int64_t>(raw_logprobs.size());
    res.logprob = raw_logprobs[res.token];
    const int64_t n = std::min<int64_t>(top, vocab);
    std::vector<int32_t> idx(static_cast<size_t>(vocab));
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), [&](int32_t a, int32_t b) {
        return raw_logprobs[a] > raw_logprobs[b] || (raw_logprobs[a] == raw_logprobs[b] && a < b);
    });
    for (int64_t i = 0; i < n; ++i) res.top.push_back({idx[i], raw_logprobs[idx[i]]});
}

}  // namespace

SampleResult sample_token(float* logits, int64_t vocab, const SamplingParams& p, uint64_t seed,
                          const std::vector<TokenId>& prompt, const std::vector<TokenId>& output,
                          const std::vector<TokenId>& stop_ids) {
    SampleResult res;
    // Logprobs describe the model's own distribution, before any processing (vLLM's default).
    std::vector<float> raw_logprobs;
    if (p.top_logprobs >= 0) log_softmax(logits, vocab, raw_logprobs);

    if (p.repetition_penalty != 1.0) {
        const float rp = static_cast<float>(p.repetition_penalty);
        std::vector<bool> seen(static_cast<size_t>(vocab), false);
        for (const auto* list : {&prompt, &output})
            for (TokenId t : *list)
                if (t >= 0 && t < vocab) seen[t] = true;
        for (int64_t i = 0; i < vocab; ++i)
            if (seen[i]) logits[i] = logits[i] > 0 ? logits[i] / rp : logits[i] * rp;
    }
    if (p.presence_penalty != 0.0 || p.frequency_penalty != 0.0) {
        std::unordered_map<TokenId, int64_t> counts;
        for (TokenId t : output) ++counts[t];
        for (const auto& [t, n] : counts)
            if (t >= 0 && t < vocab)
                logits[t] -= static_cast<float>(p.presence_penalty + p.frequency_penalty * n);
    }
    for (const auto& [t, b] : p.logit_bias)
        if (t >= 0 && t < vocab) logits[t] += b;
    if (static_cast<int64_t>(output.size()) < p.min_tokens)
        for (TokenId t : stop_ids)
            if (t >= 0 && t < vocab) logits[t] = -INFINITY;

    const bool greedy = p.temperature <= 0.0 || p.top_k == 1;
    if (greedy) {
        res.token = static_cast<TokenId>(std::max_element(logits, logits + vocab) - logits);
    } else {
        const float inv_t = static_cast<float>(1.0 / p.temperature);
        // Candidates sorted by logit (ties by id), then cut by top-k, top-p and min-p.
        std::vector<int32_t> order(static_cast<size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        int64_t keep = vocab;
        if (p.top_k > 0 && p.top_k < vocab) {
            keep = p.top_k;
            std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                              [&](int32_t a, int32_t b) {
                                  return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                              });
        } else {
            std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
                return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
            });
        }
        const float mx = logits[order[0]] * inv_t;
        std::vector<double> prob(static_cast<size_t>(keep));
        double sum = 0.0;
        for (int64_t i = 0; i < keep; ++i) {
            prob[i] = std::exp(double(logits[order[i]]) * inv_t - mx);
            sum += prob[i];
        }
        for (auto& q : prob) q /= sum;
        if (p.top_p < 1.0) {
            double cum = 0.0;
            int64_t n = 0;
            while (n < keep) {
                cum += prob[n++];
                if (cum >= p.top_p) break;
            }
            keep = std::max<int64_t>(n, 1);
        }
        if (p.min_p > 0.0) {
            const double floor = p.min_p * prob[0];
            int64_t n = 1;
            while (n < keep && prob[n] >= floor) ++n;
            keep = n;
        }
        double total = 0.0;
        for (int64_t i = 0; i < keep; ++i) total += prob[i];
        const double u = counter_uniform(seed, output.size()) * total;
        double cum = 0.0;
        res.token = order[keep - 1];
        for (int64_t i = 0; i < keep; ++i) {
            cum += prob[i];
            if (u < cum) {
                res.token = order[i];
                break;
            }
        }
    }
    if (p.top_logprobs >= 0) fill_logprobs(res, raw_logprobs, p.top_logprobs);
    return res;
}

SampleResult forced_token(const float* logits, int64_t vocab, TokenId token,
                          const SamplingParams& p) {
    SampleResult res;
    res.token = token;
    if (p.top_logprobs >= 0) {
        std::vector<float> raw_logprobs;
        log_softmax(logits, vocab, raw_logprobs);
        fill_logprobs(res, raw_logprobs, p.top_logprobs);
    }
    return res;
}

}  // namespace myriad
