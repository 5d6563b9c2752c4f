// libFuzzer target: a tokenizer.json from untrusted bytes must load or be rejected as bad input;
// a tokenizer that loads must encode and decode any text (its own bytes, invalid UTF-8
// included) and stream it through the incremental detokenizer without a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/incremental_detokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view json(reinterpret_cast<const char*>(data), size);
    try {
        myriad::HfTokenizer t(json, {}, "fuzz/tokenizer.json");
        for (std::string_view text :
             {json.substr(0, 300), std::string_view("Hello <s> wörld 12345 \xf0\x9f\x91")}) {
            std::vector<myriad::TokenId> ids = t.encode(text, /*add_special_tokens=*/true);
            std::string decoded = t.decode(ids, /*skip_special_tokens=*/false);
            myriad::IncrementalDetokenizer d(t, /*skip_special_tokens=*/true);
            for (myriad::TokenId id : ids) (void)d.push(id);
            (void)d.finish();
        }
        for (myriad::TokenId id = 0; id < 16 && id < t.vocab_size(); ++id) {
            (void)t.token_bytes(id);
            (void)t.id_to_token(id);
        }
    } catch (const myriad::Error& e) {
        if (e.kind() != myriad::ErrorKind::BadInput) __builtin_trap();
    }
    return 0;
}
