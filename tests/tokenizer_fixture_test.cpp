// Every tokenizer fixture (tests/data/tokenizers, unpacked by CMake) and the shipped model:
// ids known from the oracles (HF tokenizers, tiktoken), the streaming detokenizer holding back
// characters split across tokens, special tokens kept or skipped, invalid UTF-8, threads.
// The full oracle comparison is tests/python/test_tokenizer_oracle.py.
#include <gtest/gtest.h>

#include <thread>

#include "tokenizer/byte_level.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

struct Fixture {
    const char* name;
    std::string dir;
    std::vector<TokenId> hello_ids;  // of kHello, from the oracle
};

const char* kHello = "Hello world! 你好，世界。 <|im_end|> 12345";

std::vector<Fixture> fixtures() {
    const std::string d = std::string(MYRIAD_TOKENIZER_DIR) + "/";
    return {
        {"deepseek_v3",
         d + "deepseek_v3",
         {19923, 2058, 3, 223, 30594, 303, 3427, 320, 818, 94, 328, 42616, 94, 32, 223, 6895,
          1883}},
        {"qwen3",
         d + "qwen3",
         {9707, 1879, 0, 220, 108386, 3837, 99489, 1773, 220, 151645, 220, 16, 17, 18, 19, 20}},
        {"llama3",
         d + "llama3",
         {9906, 1917, 0, 118195, 53901, 3922, 102616, 1811, 83739, 318, 6345, 91, 29, 220, 4513,
          1774}},
        {"o200k_base",
         d + "o200k_base",
         {13225, 2375, 0, 220, 177519, 979, 28428, 788, 464, 91, 321, 13707, 91, 29, 220, 7633,
          2548}},
        {"cl100k_base",
         d + "cl100k_base",
         {9906, 1917, 0, 220, 57668, 53901, 3922, 3574, 244, 98220, 1811, 83739, 318, 6345, 91, 29,
          220, 4513, 1774}},
        {"myriad-tiny",
         std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny",
         {2313, 1362, 290, 2748, 33,  32,  228, 189, 160, 229,  165, 189, 239, 188, 140, 228,
          184,  150,  231, 149,  140, 227, 128, 130, 32,  3842, 32,  49,  50,  51,  52,  53}},
    };
}

const Tokenizer& load(const Fixture& f) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    auto& t = cache[f.name];
    if (!t) t = Tokenizer::load(f.dir);
    return *t;
}

const std::vector<std::string> kTexts = {
    "Emoji 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🫠 𠀀𠀁 and CJK "
    "中文测试：你好，世界！日本語のテキスト。한국어",
    "Ünïcödé àçcénts, Ελληνικά, Русский, العربية, עברית, हिन्दी, ภาษาไทย",
    "def f(x):\n\treturn {\"a\": [1, 2, 3]}\r\n\r\n    ",
};

TEST(TokenizerFixtures, IdsMatchTheOracle) {
    for (const Fixture& f : fixtures()) {
        const Tokenizer& t = load(f);
        EXPECT_EQ(t.encode(kHello), f.hello_ids) << f.name;
        EXPECT_EQ(t.decode(f.hello_ids), kHello) << f.name;
    }
}

