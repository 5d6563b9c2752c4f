// TokenProcessor: the one place where a sequence's next token is decided before sampling and
// checked after it. Forced tokens (a tool-call header, the server's test replay) come first;
// then structured output: while the output follows a grammar, its matcher gives each step the
// allowed-token bitmask (applied where the logits are, ops/step_sampling.h) and reads every
// chosen token. The constraint waits while the model reasons (until think_close) and, for a
// strict tool under tool_choice auto, until the model opens its call section (the trigger).
// The output's token budget (max_tokens, the context) is kept in view: reasoning is closed,
// and the grammar steered to its end, while enough tokens are left to complete the document
// (counting a byte a token, which byte-level vocabularies can always spell).
// Speculative decoding checks its drafts here too: before a step, each draft token is accepted
// in turn (the mask of every verified position taken on the way) and the whole run is then
// rolled back; after the step the verified tokens are accepted for real.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/sampling_params.h"

namespace myriad {

namespace grammar {
class Matcher;
}

class TokenProcessor {
  public:
    TokenProcessor();
    explicit TokenProcessor(const SamplingParams& params);
    TokenProcessor(TokenProcessor&&) noexcept;
    TokenProcessor& operator=(TokenProcessor&&) noexcept;
    ~TokenProcessor();

    // The token forced at output index `generated`; -1 when it is sampled.
    TokenId forced(int64_t generated) const;
    // Whether the next sampled token has a mask, `remaining` tokens (this one included) being
    // left to the output. Free (no mask, no matcher) for unconstrained sequences.
    bool masks_next(int64_t remaining) const;
    // The allowed tokens of the next position into `mask` (words for the model's vocabulary;
    // ids past the grammar's vocabulary are not allowed). Only when masks_next(remaining).
    void fill_mask(std::span<uint32_t> mask, int64_t remaining);

    enum class Verdict : uint8_t {
        Continue,  // go on
        Complete,  // the grammar is complete and nothing may follow: the output ends here
        Rejected,  // a sampled token the grammar refuses (the mask was not applied)
    };
    // The token chosen for output index `generated` (forced or sampled).
    Verdict accept(TokenId token, int64_t generated);
    // Undoes the last n accepts (n <= the accepts so far that were not rolled back), so a
    // draft's tokens can be tried and taken back.
    void rollback(size_t n);

  private:
    enum class Phase : uint8_t {
        None,       // unconstrained
        Start,      // first token: the grammar's or think_open
        Reasoning,  // free until think_close
        Waiting,    // free until the trigger token
        Grammar,    // the matcher decides
        Done,       // the grammar was left (a forced token it refused): unconstrained
    };
    Phase after_reasoning() const;
    Verdict accept_step(TokenId token, int64_t generated);
    // Tokens left so few that reasoning must end now for the document to fit.
    bool must_close_reasoning(int64_t remaining) const;

    std::vector<TokenId> forced_;
    std::shared_ptr<const OutputConstraint> constraint_;
    std::unique_ptr<grammar::Matcher> matcher_;
    Phase phase_ = Phase::None;
    // Per accept of a constrained sequence: the phase before it, whether the matcher took a
    // step (rollback's record; empty while unconstrained).
    std::vector<std::pair<Phase, bool>> history_;
};

}  // namespace myriad
