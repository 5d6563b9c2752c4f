// The tokenizer's parts on their own: UTF-8 replacement and stream splitting, the regex dialect
// translation (Rust/Oniguruma -> PCRE2), BPE merge order, and the loaders' errors, which must
// name the file and the field or line.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/tiktoken_tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, InvalidBytesBecomeOneReplacementPerMaximalSubpart) {
    // The same results as Python's bytes.decode("utf-8", "replace").
    EXPECT_EQ(utf8::replace_invalid("abc\xff"), "abc" + kFffd);
    EXPECT_EQ(utf8::replace_invalid("\xf0\x9f\x98 ok"), kFffd + " ok");       // truncated: one
    EXPECT_EQ(utf8::replace_invalid("\xed\xa0\x80"), kFffd + kFffd + kFffd);  // a surrogate
    EXPECT_EQ(utf8::replace_invalid("\xc0\xaf"), kFffd + kFffd);              // overlong
    EXPECT_EQ(utf8::replace_invalid("\xf4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
    EXPECT_EQ(utf8::replace_invalid("\xe4\xbd\xa0\xe5"), "\xe4\xbd\xa0" + kFffd);
    EXPECT_TRUE(utf8::is_valid("plain ascii and 中文 and 👍🏽"));
    EXPECT_FALSE(utf8::is_valid("12345678\x80"));
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedCharacter) {
    const std::string euro = "\xe2\x82\xac", thumbs = "\xf0\x9f\x91\x8d";
    EXPECT_EQ(utf8::complete_prefix("ab\xe2"), 2u);
    EXPECT_EQ(utf8::complete_prefix("ab\xe2\x82"), 2u);
    EXPECT_EQ(utf8::complete_prefix("ab" + euro), 5u);
    EXPECT_EQ(utf8::complete_prefix(thumbs.substr(0, 3)), 0u);
    EXPECT_EQ(utf8::complete_prefix(thumbs), 4u);
    // Bytes that can never finish a character are not held back.
    EXPECT_EQ(utf8::complete_prefix("a\x80"), 2u);
    EXPECT_EQ(utf8::complete_prefix("a\xe0\x80"), 3u);
}

TEST(RegexDialect, ScriptsMeanTheirScriptAndWhiteSpaceIsUnicodes) {
    EXPECT_EQ(translate_pattern(R"([\p{Han}]+)", "t"), R"([\p{sc:Han}]+)");
    EXPECT_EQ(translate_pattern(R"(\p{L}\p{Lu}\p{N}\P{Greek})", "t"),
              R"(\p{L}\p{Lu}\p{N}\P{sc:Greek})");
    // "。" is Common with Han only in its Script_Extensions: not Han for Rust and Oniguruma.
    Regex han(R"([\p{Han}]+)", "t");
    std::vector<std::string> pieces;
    const std::string text = "你好。世界";
    han.for_each_match(text, [&](size_t b, size_t e) { pieces.push_back(text.substr(b, e - b)); });
    EXPECT_EQ(pieces, (std::vector<std::string>{"你好", "世界"}));
    // U+180E is no White_Space (PCRE2's own \s would take it).
    Regex space(R"(\s+)", "t");
    int n = 0;
    space.for_each_match("a\u180eb\u3000c\u0085", [&](size_t, size_t) { ++n; });
    EXPECT_EQ(n, 2);
}

// A run of letters without a space is one piece however long: PCRE2's JIT stack (1 MiB at
// first) grows instead of refusing it ("JIT stack limit reached" at about 131,000 letters).
TEST(RegexDialect, LongRunsOfLettersAreOnePiece) {
    // Kimi's word alternatives: the greedy letter classes with their optional suffix.
    Regex word(
        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\s+)",
        "t");
    for (size_t n : {size_t{131'000}, size_t{1'000'000}}) {
        const std::string text = " " + std::string(n, 'a') + " b";
        std::vector<std::pair<size_t, size_t>> pieces;
        word.for_each_match(text, [&](size_t b, size_t e) { pieces.emplace_back(b, e); });
        ASSERT_EQ(pieces.size(), 2u) << n;
        EXPECT_EQ(pieces[0], std::make_pair(size_t{0}, n + 1));
        EXPECT_EQ(pieces[1], std::make_pair(n + 1, n + 3));
    }
}

// A chain of Replace normalizers that multiplies the text is refused before it takes the
// machine's memory (it reached 4.96 GB), and the message names the field, not the file.
TEST(Normalizer, GrowthIsBounded) {
    nlohmann::ordered_json ten_as = {
        {"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", std::string(10, 'a')}};
    nlohmann::ordered_json chain = {{"type", "Sequence"},
                                    {"normalizers", nlohmann::ordered_json::array()}};
    for (int i = 0; i < 12; ++i) chain["normalizers"].push_back(ten_as);
    auto n = make_normalizer(chain, "/srv/models/secret/tokenizer.json", "normalizer");
    std::string text(1000, 'a');
    try {
        n->normalize(text);
        FAIL() << "grew to " << text.size() << " bytes";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(msg.find("tokenizer.json field normalizer.normalizers[1]: normalizing grows the "
                           "text past 97536 bytes"),
                  std::string::npos)
            << msg;
        EXPECT_EQ(msg.find("/srv/models"), std::string::npos) << msg;
    }
    // Growth within the bound normalizes.
    chain["normalizers"] = {ten_as, ten_as};
    std::string small = "ab";
    make_normalizer(chain, "tokenizer.json", "normalizer")->normalize(small);
    EXPECT_EQ(small, std::string(100, 'a') + "b");
}

TEST(RegexDialect, ClassIntersectionBecomesALookAhead) {
    EXPECT_EQ(translate_pattern(R"([\p{Lu}\p{Lo}&&[^\p{Han}]]+)", "t"),
              R"((?:(?=[^\p{sc:Han}])[\p{Lu}\p{Lo}])+)");
    // Kimi's pattern: Han runs are their own pieces, other letters keep their words.
    Regex kimi(kKimiPattern, "t");
    const std::string text = "中文English混合Ελληνικά漢字 I'M";
    std::vector<std::string> pieces;
    kimi.for_each_match(text, [&](size_t b, size_t e) { pieces.push_back(text.substr(b, e - b)); });
    EXPECT_EQ(pieces,
              (std::vector<std::string>{"中文", "English", "混合", "Ελληνικά", "漢字", " I'M"}));
    EXPECT_THROW(Regex("[abc", "pat.json"), Error);
}

// A naive BPE: merge the lowest-ranked adjacent pair, leftmost on ties, until none is left.
std::vector<TokenId> naive_bpe(const std::string& piece, const TokenTable& vocab) {
    std::vector<std::string> parts;
    for (char c : piece) parts.emplace_back(1, c);
    for (;;) {
        int best = -1, best_rank = INT32_MAX;
        for (size_t i = 0; i + 1 < parts.size(); ++i) {
            int r = vocab.find(parts[i] + parts[i + 1]);
            if (r >= 0 && r < best_rank) best = static_cast<int>(i), best_rank = r;
        }
        if (best < 0) break;
        parts[best] += parts[best + 1];
        parts.erase(parts.begin() + best + 1);
    }
    std::vector<TokenId> ids;
    for (const auto& p : parts) ids.push_back(vocab.find(p));
    return ids;
}

TEST(Bpe, ShortAndLongPiecesMergeInRankOrderLeftmostFirst) {
    // tiktoken-style ranks over {a, b, c}: single bytes, then some pairs and longer tokens.
    BpeOptions o;
    o.ranks_from_vocab = true;
    Bpe bpe(o);
    TokenTable vocab;
    std::vector<std::string> tokens = {"a",   "b",   "c",   "ab",   "ba",   "aa", "bc", "abc",
                                       "aab", "cab", "bab", "aaaa", "abab", "cc", "ccc"};
    for (size_t k = 0; k < tokens.size(); ++k) {
        bpe.add_token(tokens[k], static_cast<TokenId>(k));
        vocab.insert(tokens[k], static_cast<TokenId>(k));
    }
    std::mt19937 rng(7);
    for (int trial = 0; trial < 400; ++trial) {
        // Lengths on both sides of the switch from scanning to a heap.
        std::string piece;
        size_t len = 1 + rng() % (trial < 200 ? 40 : 300);
        for (size_t i = 0; i < len; ++i) piece += "abc"[rng() % 3];
        std::vector<TokenId> got;
        bpe.encode(piece, got);
        std::vector<TokenId> want = vocab.find(piece) >= 0 ? std::vector<TokenId>{vocab.find(piece)}
                                                           : naive_bpe(piece, vocab);
        ASSERT_EQ(got, want) << piece;
    }
    std::vector<TokenId> ids;
    bpe.encode("aaa", ids);  // "aa" at the left wins the tie
    EXPECT_EQ(ids, (std::vector<TokenId>{5, 0}));
}

std::string hf_json(const std::string& model_extra, const std::string& rest = "") {
    return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2})" + model_extra + "}" +
           rest + "}";
}

