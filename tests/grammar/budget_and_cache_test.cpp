// Masks under a byte budget against their definition (token t is allowed exactly when the
// matcher takes it and the document can still be completed within the budget, per
// min_bytes_to_accept), greedy walks that always finish in time, the grammar cache (LRU by count
// and bytes, shared hits), and special tokens spelled so only a grammar naming them admits them.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>

#include "grammar/grammar_cache.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

using namespace myriad::grammar;

namespace {

const char* kSchema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":40},
  "kind":{"enum":["a","a very long enumerated value that costs many bytes"]},
  "items":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":6}},
  "required":["name","kind","items"],"additionalProperties":false})";

std::shared_ptr<const Vocabulary> vocab() {
    std::vector<std::string> v;
    for (int b = 32; b < 127; ++b) v.push_back(std::string(1, static_cast<char>(b)));
    for (const char* w : {"{\"", "\":", "\",\"", "\":\"", "name", "kind", "items", "a very",
                          " long", "[1,", "2]", "\"}", "],\"", "zzzzzzzz", "12345"})
        v.push_back(w);
    v.push_back("<eos>");
    return std::make_shared<const Vocabulary>(v, std::vector<TokenId>{TokenId(v.size() - 1)});
}

std::vector<uint32_t> by_definition(Matcher& m, const Vocabulary& v, uint64_t budget) {
    std::vector<uint32_t> mask(v.mask_words());
    for (size_t t = 0; t < v.size(); ++t) {
        if (!m.accept_token(static_cast<TokenId>(t))) continue;
        if (v.is_eos(static_cast<TokenId>(t)) || m.min_bytes_to_accept() <= budget)
            mask[t >> 5] |= 1u << (t & 31);
        m.rollback(1);
    }
    return mask;
}

// The distinct bytes the allowed tokens (the end token aside) leave to complete the document.
std::vector<uint64_t> needs_after(Matcher& m, const Vocabulary& v) {
    std::set<uint64_t> needs;
    for (size_t t = 0; t < v.size(); ++t) {
        if (v.is_eos(static_cast<TokenId>(t)) || !m.accept_token(static_cast<TokenId>(t))) continue;
        needs.insert(m.min_bytes_to_accept());
        m.rollback(1);
    }
    return {needs.begin(), needs.end()};
}

}  // namespace

TEST(GrammarBudget, MaskUnderABudgetMatchesItsDefinition) {
    auto v = vocab();
    auto g = compile_json_schema_text(kSchema);
    int restricted = 0;
    // (state, budget) of the first pass's masks under a budget below some token's need, and
    // (state, the largest need within the budget): one cached mask for each of the latter.
    std::set<std::pair<StateId, uint64_t>> by_budget, by_need;
    // The second pass repeats the first's walks: its budget masks come from the grammar's cache
    // (per state and the largest need within the budget: budgets between two needs share one),
    // and must still be the definition's.
    for (int pass = 0; pass < 2; ++pass) {
        SCOPED_TRACE(pass == 0 ? "walked" : "from the cache");
        std::mt19937_64 rng(3);
        for (int walk = 0; walk < 20; ++walk) {
            Matcher m(g, v);
            std::vector<uint32_t> mask(v->mask_words());
            for (int step = 0; step < 60 && !m.is_terminated(); ++step) {
                const uint64_t budget = rng() % 80;
                m.fill_mask(mask, budget);
                const std::vector<uint64_t> needs = needs_after(m, *v);
                if (pass == 0 && !needs.empty() && needs.back() > budget) {
                    by_budget.insert({m.state(), budget});
                    auto at = std::upper_bound(needs.begin(), needs.end(), budget);
                    by_need.insert({m.state(), at == needs.begin() ? 0 : *(at - 1)});
                }
                std::vector<uint32_t> want = by_definition(m, *v, budget);
                bool any = false;
                for (uint32_t w : want) any = any || w != 0;
                if (!any) {  // nothing fits: the plain mask
                    want = by_definition(m, *v, Matcher::kNoBudget);
                } else {
                    std::vector<uint32_t> plain(v->mask_words());
                    m.fill_mask(plain);
                    if (plain != want) ++restricted;
                }
                ASSERT_EQ(mask, want)
                    << "walk " << walk << " step " << step << " budget " << budget;
                std::vector<TokenId> allowed;
                for (size_t t = 0; t < v->size(); ++t)
                    if (mask[t >> 5] >> (t & 31) & 1) allowed.push_back(TokenId(t));
                ASSERT_FALSE(allowed.empty());
                ASSERT_TRUE(m.accept_token(allowed[rng() % allowed.size()]));
            }
        }
        if (pass == 0) {
            EXPECT_GT(g->budget_masks_cached(), 0u);
            // One mask per (state, need), fewer than (state, budget): budgets share them.
            EXPECT_EQ(g->budget_masks_cached(), by_need.size());
            EXPECT_LT(by_need.size(), by_budget.size());
        }
    }
    EXPECT_GT(restricted, 40);  // the budget really cut masks (20 and more a pass)
}

