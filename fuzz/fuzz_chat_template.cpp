// libFuzzer target: the chat template parser and renderer. The input is a template, optionally
// followed by a NUL byte and a request JSON (else a fixed chat with tools is rendered). Any
// input must end in a rendering or in a bad-input Error (syntax, runtime, limits); another
// exception, a crash, a leak or a sanitizer report is a bug. Limits are tight so runaway
// templates end fast.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace {

const char* const kRequest = R"({
  "messages": [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "héllo {{ x }} 😀", "name": "u"},
    {"role": "assistant", "content": null, "reasoning_content": "r",
     "tool_calls": [{"id": "functions.f:0", "type": "function",
                     "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
    {"role": "tool", "tool_call_id": "functions.f:0", "content": ""},
    {"role": "user", "content": [{"type": "text", "text": "t"}, {"type": "image"}]}
  ],
  "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
  "chat_template_kwargs": {"thinking": true, "n": 3}
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    size_t nul = input.find('\0');
    std::string source(input.substr(0, nul));
    static const nlohmann::ordered_json fixed = nlohmann::ordered_json::parse(kRequest);
    nlohmann::ordered_json request = fixed;
    if (nul != std::string_view::npos) {
        request = nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr, false);
        if (request.is_discarded()) request = fixed;
    }
    myriad::jinja::RenderOptions options;
    options.limits.max_output_bytes = 1 << 16;
    options.limits.max_loop_iterations = 2000;
    options.limits.max_macro_depth = 16;
    options.limits.max_eval_depth = 300;
    options.limits.max_objects = 20000;
    options.now = 1700000000;
    nlohmann::ordered_json special = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    try {
        myriad::ChatTemplate t =
            myriad::ChatTemplate::from_source(std::move(source), "fuzz.jinja", special);
        std::string out = t.render(request, options);
        if (out.size() > options.limits.max_output_bytes) __builtin_trap();
    } catch (const myriad::Error& e) {
        if (e.kind() != myriad::ErrorKind::BadInput) __builtin_trap();
    }
    return 0;
}
