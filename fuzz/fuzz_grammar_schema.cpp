// libFuzzer target: the JSON Schema compiler (src/grammar). Any bytes as a schema either
// compile or fail with a BadInput error; a compiled grammar is then walked for a few steps, and
// every token its mask allows must be accepted by the matcher (and every other refused).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "util/error.h"

using namespace myriad::grammar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::shared_ptr<const Grammar> g;
    try {
        g = compile_json_schema_text(text);
    } catch (const myriad::Error& e) {
        if (e.kind() != myriad::ErrorKind::BadInput) __builtin_trap();
        return 0;
    }
    static const auto vocab = std::make_shared<const Vocabulary>(
        std::vector<std::string>{"{",     "}",        "\"",    "\":", ",", "[",    "]",    "a",
                                 "0",     "1",        "-",     ".",   "e", "true", "null", "\\",
                                 "\\u00", "\xc3\xa9", "\":\"", "\"}", "",  "<eos>"},
        std::vector<TokenId>{21});
    try {
        Matcher m(g, vocab);
        std::vector<uint32_t> mask(vocab->mask_words());
        for (size_t step = 0; step < 48 && !m.is_terminated(); ++step) {
            m.fill_mask(mask);
            std::vector<TokenId> ok;
            for (size_t t = 0; t < vocab->size(); ++t) {
                bool allowed = mask[t >> 5] >> (t & 31) & 1;
                bool accepted = m.accept_token(static_cast<TokenId>(t));
                if (accepted) m.rollback(1);
                if (allowed != accepted) __builtin_trap();
                if (allowed) ok.push_back(static_cast<TokenId>(t));
            }
            ByteSet next = m.next_bytes();
            if (ok.empty() && next.none() && !m.is_accepting()) __builtin_trap();  // a dead end
            if (ok.empty()) break;
            m.accept_token(ok[(data[step % size] + step) % ok.size()]);
        }
    } catch (const myriad::Error& e) {
        // A grammar too large to walk is refused as bad input, never a crash.
        if (e.kind() != myriad::ErrorKind::BadInput) __builtin_trap();
    }
    return 0;
}