TEST(TokenizerFixtures, IncrementalDetokenizerEmitsOnlyCompleteCharacters) {
    for (const Fixture& f : fixtures()) {
        const Tokenizer& t = load(f);
        for (const std::string& text : kTexts) {
            std::vector<TokenId> ids = t.encode(text);
            IncrementalDetokenizer d(t, false);
            std::string joined;
            for (TokenId id : ids) {
                std::string delta = d.push(id);
                EXPECT_TRUE(utf8::is_valid(delta)) << f.name;
                joined += delta;
            }
            joined += d.finish();
            EXPECT_EQ(joined, t.decode(ids)) << f.name;
            EXPECT_EQ(joined, text) << f.name;
        }
        // One byte per token: "€" (3 bytes) and "👍" (4) arrive whole, after their last byte.
        IncrementalDetokenizer d(t, false);
        auto byte_id = [&](unsigned char b) {
            auto id = t.token_to_id(byte_level::char_of(b));
            EXPECT_TRUE(id.has_value()) << f.name << " byte " << int(b);
            return id.value_or(0);
        };
        std::vector<std::string> deltas;
        for (unsigned char b : std::string("\xe2\x82\xac\xf0\x9f\x91\x8dx"))
            deltas.push_back(d.push(byte_id(b)));
        EXPECT_EQ(deltas, (std::vector<std::string>{"", "", "\xe2\x82\xac", "", "", "",
                                                    "\xf0\x9f\x91\x8d", "x"}))
            << f.name;
        // A character that never completes comes out as U+FFFD, as decode() has it.
        EXPECT_EQ(d.push(byte_id(0xe4)), "");
        EXPECT_EQ(d.finish(), "\xEF\xBF\xBD");
    }
}

TEST(TokenizerFixtures, SkippedSpecialTokensExceptTheOnesParsersNeed) {
    // myriad-tiny (Kimi's layout): <think>, </think> and tool-call markers are special tokens.
    const Fixture f = fixtures().back();
    const Tokenizer& t = load(f);
    const std::string text =
        "<|im_assistant|>assistant<|im_middle|><think>hm</think>ok"
        "<|tool_calls_section_begin|><|im_end|>";
    std::vector<TokenId> ids = t.encode(text);
    auto stream = [&](bool skip, std::vector<TokenId> keep) {
        IncrementalDetokenizer d(t, skip, std::move(keep));
        std::string out;
        for (TokenId id : ids) out += d.push(id);
        return out + d.finish();
    };
    EXPECT_EQ(stream(false, {}), text);
    EXPECT_EQ(stream(true, {}), "assistanthmok");
    EXPECT_EQ(stream(true, parser_special_tokens(t)),
              "assistant<think>hm</think>ok<|tool_calls_section_begin|>");
    EXPECT_EQ(t.decode(ids, /*skip_special_tokens=*/true), "assistanthmok");
    // The bos/eos of tokenizer_config.json.
    EXPECT_EQ(t.bos_id(), 3840);
    EXPECT_EQ(t.eos_id(), 3841);
    EXPECT_EQ(t.vocab_size(), 4096);
}

TEST(TokenizerFixtures, InvalidUtf8IsReplacedBeforeTokenizing) {
    for (const Fixture& f : fixtures()) {
        const Tokenizer& t = load(f);
        EXPECT_EQ(t.encode("ab\xff\xe4\xbd"), t.encode("ab\xEF\xBF\xBD\xEF\xBF\xBD")) << f.name;
        EXPECT_EQ(t.decode(t.encode("x\xc0\xafy")), "x\xEF\xBF\xBD\xEF\xBF\xBDy") << f.name;
    }
}

TEST(TokenizerFixtures, EncodeFromSeveralThreadsGivesTheSameIds) {
    const Tokenizer& t = load(fixtures()[1]);
    std::string text;
    for (int i = 0; i < 50; ++i) text += kTexts[i % kTexts.size()];
    const std::vector<TokenId> want = t.encode(text);
    std::vector<std::vector<TokenId>> got(4);
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&, k] {
            for (int r = 0; r < 5; ++r) got[k] = t.encode(text);
        });
    for (auto& th : threads) th.join();
    for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(TokenizerFixtures, AFolderWithoutTokenizerFilesIsBadInput) {
    try {
        Tokenizer::load(std::string(MYRIAD_SOURCE_DIR) + "/tests");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), 2);
        EXPECT_NE(std::string(e.what()).find("no tokenizer.json or tiktoken.model"),
                  std::string::npos);
    }
}

}  // namespace
}  // namespace myriad::testing
