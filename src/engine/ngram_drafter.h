// NgramDrafter: prompt lookup. The sequence's last n tokens (n from prompt_lookup_max down to
// prompt_lookup_min) are looked for earlier in its own tokens, prompt and output alike; the
// tokens that followed the most recent match are the draft. Agents rewrite files they were
// shown and repeat arguments they read, so much of an answer is already in its prompt. The
// drafter looks up through each sequence's NgramIndex (ngram_index.h); ngram_draft is the
// definition it matches.
#pragma once

#include <span>
#include <vector>

#include "engine/drafter.h"

namespace myriad {

// The draft for `tokens`: up to `k` tokens that followed the most recent earlier occurrence
// of its last n tokens, trying n = max_n down to min_n; empty when none occurs.
std::vector<TokenId> ngram_draft(std::span<const TokenId> tokens, int64_t k, int64_t min_n,
                                 int64_t max_n);

class NgramDrafter : public Drafter {
  public:
    explicit NgramDrafter(const SpeculativeConfig& config) : config_(config) {}
    void propose(const std::vector<Sequence*>& seqs) override;

  private:
    SpeculativeConfig config_;
};

}  // namespace myriad
