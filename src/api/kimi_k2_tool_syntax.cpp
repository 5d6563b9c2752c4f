// kimi_k2 tool calls (reference.md §5.1):
//   <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>
//   ARGS<|tool_call_end|>...<|tool_calls_section_end|>
// White space may surround every part. The id is kept verbatim (the model numbers calls across
// the conversation, so ids from earlier turns are normal); the name is the id less the
// `functions.` prefix and the `:IDX` suffix, so names with dots (MCP tools) survive.
#include <fmt/format.h>

#include "api/argument_text.h"
#include "api/tool_call_syntax.h"

namespace myriad::api {

namespace {

class KimiCallReader final : public CallReader {
  public:
    bool read_head(std::string_view head, CallEvents& out) override {
        // The id must read `PREFIX:DIGITS` with no '<' in the prefix; anything else is no call.
        std::string_view id = trim_space(head);
        size_t colon = id.rfind(':');
        if (colon == std::string_view::npos || colon == 0 || colon + 1 == id.size()) return false;
        for (char c : id.substr(colon + 1))
            if (c < '0' || c > '9') return false;
        std::string_view name = id.substr(0, colon);
        if (name.find('<') != std::string_view::npos) return false;
        if (name.starts_with("functions.")) name.remove_prefix(10);
        if (name.empty()) return false;
        out.header = CallHeader{std::string(id), std::string(name)};
        return true;
    }

    void read_body(std::string_view text, CallEvents& out) override {
        args_.push(text, out.arguments);
    }

    void end_body(CallEvents& out) override { args_.close(out.arguments); }

  private:
    ArgumentText args_;
};

}  // namespace

const ToolCallSyntax& kimi_k2_tool_call_syntax() {
    static const ToolCallSyntax syntax{
        .markers =
            {
                {"<|tool_calls_section_begin|>", Marker::SectionBegin},
                {"<|tool_call_section_begin|>", Marker::SectionBegin},
                {"<|tool_calls_section_end|>", Marker::SectionEnd},
                {"<|tool_call_section_end|>", Marker::SectionEnd},
                {"<|tool_call_begin|>", Marker::CallBegin},
                {"<|tool_call_argument_begin|>", Marker::CallSeparator},
                {"<|tool_call_end|>", Marker::CallEnd},
            },
        .new_call = [] { return std::make_unique<KimiCallReader>(); },
        .section_begin = "<|tool_calls_section_begin|>",
        .call_prefix =
            [](std::string_view name, int index) {
                return fmt::format("<|tool_call_begin|>functions.{}:{}<|tool_call_argument_begin|>",
                                   name, index);
            },
        .call_suffix = "<|tool_call_end|>",
        .section_end = "<|tool_calls_section_end|>",
    };
    return syntax;
}

}  // namespace myriad::api
