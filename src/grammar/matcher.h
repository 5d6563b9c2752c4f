// Matcher: one sequence's position in a Grammar. It accepts tokens or bytes (each call one
// step of history, so rollback(n) undoes the last n steps, for speculative drafts), and fills
// the bitmask of the tokens that may come next.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/vocabulary.h"

namespace myriad::grammar {

class Matcher {
  public:
    Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab);

    // false (and no change) when the token may not come next. An EOS id is accepted only
    // where the document is complete, and ends the matcher (is_terminated).
    bool accept_token(TokenId id);
    bool accept_bytes(std::string_view bytes);
    // Bit i of word i/32 set where token i may come next; mask.size() >= vocab.mask_words().
    // With a budget, only tokens after which the document can be completed in at most
    // `budget` more bytes (so within as many tokens); when no token can, the plain mask.
    static constexpr uint64_t kNoBudget = ~uint64_t{0};
    void fill_mask(std::span<uint32_t> mask, uint64_t budget = kNoBudget);
    bool is_accepting() const;
    bool is_terminated() const { return terminated_.back(); }
    // Undoes the last n accepted steps (n <= steps()).
    void rollback(size_t n);
    size_t steps() const { return history_.size() - 1; }
    void reset();

    // The bytes that may come next (for byte-level samplers and tests).
    ByteSet next_bytes() const;
    uint64_t min_bytes_to_accept() const { return grammar_->min_bytes_to_accept(state()); }
    StateId state() const { return history_.back(); }
    const Grammar& grammar() const { return *grammar_; }

  private:
    uint64_t walk(StateId s, std::span<uint32_t> mask, uint64_t budget,
                  std::vector<uint64_t>* needs = nullptr) const;

    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const Vocabulary> vocab_;
    std::vector<StateId> history_;
    std::vector<bool> terminated_;
};

}  // namespace myriad::grammar
