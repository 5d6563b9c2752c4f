#include "engine/sampler.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <numeric>

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

void append_logit_edits(const SamplingParams& p, int64_t vocab, const std::vector<TokenId>& prompt,
                        const std::vector<TokenId>& output, const std::vector<TokenId>& stop_ids,
                        std::vector<LogitEdit>& edits) {
    if (p.repetition_penalty != 1.0) {
        const float rp = static_cast<float>(p.repetition_penalty);
        std::vector<bool> seen(static_cast<size_t>(vocab), false);
        for (const auto* list : {&prompt, &output})
            for (TokenId t : *list)
                if (t >= 0 && t < vocab) seen[t] = true;
        for (int64_t i = 0; i < vocab; ++i)
            if (seen[i]) edits.push_back({static_cast<int32_t>(i), LogitEdit::Repetition, rp});
    }
    if (p.presence_penalty != 0.0 || p.frequency_penalty != 0.0) {
        std::map<TokenId, int64_t> counts;
        for (TokenId t : output) ++counts[t];
        for (const auto& [t, n] : counts)
            if (t >= 0 && t < vocab)
                edits.push_back(
                    {t, LogitEdit::Add,
                     -static_cast<float>(p.presence_penalty + p.frequency_penalty * n)});
    }
    for (const auto& [t, b] : p.logit_bias)
        if (t >= 0 && t < vocab) edits.push_back({t, LogitEdit::Add, b});
    if (static_cast<int64_t>(output.size()) < p.min_tokens)
        for (TokenId t : stop_ids)
            if (t >= 0 && t < vocab) edits.push_back({t, LogitEdit::Mask, 0.0f});
}

SampleRow sample_row(const SamplingParams& p, uint64_t seed, int64_t generated) {
    SampleRow row;
    row.greedy = p.temperature <= 0.0 || p.top_k == 1;
    if (row.greedy) return row;
    row.inv_temperature = static_cast<float>(1.0 / p.temperature);
    row.top_k = static_cast<int32_t>(std::max<int64_t>(0, std::min<int64_t>(p.top_k, INT32_MAX)));
    row.top_p = p.top_p;
    row.min_p = p.min_p;
    row.uniform = counter_uniform(seed, static_cast<uint64_t>(generated));
    return row;
}

SampleResult sample_token(float* logits, int64_t vocab, const SamplingParams& p, uint64_t seed,
                          const std::vector<TokenId>& prompt, const std::vector<TokenId>& output,
                          const std::vector<TokenId>& stop_ids, const uint32_t* mask) {
    SampleResult res;
    // Logprobs describe the model's own distribution, before any processing (vLLM's default).
    std::vector<float> raw_logprobs;
    if (p.top_logprobs >= 0) log_softmax(logits, vocab, raw_logprobs);
    std::vector<LogitEdit> edits;
    append_logit_edits(p, vocab, prompt, output, stop_ids, edits);
    apply_logit_edits(logits, vocab, edits.data(), edits.data() + edits.size());
    if (mask) apply_token_mask(logits, vocab, mask);
    res.token =
        choose_token(logits, vocab, sample_row(p, seed, static_cast<int64_t>(output.size())));
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
