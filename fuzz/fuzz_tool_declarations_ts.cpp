// libFuzzer target: Kimi-K2.5's tool declaration encoder (src/tokenizer/tool_declarations_ts.h)
// and the key sort before it. The input is JSON, encoded both as a tools list and as one
// function's parameters, before and after the key sort. Any input must end in declarations or
// a ToolDeclarationError; the output must be the same on a second run and, when not empty, sit
// in the fixed frame. Another exception, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/tool_declarations_prompt.h"
#include "tokenizer/tool_declarations_ts.h"

namespace {

using J = nlohmann::ordered_json;

void check(const J& tools) {
    std::string first, second;
    bool failed = false;
    try {
        first = myriad::encode_tools_typescript(tools);
    } catch (const myriad::ToolDeclarationError& e) {
        failed = true;
        first = e.what();
    }
    try {
        second = myriad::encode_tools_typescript(tools);
        if (failed) __builtin_trap();
    } catch (const myriad::ToolDeclarationError& e) {
        if (!failed) __builtin_trap();
        second = e.what();
    }
    if (first != second) __builtin_trap();
    if (!failed && !first.empty() &&
        (!first.starts_with("# Tools\n\n## functions\nnamespace functions {\n") ||
         !first.ends_with(") => any;\n}\n")))
        __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    J j = J::parse(text, nullptr, false);
    if (j.is_discarded()) return 0;
    J wrapped =
        J::array({{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", j}}}}});
    for (const J& tools : {j, wrapped}) {
        check(tools);
        check(myriad::sort_keys_deep(tools));
    }
    return 0;
}
