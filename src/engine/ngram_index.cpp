#include "engine/ngram_index.h"

#include <algorithm>

namespace myriad {

std::vector<TokenId> NgramIndex::draft(std::span<const TokenId> tokens, int64_t k, int64_t min_n,
                                       int64_t max_n) {
    const int64_t len = static_cast<int64_t>(tokens.size());
    if (len - 1 < indexed_) {  // not the sequence it was built for
        positions_.clear();
        indexed_ = 0;
    }
    // Every position but the last: an occurrence must have a token after it.
    for (; indexed_ < len - 1; ++indexed_)
        positions_[tokens[static_cast<size_t>(indexed_)]].push_back(static_cast<int32_t>(indexed_));
    const int64_t cap = std::min(max_n, len - 1), least = std::max<int64_t>(min_n, 1);
    if (k <= 0 || cap < least) return {};
    auto it = positions_.find(tokens[static_cast<size_t>(len - 1)]);
    if (it == positions_.end()) return {};
    // The longest match of the suffix ending at each earlier occurrence of the last token, most
    // recent first: the first to reach a length is the most recent occurrence of that length.
    int64_t best_len = 0, best_end = -1;
    const std::vector<int32_t>& at = it->second;
    for (auto p = at.rbegin(); p != at.rend() && best_len < cap; ++p) {
        const int64_t end = *p;
        int64_t m = 1;
        while (m < cap && end - m >= 0 &&
               tokens[static_cast<size_t>(end - m)] == tokens[static_cast<size_t>(len - 1 - m)])
            ++m;
        if (m > best_len) {
            best_len = m;
            best_end = end;
        }
    }
    if (best_len < least) return {};
    const int64_t from = best_end + 1, to = std::min(len, from + k);
    return std::vector<TokenId>(tokens.begin() + from, tokens.begin() + to);
}

}  // namespace myriad
