#include "ops/token_choice.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace myriad {

void apply_logit_edits(float* logits, int64_t vocab, const LogitEdit* begin, const LogitEdit* end) {
    for (const LogitEdit* e = begin; e != end; ++e) {
        if (e->token < 0 || e->token >= vocab) continue;
        float& l = logits[e->token];
        if (e->kind == LogitEdit::Repetition)
            l = l > 0 ? l / e->value : l * e->value;
        else if (e->kind == LogitEdit::Add)
            l += e->value;
        else
            l = -INFINITY;
    }
}

void apply_token_mask(float* logits, int64_t vocab, const uint32_t* mask) {
    for (int64_t t = 0; t < vocab; ++t)
        if (!(mask[t >> 5] >> (t & 31) & 1u)) logits[t] = -INFINITY;
}

TokenId choose_token(const float* logits, int64_t vocab, const SampleRow& row) {
    if (row.greedy) return static_cast<TokenId>(std::max_element(logits, logits + vocab) - logits);
    // Candidates sorted by logit (ties by id), cut to top-k, then chosen among.
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    auto before = [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    int64_t keep = vocab;
    if (row.top_k > 0 && row.top_k < vocab) {
        keep = row.top_k;
        std::partial_sort(order.begin(), order.begin() + keep, order.end(), before);
    } else {
        std::sort(order.begin(), order.end(), before);
    }
    std::vector<float> sorted(static_cast<size_t>(keep));
    for (int64_t i = 0; i < keep; ++i) sorted[i] = logits[order[i]];
    return choose_among_sorted(sorted.data(), order.data(), keep, row);
}

TokenId choose_among_sorted(const float* logits, const TokenId* ids, int64_t count,
                            const SampleRow& row) {
    if (row.greedy) return ids[0];
    const float inv_t = row.inv_temperature;
    int64_t keep = row.top_k > 0 && row.top_k < count ? row.top_k : count;
    const float mx = logits[0] * inv_t;
    std::vector<double> prob(static_cast<size_t>(keep));
    double sum = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
        prob[i] = std::exp(double(logits[i]) * inv_t - mx);
        sum += prob[i];
    }
    for (auto& q : prob) q /= sum;
    if (row.top_p < 1.0) {
        double cum = 0.0;
        int64_t n = 0;
        while (n < keep) {
            cum += prob[n++];
            if (cum >= row.top_p) break;
        }
        keep = std::max<int64_t>(n, 1);
    }
    if (row.min_p > 0.0) {
        const double floor = row.min_p * prob[0];
        int64_t n = 1;
        while (n < keep && prob[n] >= floor) ++n;
        keep = n;
    }
    double total = 0.0;
    for (int64_t i = 0; i < keep; ++i) total += prob[i];
    const double u = row.uniform * total;
    double cum = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
        cum += prob[i];
        if (u < cum) return ids[i];
    }
    return ids[keep - 1];
}

}  // namespace myriad
