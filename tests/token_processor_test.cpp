// The engine's per-sequence token hook (engine/token_processor.h): masks only where a grammar
// applies, reasoning and trigger gates, the budget that closes reasoning in time, completion,
// rejection of a token the mask refuses, forced tokens.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/token_processor.h"
#include "grammar/json_schema.h"
#include "grammar/vocabulary.h"

namespace myriad {
namespace {

constexpr TokenId kOpen = 40, kClose = 41, kTrigger = 42, kEos = 43;

// Ids 0..39: the characters of `chars`; 40..43: markers and the end token (no bytes).
std::shared_ptr<const grammar::Vocabulary> vocab() {
    const std::string chars = "{}[]\":,0123456789abcdefghijklmnopqrstu-";
    std::vector<std::string> b;
    for (char c : chars) b.emplace_back(1, c);
    b.resize(44);
    return std::make_shared<const grammar::Vocabulary>(b, std::vector<grammar::TokenId>{kEos});
}

TokenId id(char c) {
    return static_cast<TokenId>(std::string("{}[]\":,0123456789abcdefghijklmnopqrstu-").find(c));
}

std::vector<TokenId> allowed(TokenProcessor& p, int64_t remaining) {
    std::vector<uint32_t> mask(2, 0xdeadbeefu);  // 64 ids: the model has more than the vocab
    p.fill_mask(mask, remaining);
    std::vector<TokenId> out;
    for (TokenId t = 0; t < 64; ++t)
        if (mask[t >> 5] >> (t & 31) & 1) out.push_back(t);
    return out;
}

SamplingParams constrained(const char* schema, TokenId open = -1, TokenId trigger = -1) {
    auto c = std::make_shared<OutputConstraint>();
    c->grammar = grammar::compile_json_schema_text(schema);
    c->vocab = vocab();
    if (open >= 0) {
        c->think_open = open;
        c->think_close = kClose;
    }
    c->trigger = trigger;
    SamplingParams p;
    p.constraint = c;
    return p;
}

TEST(TokenProcessor, UnconstrainedSequencesHaveNoMask) {
    SamplingParams p;
    p.forced_tokens = {5, 6};
    TokenProcessor t(p);
    EXPECT_FALSE(t.masks_next(100));
    EXPECT_EQ(t.forced(0), 5);
    EXPECT_EQ(t.forced(1), 6);
    EXPECT_EQ(t.forced(2), -1);
    EXPECT_EQ(t.accept(99, 0), TokenProcessor::Verdict::Continue);
}

TEST(TokenProcessor, GrammarMasksRejectsAndCompletes) {
    TokenProcessor t(constrained(R"({"enum": ["ab", "a1"]})"));
    ASSERT_TRUE(t.masks_next(100));
    EXPECT_EQ(allowed(t, 100), std::vector<TokenId>{id('"')});
    EXPECT_EQ(t.accept(id('x'), 0), TokenProcessor::Verdict::Rejected);
    EXPECT_EQ(t.accept(id('"'), 0), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(t.accept(id('a'), 1), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(allowed(t, 100), (std::vector<TokenId>{id('1'), id('b')}));
    EXPECT_EQ(t.accept(id('b'), 2), TokenProcessor::Verdict::Continue);
    // Nothing may follow the closing quote: the output ends there, no end token needed.
    EXPECT_EQ(t.accept(id('"'), 3), TokenProcessor::Verdict::Complete);
    EXPECT_FALSE(t.masks_next(100));
}

TEST(TokenProcessor, AnEndTokenWhereTheDocumentMayGoOn) {
    TokenProcessor t(constrained(R"({"type": "integer"})"));
    EXPECT_EQ(t.accept(id('4'), 0), TokenProcessor::Verdict::Continue);
    std::vector<TokenId> a = allowed(t, 100);
    EXPECT_NE(std::find(a.begin(), a.end(), kEos), a.end());
    EXPECT_NE(std::find(a.begin(), a.end(), id('7')), a.end());
    EXPECT_EQ(t.accept(kEos, 1), TokenProcessor::Verdict::Continue);  // the engine stops on it
    EXPECT_FALSE(t.masks_next(100));
}

TEST(TokenProcessor, ReasoningFirstThenTheGrammarClosedInTime) {
    const char* schema = R"({"type": "array", "items": {"type": "integer"}, "minItems": 3})";
    TokenProcessor t(constrained(schema, kOpen));
    // The shortest document, [0,0,0], is 7 bytes: with room the model may open reasoning.
    std::vector<TokenId> first = allowed(t, 100);
    EXPECT_EQ(first, (std::vector<TokenId>{id('['), kOpen}));
    EXPECT_EQ(allowed(t, 8), std::vector<TokenId>{id('[')});  // no room to reason
    ASSERT_EQ(t.accept(kOpen, 0), TokenProcessor::Verdict::Continue);
    EXPECT_FALSE(t.masks_next(50));  // free reasoning
    EXPECT_EQ(t.accept(id('z'), 1), TokenProcessor::Verdict::Continue);
    ASSERT_TRUE(t.masks_next(8));  // 8 left: close now, 7 for the document
    EXPECT_EQ(allowed(t, 8), std::vector<TokenId>{kClose});
    ASSERT_EQ(t.accept(kClose, 2), TokenProcessor::Verdict::Continue);
    // Then the grammar, steered to finish within the 7 tokens left.
    int64_t left = 7;
    std::vector<TokenId> a = allowed(t, left);
    EXPECT_EQ(a, std::vector<TokenId>{id('[')});
    ASSERT_EQ(t.accept(id('['), 3), TokenProcessor::Verdict::Continue);
    --left;
    // 6 left: a digit leaves ",0,0]" (5 bytes); a minus sign would leave 6, too many.
    std::vector<TokenId> digits;
    for (char c = '0'; c <= '9'; ++c) digits.push_back(id(c));
    EXPECT_EQ(allowed(t, left), digits);
    a = allowed(t, 100);
    EXPECT_NE(std::find(a.begin(), a.end(), id('-')), a.end());
}

TEST(TokenProcessor, PromptInReasoningAndTheTrigger) {
    SamplingParams p = constrained(R"({"type": "boolean"})", kOpen, kTrigger);
    auto c = std::make_shared<OutputConstraint>(*p.constraint);
    c->starts_in_reasoning = true;
    p.constraint = c;
    TokenProcessor t(p);
    EXPECT_FALSE(t.masks_next(3));  // a trigger: nothing has to be written, nothing is forced
    t.accept(kClose, 0);
    EXPECT_FALSE(t.masks_next(100));  // free text until the trigger
    t.accept(id('a'), 1);
    t.accept(kTrigger, 2);
    ASSERT_TRUE(t.masks_next(100));
    EXPECT_EQ(allowed(t, 100), (std::vector<TokenId>{id('f'), id('t')}));
}

TEST(TokenProcessor, ForcedTokensTheGrammarRefusesLiftIt) {
    SamplingParams p = constrained(R"({"type": "boolean"})");
    p.forced_tokens = {id('a')};
    TokenProcessor t(p);
    EXPECT_EQ(t.forced(0), id('a'));
    EXPECT_EQ(t.accept(id('a'), 0), TokenProcessor::Verdict::Continue);
    EXPECT_FALSE(t.masks_next(100));
}

// Speculative drafts are tried and taken back: rollback restores the phase (the reasoning gate
// too) and the grammar's position, so the masks are those before the draft.
TEST(TokenProcessor, RollbackUndoesAcceptsAcrossPhases) {
    TokenProcessor t(constrained(R"({"enum": ["ab", "a1"]})", kOpen));
    const auto start = allowed(t, 100);
    EXPECT_EQ(t.accept(kOpen, 0), TokenProcessor::Verdict::Continue);  // reasoning opens
    EXPECT_FALSE(t.masks_next(100));
    EXPECT_EQ(t.accept(id('z'), 1), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(t.accept(kClose, 2), TokenProcessor::Verdict::Continue);  // the grammar starts
    EXPECT_EQ(t.accept(id('"'), 3), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(t.accept(id('a'), 4), TokenProcessor::Verdict::Continue);
    const auto after_a = allowed(t, 100);
    EXPECT_EQ(after_a, (std::vector<TokenId>{id('1'), id('b')}));
    EXPECT_EQ(t.accept(id('b'), 5), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(t.accept(id('"'), 6), TokenProcessor::Verdict::Complete);
    t.rollback(2);
    EXPECT_EQ(allowed(t, 100), after_a);
    t.rollback(3);  // back into reasoning: free again
    EXPECT_FALSE(t.masks_next(100));
    t.rollback(2);  // before the open token
    EXPECT_EQ(allowed(t, 100), start);
    // And forward again along another path.
    EXPECT_EQ(t.accept(id('"'), 0), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(t.accept(id('a'), 1), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(t.accept(id('1'), 2), TokenProcessor::Verdict::Continue);
    EXPECT_EQ(t.accept(id('"'), 3), TokenProcessor::Verdict::Complete);
}

}  // namespace
}  // namespace myriad