TEST(TokenizerJson, ErrorsNameTheFileAndTheField) {
    auto message = [](const std::string& json) {
        try {
            HfTokenizer t(json, {}, "tok/tokenizer.json");
        } catch (const Error& e) {
            EXPECT_EQ(e.exit_status(), 2);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message(hf_json(R"(, "merges": ["a b"])")), "no error");
    EXPECT_EQ(message(hf_json(R"(, "merges": [["a", "b"]])")), "no error");
    EXPECT_NE(message(hf_json(R"(, "merges": ["a c"])"))
                  .find("tok/tokenizer.json: field "
                        "model.merges[0]: token \"c\""),
              std::string::npos);
    EXPECT_NE(message(hf_json(R"(, "merges": ["ab"])")).find("model.merges[0]"), std::string::npos);
    EXPECT_NE(message(hf_json("", R"(, "pre_tokenizer": {"type": "Whitespacey"})"))
                  .find("field pre_tokenizer.type is \"Whitespacey\": not supported"),
              std::string::npos);
    EXPECT_NE(message(hf_json("", R"(, "pre_tokenizer": {"type": "Split", "pattern": )"
                                  R"({"Regex": "(a"}, "behavior": "Isolated"})"))
                  .find("tok/tokenizer.json: field pre_tokenizer.pattern.Regex: regex (a: missing "
                        "closing parenthesis"),
              std::string::npos);
    EXPECT_NE(message(R"({"model": {"type": "WordPiece", "vocab": {}}})").find("model.type"),
              std::string::npos);
    EXPECT_NE(message("{\"model\": ").find("not valid JSON"), std::string::npos);
}

TEST(Tiktoken, ErrorsNameTheFileAndTheLine) {
    auto message = [](const std::string& model) {
        try {
            TiktokenTokenizer t(model, {}, "m/tiktoken.model", "m/tokenizer_config.json");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message("YQ== 0\nYg== 1\nYWI= 2\n"), "no error");
    EXPECT_EQ(message("YQ== 0\nnot base64! 1\n"),
              "m/tiktoken.model: line 2: expected \"<base64 token> <rank>\"");
    EXPECT_EQ(message("YQ== 0\nY@== 1\n"),
              "m/tiktoken.model: line 2: the token is not valid base64");
    EXPECT_EQ(message("YQ== 0\nYg== x\n"),
              "m/tiktoken.model: line 2: rank \"x\" is not an integer in [0, 1048578]");
    EXPECT_EQ(message("YQ== 0\nYQ== 1\n"),
              "m/tiktoken.model: line 2: token bytes already have rank 0");
    EXPECT_EQ(message(""), "m/tiktoken.model: holds no tokens");
}

TEST(Tiktoken, UnnamedIdsOfTheSpecialRangeAreReservedTokens) {
    TokenizerConfig config;
    AddedToken bos;
    bos.id = 3;
    bos.content = "[BOS]";
    bos.special = true;
    config.added_tokens_decoder.push_back(bos);
    config.bos_token = "[BOS]";
    TiktokenTokenizer t("YQ== 0\nYg== 1\nYWI= 2\n", config, "m", "c");
    EXPECT_EQ(t.vocab_size(), 3 + 256);
    EXPECT_EQ(t.token_to_id("<|reserved_token_4|>"), 4);
    EXPECT_EQ(t.id_to_token(258), "<|reserved_token_258|>");
    EXPECT_TRUE(t.is_special(3));
    EXPECT_EQ(t.bos_id(), 3);
    EXPECT_EQ(t.encode("ab[BOS]<|reserved_token_7|>b"), (std::vector<TokenId>{2, 3, 7, 1}));
    EXPECT_EQ(t.decode({2, 3, 7, 1}, /*skip_special_tokens=*/true), "abb");
    // Kimi's pattern applies: no pat_str was given.
    EXPECT_NE(t.pattern().find("(?=[^\\p{sc:Han}])"), std::string::npos);
}

}  // namespace
}  // namespace myriad::testing
