// The matcher's token masks against the definition: token t is allowed exactly when the
// matcher accepts t's bytes from the current state (checked token by token, brute force).
#include <gtest/gtest.h>

#include <random>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

using namespace myriad::grammar;

namespace {

const char* kToolSchema = R"({"type":"object","properties":{
  "city":{"type":"string","minLength":1,"maxLength":20},
  "unit":{"enum":["celsius","fahrenheit"]},
  "days":{"type":"integer","minimum":1,"maximum":14},
  "tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"},"maxItems":3}},
  "required":["city","unit"],"additionalProperties":false})";

std::vector<std::string> synthetic_vocab(size_t n, uint64_t seed) {
    std::vector<std::string> v;
    for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
    const std::string alphabet = "{}[]\",:0123456789-.abcdefghijklmnopqrstuvwxyz \\ue";
    std::mt19937_64 rng(seed);
    for (const char* w : {"{\"", "\":", "\",\"", "celsius", "\"celsius\"", "city", "\":\"", "\"}",
                          "12", "14", "15", "true", "[\"", "\"]"})
        v.push_back(w);
    while (v.size() < n) {
        std::string t;
        for (size_t len = 1 + rng() % 6; t.size() < len;) t += alphabet[rng() % alphabet.size()];
        v.push_back(t);
    }
    v.push_back("");  // a hole: never allowed
    v.push_back("<eos>");
    return v;
}

std::vector<uint32_t> brute_force(Matcher& m, const Vocabulary& v) {
    std::vector<uint32_t> mask(v.mask_words());
    for (size_t t = 0; t < v.size(); ++t) {
        if (m.accept_token(static_cast<TokenId>(t))) {
            mask[t >> 5] |= 1u << (t & 31);
            m.rollback(1);
        }
    }
    return mask;
}

bool allowed(const std::vector<uint32_t>& mask, TokenId t) {
    return mask[t >> 5] >> (t & 31) & 1;
}

}  // namespace

TEST(GrammarMatcher, MaskEqualsTokenByTokenCheckAlongRandomWalks) {
    auto words = synthetic_vocab(3000, 7);
    TokenId eos = static_cast<TokenId>(words.size() - 1);
    auto vocab = std::make_shared<const Vocabulary>(words, std::vector<TokenId>{eos});
    auto g = compile_json_schema_text(kToolSchema);
    std::mt19937_64 rng(11);
    int steps = 0, eos_seen = 0;
    for (int walk = 0; walk < 6; ++walk) {
        Matcher m(g, vocab);
        std::vector<uint32_t> mask(vocab->mask_words());
        while (!m.is_terminated() && steps < 400) {
            m.fill_mask(mask);
            auto expect = brute_force(m, *vocab);
            ASSERT_EQ(mask, expect) << "step " << steps;
            std::vector<uint32_t> again(vocab->mask_words());
            m.fill_mask(again);  // the cached mask
            ASSERT_EQ(again, mask);
            EXPECT_EQ(allowed(mask, eos), m.is_accepting());
            EXPECT_FALSE(allowed(mask, eos - 1));  // the empty token
            std::vector<TokenId> ok;
            for (size_t t = 0; t < vocab->size(); ++t)
                if (allowed(mask, static_cast<TokenId>(t))) ok.push_back(static_cast<TokenId>(t));
            ASSERT_FALSE(ok.empty());
            TokenId pick = ok[rng() % ok.size()];
            if (m.steps() > 60 && m.is_accepting()) pick = eos;
            // A token outside the mask is refused and changes nothing.
            for (size_t t = 0; t < vocab->size(); ++t)
                if (!allowed(mask, static_cast<TokenId>(t))) {
                    EXPECT_FALSE(m.accept_token(static_cast<TokenId>(t)));
                    break;
                }
            ASSERT_TRUE(m.accept_token(pick));
            eos_seen += pick == eos;
            ++steps;
        }
    }
    EXPECT_GT(steps, 50);
}

TEST(GrammarMatcher, RollbackRestoresStateAndMask) {
    auto words = synthetic_vocab(500, 3);
    auto vocab = std::make_shared<const Vocabulary>(words, std::vector<TokenId>{});
    Matcher m(compile_json_schema_text(kToolSchema), vocab);
    ASSERT_TRUE(m.accept_bytes("{\"city\":\"Par"));
    std::vector<uint32_t> before(vocab->mask_words()), after(vocab->mask_words());
    m.fill_mask(before);
    StateId s = m.state();
    ASSERT_TRUE(m.accept_bytes("is\",\"unit\":\"cel"));
    ASSERT_TRUE(m.accept_bytes("sius\""));
    EXPECT_FALSE(m.accept_bytes("x"));
    m.rollback(2);
    EXPECT_EQ(m.state(), s);
    m.fill_mask(after);
    EXPECT_EQ(before, after);
    ASSERT_TRUE(m.accept_bytes("is\",\"unit\":\"fahrenheit\"}"));
    EXPECT_TRUE(m.is_accepting());
}

TEST(GrammarMatcher, RealTokenizerMaskMatchesBruteForce) {
    auto tok = myriad::Tokenizer::load(std::string(MYRIAD_TOKENIZER_DIR) + "/o200k_base");
    auto vocab = Vocabulary::from_tokenizer(*tok);
    ASSERT_GT(vocab->size(), 199000u);
    auto g = compile_json_schema_text(kToolSchema);
    for (const char* prefix :
         {"", "{\"ci", "{\"city\":\"Lyon", "{\"city\":\"Lyon\",\"unit\":\"celsius\"",
          "{\"city\":\"Lyon\",\"unit\":\"celsius\",\"days\":1"}) {
        Matcher m(g, vocab);
        ASSERT_TRUE(m.accept_bytes(prefix)) << prefix;
        std::vector<uint32_t> mask(vocab->mask_words());
        m.fill_mask(mask);
        EXPECT_EQ(mask, brute_force(m, *vocab)) << prefix;
        size_t n = 0;
        for (uint32_t w : mask) n += __builtin_popcount(w);
        EXPECT_GT(n, 0u) << prefix;
    }
}
