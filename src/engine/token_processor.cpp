#include "engine/token_processor.h"

#include <algorithm>

#include "grammar/matcher.h"
#include "util/error.h"

namespace myriad {

TokenProcessor::TokenProcessor(const SamplingParams& p)
    : forced_(p.forced_tokens), constraint_(p.constraint) {
    if (!constraint_) return;
    MYRIAD_CHECK(constraint_->grammar && constraint_->vocab,
                 "an output constraint without grammar");
    matcher_ = std::make_unique<grammar::Matcher>(constraint_->grammar, constraint_->vocab);
    if (constraint_->starts_in_reasoning && constraint_->think_close >= 0)
        phase_ = Phase::Reasoning;
    else if (constraint_->trigger >= 0)
        phase_ = Phase::Waiting;
    else
        phase_ = Phase::Start;
}

TokenProcessor::TokenProcessor() = default;
TokenProcessor::TokenProcessor(TokenProcessor&&) noexcept = default;
TokenProcessor& TokenProcessor::operator=(TokenProcessor&&) noexcept = default;
TokenProcessor::~TokenProcessor() = default;

TokenId TokenProcessor::forced(int64_t generated) const {
    return generated < static_cast<int64_t>(forced_.size()) ? forced_[generated] : -1;
}

bool TokenProcessor::masks_next(int64_t remaining) const {
    return phase_ == Phase::Start || phase_ == Phase::Grammar ||
           (phase_ == Phase::Reasoning && must_close_reasoning(remaining));
}

bool TokenProcessor::must_close_reasoning(int64_t remaining) const {
    // The close token, then the shortest document (a trigger waits for an optional section).
    if (constraint_->think_close < 0 || after_reasoning() != Phase::Grammar) return false;
    const uint64_t need = matcher_->min_bytes_to_accept() + 1;
    return remaining <= 0 || static_cast<uint64_t>(remaining) <= need;
}

TokenProcessor::Phase TokenProcessor::after_reasoning() const {
    return constraint_->trigger >= 0 ? Phase::Waiting : Phase::Grammar;
}

void TokenProcessor::fill_mask(std::span<uint32_t> mask, int64_t remaining) {
    MYRIAD_CHECK(masks_next(remaining), "a token mask asked for an unconstrained position");
    auto set = [&](TokenId t) {
        if (t >= 0 && static_cast<size_t>(t >> 5) < mask.size()) mask[t >> 5] |= 1u << (t & 31);
    };
    if (phase_ == Phase::Reasoning) {  // out of room: the close token only
        std::fill(mask.begin(), mask.end(), 0u);
        set(constraint_->think_close);
        return;
    }
    // After this token, remaining - 1 tokens may complete the document.
    const uint64_t budget = remaining > 1 ? static_cast<uint64_t>(remaining - 1) : 0;
    const size_t words = constraint_->vocab->mask_words();
    if (mask.size() >= words) {
        matcher_->fill_mask(mask, budget);
        std::fill(mask.begin() + static_cast<std::ptrdiff_t>(words), mask.end(), 0u);
    } else {  // the model has fewer ids than the tokenizer: its vocabulary is the limit
        std::vector<uint32_t> full(words);
        matcher_->fill_mask(full, budget);
        std::copy(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(mask.size()),
                  mask.begin());
    }
    // Reasoning may open first while it leaves room to close it and write the document.
    if (phase_ == Phase::Start && constraint_->think_close >= 0 &&
        !must_close_reasoning(remaining - 1))
        set(constraint_->think_open);
}

void TokenProcessor::rollback(size_t n) {
    if (!constraint_) return;
    MYRIAD_CHECK(n <= history_.size(), "token processor rollback of {} past its {} accepts", n,
                 history_.size());
    size_t steps = 0;
    for (size_t i = 0; i < n; ++i) {
        phase_ = history_.back().first;
        steps += history_.back().second;
        history_.pop_back();
    }
    if (steps > 0) matcher_->rollback(steps);
}

TokenProcessor::Verdict TokenProcessor::accept(TokenId token, int64_t generated) {
    if (!constraint_) return Verdict::Continue;
    const Phase before = phase_;
    const size_t steps = matcher_->steps();
    const Verdict v = accept_step(token, generated);
    history_.emplace_back(before, matcher_->steps() != steps);
    return v;
}

TokenProcessor::Verdict TokenProcessor::accept_step(TokenId token, int64_t generated) {
    const bool was_forced = forced(generated) >= 0;
    switch (phase_) {
        case Phase::None:
        case Phase::Done:
            return Verdict::Continue;
        case Phase::Reasoning:
            if (token == constraint_->think_close) phase_ = after_reasoning();
            return Verdict::Continue;
        case Phase::Waiting:
            if (token == constraint_->trigger) phase_ = Phase::Grammar;
            return Verdict::Continue;
        case Phase::Start:
            if (token == constraint_->think_open && constraint_->think_close >= 0) {
                phase_ = Phase::Reasoning;
                return Verdict::Continue;
            }
            phase_ = Phase::Grammar;
            break;
        case Phase::Grammar:
            break;
    }
    if (!matcher_->accept_token(token)) {
        if (was_forced) {  // the caller's own tokens: the constraint gives way
            phase_ = Phase::Done;
            return Verdict::Continue;
        }
        return Verdict::Rejected;
    }
    if (matcher_->is_terminated()) {
        phase_ = Phase::Done;
        return Verdict::Continue;  // an end token: the engine stops on it
    }
    if (matcher_->is_accepting() && matcher_->next_bytes().none()) {
        phase_ = Phase::Done;
        return Verdict::Complete;
    }
    return Verdict::Continue;
}

}  // namespace myriad
