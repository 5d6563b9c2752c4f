// libFuzzer target: tiktoken.model (+ tokenizer_config.json after a line holding only "%%")
// from untrusted bytes must load or be rejected as bad input; a tokenizer that loads must
// encode and decode any text (its own bytes, invalid UTF-8 included) without a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "format/json_file.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tiktoken_tokenizer.h"
#include "tokenizer/tokenizer_config.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    std::string_view model = input, config_text;
    if (size_t sep = input.find("\n%%\n"); sep != std::string_view::npos) {
        model = input.substr(0, sep + 1);
        config_text = input.substr(sep + 4);
    }
    try {
        myriad::TokenizerConfig config;
        if (!config_text.empty())
            config = myriad::parse_tokenizer_config(
                myriad::parse_json(config_text, "fuzz/tokenizer_config.json"),
                "fuzz/tokenizer_config.json");
        myriad::TiktokenTokenizer t(model, config, "fuzz/tiktoken.model",
                                    "fuzz/tokenizer_config.json");
        for (std::string_view text :
             {input.substr(0, 300), std::string_view("Hi [BOS] 中文 12345 \xe4\xbd")}) {
            std::vector<myriad::TokenId> ids = t.encode(text, /*add_special_tokens=*/true);
            (void)t.decode(ids, /*skip_special_tokens=*/true);
            myriad::IncrementalDetokenizer d(t, /*skip_special_tokens=*/false);
            for (myriad::TokenId id : ids) (void)d.push(id);
            (void)d.finish();
        }
    } catch (const myriad::Error& e) {
        if (e.kind() != myriad::ErrorKind::BadInput) __builtin_trap();
    }
    return 0;
}