// A walk that always takes the longest allowed token (the worst case for finishing), given
// `tokens` tokens with the budget of the tokens left after each, ends in a complete document.
TEST(GrammarBudget, AWalkWithinItsBudgetAlwaysFinishes) {
    auto v = vocab();
    auto g = compile_json_schema_text(kSchema);
    const uint64_t shortest = Matcher(g, v).min_bytes_to_accept();
    for (int64_t tokens : {int64_t(shortest), int64_t(shortest) + 5, int64_t(120)}) {
        Matcher m(g, v);
        std::vector<uint32_t> mask(v->mask_words());
        int64_t used = 0;
        for (; used < tokens && !m.is_terminated(); ++used) {
            m.fill_mask(mask, static_cast<uint64_t>(tokens - used - 1));
            TokenId best = -1;
            for (size_t t = 0; t < v->size(); ++t)
                if ((mask[t >> 5] >> (t & 31) & 1) && !v->is_eos(TokenId(t)) &&
                    (best < 0 || v->bytes(TokenId(t)).size() >= v->bytes(best).size()))
                    best = TokenId(t);
            if (best < 0) break;  // only the end token
            ASSERT_TRUE(m.accept_token(best));
            if (m.is_accepting() && m.next_bytes().none()) {
                ++used;
                break;
            }
        }
        EXPECT_TRUE(m.is_accepting()) << tokens << " tokens";
        EXPECT_LE(used, tokens);
    }
}

TEST(GrammarCache, LeastRecentlyUsedOutByCountAndBytes) {
    GrammarCache cache(3, size_t{1} << 30);
    int made = 0;
    auto get = [&](const std::string& schema) {
        return cache.get(schema, [&] {
            ++made;
            return compile_json_schema_text(schema);
        });
    };
    auto a = get(R"({"type":"integer"})");
    get(R"({"type":"string"})");
    get(R"({"type":"boolean"})");
    EXPECT_EQ(get(R"({"type":"integer"})"), a);  // a hit: a is now the most recent
    EXPECT_EQ(made, 3);
    get(R"({"type":"null"})");  // evicts the string schema, the least recently used
    EXPECT_EQ(cache.size(), 3u);
    get(R"({"type":"integer"})");
    EXPECT_EQ(made, 4);
    get(R"({"type":"string"})");
    EXPECT_EQ(made, 5);
    EXPECT_EQ(cache.hits(), 2u);

    GrammarCache small(100, 1);  // every entry is over the bytes: only the newest stays
    small.get("x", [] { return compile_json_schema_text(R"({"type":"integer"})"); });
    small.get("y", [] { return compile_json_schema_text(R"({"type":"string"})"); });
    EXPECT_EQ(small.size(), 1u);
}

TEST(GrammarCache, TheSameSchemaCompilesOnce) {
    const std::string schema = R"({"type":"object","properties":{"q":{"type":"string"}}})";
    auto first = compile_json_schema_text(schema);
    EXPECT_EQ(compile_json_schema_text(schema), first);
    // The canonical text is the key: other spacing, the same grammar.
    EXPECT_EQ(compile_json_schema_text(R"({ "type": "object",
        "properties": { "q": { "type": "string" } } })"),
              first);
}

TEST(GrammarVocabulary, SpecialTokensOnlyWhereTheGrammarSpellsThem) {
    auto tok = myriad::Tokenizer::load(std::string(MYRIAD_TOKENIZER_DIR) + "/deepseek_v3");
    const auto section = tok->encode("<｜tool▁calls▁begin｜>", false);
    ASSERT_EQ(section.size(), 1u);
    // An added token, not a special one: as text, unless the caller names it a marker.
    ASSERT_FALSE(tok->is_special(section[0]));
    EXPECT_EQ(Vocabulary::from_tokenizer(*tok)->bytes(section[0]), "<｜tool▁calls▁begin｜>");
    auto v = Vocabulary::from_tokenizer(*tok, {}, {section[0]});
    EXPECT_EQ(v->bytes(section[0]), Vocabulary::special_token_bytes(section[0]));
    // A JSON document never admits it; a grammar holding its spelling admits it there only.
    std::vector<uint32_t> mask(v->mask_words());
    Matcher json(any_json_grammar(false), v);
    json.fill_mask(mask);
    EXPECT_FALSE(mask[section[0] >> 5] >> (section[0] & 31) & 1);
    GrammarBuilder b;
    RuleId r = b.new_rule();
    std::vector<Element> seq = b.literal("x" + Vocabulary::special_token_bytes(section[0]));
    b.add_alt(r, std::move(seq));
    auto g = std::make_shared<const Grammar>(std::move(b), r, "test");
    Matcher m(g, v);
    ASSERT_TRUE(m.accept_bytes("x"));
    m.fill_mask(mask);
    size_t n = 0;
    for (uint32_t w : mask) n += __builtin_popcount(w);
    EXPECT_EQ(n, 1u);
    EXPECT_TRUE(mask[section[0] >> 5] >> (section[0] & 31) & 1);
}
