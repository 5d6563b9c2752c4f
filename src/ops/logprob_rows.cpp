#include "ops/logprob_rows.h"

#include <algorithm>
#include <cmath>

namespace myriad {

void logprob_rows_host(const float* logits, int64_t slices, int64_t n, int64_t shard, int64_t vocab,
                       const TokenId* targets, int64_t top_n, float* target, TokenId* top_ids,
                       float* top) {
    const int64_t width = std::min(vocab, slices * shard);
    std::vector<float> row(static_cast<size_t>(width));
    std::vector<TokenId> order(static_cast<size_t>(width));
    const int64_t k = std::min(top_n, width);
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t c = 0; c < width; ++c)
            row[c] = logits[((c / shard) * n + i) * shard + c % shard];
        const float m = *std::max_element(row.begin(), row.end());
        double sum = 0.0;
        for (float x : row) sum += std::exp(double(x) - m);
        const double lse = m + std::log(sum);
        const TokenId t = targets[i];
        target[i] = t >= 0 && t < width ? static_cast<float>(double(row[t]) - lse) : -INFINITY;
        for (int64_t c = 0; c < width; ++c) order[c] = static_cast<TokenId>(c);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](TokenId a, TokenId b) {
            return row[a] > row[b] || (row[a] == row[b] && a < b);
        });
        for (int64_t j = 0; j < top_n; ++j) {
            top_ids[i * top_n + j] = j < k ? order[j] : -1;
            top[i * top_n + j] =
                j < k ? static_cast<float>(double(row[order[j]]) - lse) : -INFINITY;
        }
    }
}

}  // namespace myriad
