// NgramIndex: prompt lookup (ngram_drafter.h) without scanning the whole sequence each step. It
// keeps, for every token value, the positions where it occurs (4 bytes a token, extended as the
// sequence grows), so a lookup visits only the earlier occurrences of the sequence's last token,
// most recent first, and stops at the first that matches the longest suffix allowed. Its draft
// is ngram_draft's, token for token.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ops/step_input.h"

namespace myriad {

class NgramIndex {
  public:
    // ngram_draft(tokens, k, min_n, max_n). `tokens` is the same sequence at every call, grown
    // (a shorter one rebuilds the index).
    std::vector<TokenId> draft(std::span<const TokenId> tokens, int64_t k, int64_t min_n,
                               int64_t max_n);

  private:
    std::unordered_map<TokenId, std::vector<int32_t>> positions_;
    int64_t indexed_ = 0;  // positions [0, indexed_) are in positions_
};

}  // namespace myriad
