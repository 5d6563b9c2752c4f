// libFuzzer target: the server's request JSON handling. Any bytes as a chat or completions body
// are parsed and checked; the only allowed failure is an ApiError with a 4xx status (what the
// server answers). Stop strings from accepted requests run over the body text as output.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/api_error.h"
#include "api/openai_request.h"
#include "api/stop_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    auto check = [](const myriad::api::ApiError& e) {
        if (e.status() < 400 || e.status() >= 500) __builtin_trap();
        (void)myriad::api::dump(myriad::api::error_json(e.status(), e.what(), e.param()));
    };
    try {
        myriad::api::ChatRequest r = myriad::api::parse_chat_request(body);
        (void)myriad::api::dump(r.messages);
        myriad::api::StopMatcher stop(r.stop, r.include_stop_str_in_output);
        std::string out;
        for (size_t i = 0; i < body.size(); i += 7) out += stop.feed(body.substr(i, 7));
        out += stop.flush();
        if (out.size() > body.size()) __builtin_trap();
    } catch (const myriad::api::ApiError& e) {
        check(e);
    }
    try {
        myriad::api::CompletionRequest r = myriad::api::parse_completion_request(body);
        if (r.prompts.empty()) __builtin_trap();
    } catch (const myriad::api::ApiError& e) {
        check(e);
    }
    return 0;
}
