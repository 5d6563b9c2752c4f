#include "engine/ngram_drafter.h"

#include <algorithm>

namespace myriad {

std::vector<TokenId> ngram_draft(std::span<const TokenId> tokens, int64_t k, int64_t min_n,
                                 int64_t max_n) {
    const int64_t len = static_cast<int64_t>(tokens.size());
    if (k <= 0) return {};
    for (int64_t n = std::min(max_n, len - 1); n >= std::max<int64_t>(min_n, 1); --n) {
        const TokenId* suffix = tokens.data() + len - n;
        // The most recent occurrence ending before the suffix itself starts... or overlapping it:
        // an occurrence at [i, i + n) with i + n < len (something followed it).
        for (int64_t i = len - n - 1; i >= 0; --i) {
            if (tokens[static_cast<size_t>(i)] != suffix[0] ||
                !std::equal(suffix, suffix + n, tokens.data() + i))
                continue;
            const int64_t from = i + n, to = std::min(len, from + k);
            return std::vector<TokenId>(tokens.begin() + from, tokens.begin() + to);
        }
    }
    return {};
}

void NgramDrafter::propose(const std::vector<Sequence*>& seqs) {
    for (Sequence* seq : seqs)
        seq->draft = seq->ngram_index.draft(seq->tokens, seq->draft_limit,
                                            config_.prompt_lookup_min, config_.prompt_lookup_max);
}

}  // namespace myriad
