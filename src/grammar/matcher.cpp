// fill_mask: a cached mask per (state, vocabulary), or per (state, vocabulary, budget) under a
// budget that cuts it, when there is one (a copy, microseconds);
// otherwise one preorder walk of the vocabulary trie, where each node costs one lookup in the
// grammar's transition table and a rejected byte skips the node's whole subtree.
#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace myriad::grammar {

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)) {
    reset();
}

void Matcher::reset() {
    history_.assign(1, grammar_->initial_state());
    terminated_.assign(1, false);
}

bool Matcher::is_accepting() const {
    return !is_terminated() && grammar_->is_accepting(state());
}

bool Matcher::accept_bytes(std::string_view bytes) {
    if (is_terminated()) return false;
    StateId s = state();
    {
        std::lock_guard lock(grammar_->mutex());
        for (unsigned char c : bytes) {
            s = grammar_->next_locked(s, c);
            if (s == kDeadState) return false;
        }
    }
    history_.push_back(s);
    terminated_.push_back(false);
    return true;
}

bool Matcher::accept_token(TokenId id) {
    if (id < 0 || static_cast<size_t>(id) >= vocab_->size() || is_terminated()) return false;
    if (vocab_->is_eos(id)) {
        if (!grammar_->is_accepting(state())) return false;
        history_.push_back(state());
        terminated_.push_back(true);
        return true;
    }
    const std::string& b = vocab_->bytes(id);
    if (b.empty()) return false;
    return accept_bytes(b);
}

void Matcher::rollback(size_t n) {
    MYRIAD_CHECK(n <= steps(), "grammar rollback of {} steps past the {} taken", n, steps());
    history_.resize(history_.size() - n);
    terminated_.resize(terminated_.size() - n);
}

ByteSet Matcher::next_bytes() const {
    ByteSet out;
    if (is_terminated()) return out;
    std::lock_guard lock(grammar_->mutex());
    for (int b = 0; b < 256; ++b)
        if (grammar_->next_locked(state(), static_cast<uint8_t>(b)) != kDeadState) out.set(b);
    return out;
}

void Matcher::fill_mask(std::span<uint32_t> mask, uint64_t budget) {
    const size_t words = vocab_->mask_words();
    MYRIAD_CHECK(mask.size() >= words, "token mask of {} words for a vocabulary needing {}",
                 mask.size(), words);
    std::fill(mask.begin(), mask.begin() + words, 0u);
    if (is_terminated()) return;
    const StateId s = state();
    std::lock_guard lock(grammar_->mutex());
    const Grammar::CachedMask* cached = grammar_->cached_mask(vocab_->uid(), s);
    if (!cached) {
        Grammar::CachedMask fresh;
        fresh.words.assign(words, 0u);
        fresh.max_after = walk(s, fresh.words, kNoBudget, &fresh.needs);
        grammar_->store_mask(vocab_->uid(), s, std::move(fresh));
        cached = grammar_->cached_mask(vocab_->uid(), s);
    }
    if (cached->max_after > budget) {  // some token would leave too much to finish
        // The mask of the largest need within the budget is this budget's (the same tokens).
        auto at = std::upper_bound(cached->needs.begin(), cached->needs.end(), budget);
        budget = at == cached->needs.begin() ? 0 : *(at - 1);
        if (const std::vector<uint32_t>* b =
                grammar_->cached_budget_mask(vocab_->uid(), s, budget)) {
            std::memcpy(mask.data(), b->data(), words * sizeof(uint32_t));
            return;
        }
        walk(s, mask, budget);
        bool any = false;
        for (size_t w = 0; w < words && !any; ++w) any = mask[w] != 0;
        if (!any) std::memcpy(mask.data(), cached->words.data(), words * sizeof(uint32_t));
        grammar_->store_budget_mask(vocab_->uid(), s, budget,
                                    std::vector<uint32_t>(mask.begin(), mask.begin() + words));
        return;
    }
    std::memcpy(mask.data(), cached->words.data(), words * sizeof(uint32_t));
}

// Sets the allowed tokens of `s` (within `budget`) in `mask`; returns the most bytes an allowed
// token leaves to complete the document. The grammar's mutex is held.
uint64_t Matcher::walk(StateId s, std::span<uint32_t> mask, uint64_t budget,
                       std::vector<uint64_t>* needs) const {
    const auto& trie = vocab_->trie();
    const auto& by_node = vocab_->tokens_by_node();
    std::vector<StateId> at_depth(vocab_->max_depth() + 1);
    at_depth[0] = s;
    uint64_t max_after = 0;
    for (size_t i = 1; i < trie.size();) {
        const Vocabulary::TrieNode& n = trie[i];
        StateId next = grammar_->next_locked(at_depth[n.depth - 1], n.byte);
        if (next == kDeadState) {
            i = n.skip;
            continue;
        }
        at_depth[n.depth] = next;
        if (n.first_token < n.last_token) {
            const uint64_t need = grammar_->min_bytes_to_accept_locked(next);
            if (need <= budget) {
                max_after = std::max(max_after, need);
                if (needs) needs->push_back(need);
                for (uint32_t t = n.first_token; t < n.last_token; ++t)
                    mask[by_node[t] >> 5] |= 1u << (by_node[t] & 31);
            }
        }
        ++i;
    }
    if (grammar_->is_accepting_locked(s))
        for (TokenId e : vocab_->eos_ids()) mask[e >> 5] |= 1u << (e & 31);
    if (needs) {
        std::sort(needs->begin(), needs->end());
        needs->erase(std::unique(needs->begin(), needs->end()), needs->end());
    }
    return max_after;
}

}  // namespace myriad::grammar
