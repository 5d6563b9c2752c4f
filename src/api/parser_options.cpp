// Choosing and naming the output parsers: the registered names, the defaults per model family,
// the prompt test for open reasoning, and what the server must leave in the decoded text.
#include <fmt/format.h>

#include "api/argument_text.h"
#include "api/output_parser.h"
#include "api/tool_call_syntax.h"
#include "util/error.h"

namespace myriad::api {

namespace {

constexpr std::string_view kToolParsers[] = {"kimi_k2", "deepseek_v3", "deepseek_v31"};
constexpr std::string_view kReasoningParsers[] = {"kimi_k2", "deepseek_r1", "deepseek_v3"};

template <size_t N>
void check_name(std::string_view name, const std::string_view (&known)[N], std::string_view what,
                std::string_view flag) {
    if (name.empty()) return;
    for (std::string_view k : known)
        if (k == name) return;
    bad_input("{}: unknown {} parser '{}' (known: {})", flag, what, name, fmt::join(known, ", "));
}

}  // namespace

const ToolCallSyntax* find_tool_call_syntax(std::string_view name) {
    if (name == "kimi_k2") return &kimi_k2_tool_call_syntax();
    if (name == "deepseek_v3") return &deepseek_v3_tool_call_syntax();
    if (name == "deepseek_v31") return &deepseek_v31_tool_call_syntax();
    return nullptr;
}

void check_tool_parser_name(std::string_view name, std::string_view flag) {
    check_name(name, kToolParsers, "tool-call", flag);
}

void check_reasoning_parser_name(std::string_view name, std::string_view flag) {
    check_name(name, kReasoningParsers, "reasoning", flag);
}

bool prompt_ends_in_think(std::string_view rendered_prompt) {
    while (!rendered_prompt.empty() && is_space(rendered_prompt.back()))
        rendered_prompt.remove_suffix(1);
    return rendered_prompt.ends_with("<think>");
}

ParserOptions default_parser_options(std::string_view model_type, bool prompt_ends_in_think,
                                     bool tools_enabled) {
    ParserOptions o;
    o.prompt_ends_in_think = prompt_ends_in_think;
    o.tools_enabled = tools_enabled;
    if (model_type == "kimi_k2" || model_type == "kimi_k25") {
        o.tool_parser = "kimi_k2";
        o.reasoning_parser = "kimi_k2";
    } else if (model_type == "deepseek_v3") {
        o.tool_parser = "deepseek_v3";
        if (prompt_ends_in_think) o.reasoning_parser = "deepseek_r1";
    }
    return o;
}

std::vector<std::string> parser_markers(const ParserOptions& options) {
    std::vector<std::string> out;
    if (!options.reasoning_parser.empty()) out = {"<think>", "</think>"};
    if (const ToolCallSyntax* s = find_tool_call_syntax(options.tool_parser);
        s && options.tools_enabled)
        for (const MarkerSpelling& m : s->markers) out.emplace_back(m.text);
    return out;
}

std::string forced_tool_call_prefix(std::string_view tool_parser, std::string_view function_name,
                                    int index) {
    check_tool_parser_name(tool_parser, "tool_parser");
    const ToolCallSyntax* s = find_tool_call_syntax(tool_parser);
    MYRIAD_CHECK(s != nullptr, "forced_tool_call_prefix needs a tool-call parser");
    std::string out(s->section_begin);
    if (!function_name.empty()) out += s->call_prefix(function_name, index);
    return out;
}

}  // namespace myriad::api
