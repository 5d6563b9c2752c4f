// Model outputs and what the output parser must make of them: the examples of reference.md §5.5
// (vLLM's tests), the tolerance cases of the server issue, and the reasoning rule. Every case is
// also checked for split invariance (output_parser_test.cpp).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/output_parser.h"

namespace myriad::api::testing {

struct ExpectedCall {
    std::string id;  // "" for a generated id (checked for its form)
    std::string name, arguments;
    bool complete = true;
};

struct ParserCase {
    std::string name;
    ParserOptions options;
    std::string text;
    std::optional<std::string> reasoning, content;
    std::vector<ExpectedCall> calls;
};

// gtest names a failing case by this.
inline void PrintTo(const ParserCase& c, std::ostream* os) {
    *os << c.name;
}

inline ParserOptions kimi(bool think = false, bool tools = true) {
    ParserOptions o;
    o.tool_parser = "kimi_k2";
    o.reasoning_parser = "kimi_k2";
    o.prompt_ends_in_think = think;
    o.tools_enabled = tools;
    return o;
}

inline ParserOptions kimi_tools(std::vector<std::string> names) {
    ParserOptions o = kimi();
    o.tool_names = std::move(names);
    return o;
}

inline ParserOptions deepseek(std::string tool_parser, std::string reasoning = "",
                              bool think = false) {
    ParserOptions o;
    o.tool_parser = std::move(tool_parser);
    o.reasoning_parser = std::move(reasoning);
    o.prompt_ends_in_think = think;
    o.tools_enabled = true;
    return o;
}

inline ParserOptions reasoning_only(std::string parser, bool think) {
    ParserOptions o;
    o.reasoning_parser = std::move(parser);
    o.prompt_ends_in_think = think;
    return o;
}

inline std::string repeat_json(int entries) {
    std::string s = "{\"rows\": [";
    for (int i = 0; i < entries; ++i)
        s += (i ? ", " : "") + std::string("{\"i\": ") + std::to_string(i) +
             ", \"s\": \"<b>ünïcödé 漢字 😀</b>\"}";
    return s + "]}";
}

// Kimi markers, short.
#define KSB "<|tool_calls_section_begin|>"
#define KSE "<|tool_calls_section_end|>"
#define KCB "<|tool_call_begin|>"
#define KCA "<|tool_call_argument_begin|>"
#define KCE "<|tool_call_end|>"
// DeepSeek markers.
#define DSB "<｜tool▁calls▁begin｜>"
#define DSE "<｜tool▁calls▁end｜>"
#define DCB "<｜tool▁call▁begin｜>"
#define DSEP "<｜tool▁sep｜>"
#define DCE "<｜tool▁call▁end｜>"

inline std::vector<ParserCase> parser_cases() {
    const auto null = std::nullopt;
    const std::string big = repeat_json(60);
    return {
        // reference.md §5.5, Kimi-K2.
        {"kimi_example1_one_call",
         kimi(),
         "I'll help you check the weather. " KSB " " KCB "\nfunctions.get_weather:0 " KCA
         " {\"city\": \"Beijing\"} " KCE " " KSE,
         null,
         "I'll help you check the weather. ",
         {{"functions.get_weather:0", "get_weather", "{\"city\": \"Beijing\"}"}}},
        {"kimi_example2_three_calls",
         kimi(),
         "I'll help you with multiple tasks. " KSB KCB "functions.get_weather:0" KCA
         "{\"city\": \"New York\"}" KCE KCB "functions.get_news:1" KCA
         "{\"topic\": \"technology\"}" KCE KCB "functions.send_email:2" KCA
         "{\"to\": \"user@example.com\", \"subject\": \"Daily Update\"}" KCE KSE,
         null,
         "I'll help you with multiple tasks. ",
         {{"functions.get_weather:0", "get_weather", "{\"city\": \"New York\"}"},
          {"functions.get_news:1", "get_news", "{\"topic\": \"technology\"}"},
          {"functions.send_email:2", "send_email",
           "{\"to\": \"user@example.com\", \"subject\": \"Daily Update\"}"}}},
        {"kimi_example3_mixed_spacing",
         kimi(),
         "Mixed spacing test. " KSB " " KCB " functions.test:0 " KCA " {} " KCE KCB
         "functions.test2:1" KCA "{}" KCE " " KSE,
         null,
         "Mixed spacing test. ",
         {{"functions.test:0", "test", "{}"}, {"functions.test2:1", "test2", "{}"}}},
        {"kimi_example4_angle_brackets_in_json",
         kimi(),
         "I need to process HTML content. " KSB KCB "functions.process_html:0" KCA
         "{\"html\": \"<div>content</div>\", \"text\": \"normal text\"}" KCE KSE,
         null,
         "I need to process HTML content. ",
         {{"functions.process_html:0", "process_html",
           "{\"html\": \"<div>content</div>\", \"text\": \"normal text\"}"}}},
        {"kimi_example5_invalid_json_passes",
         kimi(),
         "I'll help you check the weather. " KSB " " KCB "\nfunctions.invalid_get_weather:0 " KCA
         " {\"city\": \"Beijing\" " KCE " " KCB "\nfunctions.valid_get_weather:1 " KCA
         " {\"city\": \"Shanghai\"} " KCE " " KSE,
         null,
         "I'll help you check the weather. ",
         {{"functions.invalid_get_weather:0", "invalid_get_weather", "{\"city\": \"Beijing\""},
          {"functions.valid_get_weather:1", "valid_get_weather", "{\"city\": \"Shanghai\"}"}}},
        // vLLM drops the call with the invalid id; we keep what the model wrote, as text.
        {"kimi_example5_invalid_id_is_text",
         kimi(),
         "I'll help you check the weather. " KSB " " KCB "\nfunctions.invalid_get_weather.0 " KCA
         " {\"city\": \"Beijing\"} " KCE " " KCB "\nfunctions.valid_get_weather:1 " KCA
         " {\"city\": \"Shanghai\"} " KCE " " KSE,
         null,
         "I'll help you check the weather. " KCB "\nfunctions.invalid_get_weather.0 " KCA
         " {\"city\": \"Beijing\"} " KCE,
         {{"functions.valid_get_weather:1", "valid_get_weather", "{\"city\": \"Shanghai\"}"}}},
        {"kimi_example6_no_markers", kimi(), "This is a test", null, "This is a test", {}},

        // reference.md §5.5, DeepSeek-V3.1 (and the same text through the deepseek_v3 parser).
        {"deepseek_v31_example7",
         deepseek("deepseek_v31"),
         "normal text" DSB DCB "foo" DSEP "{\"x\":1}" DCE DSE,
         null,
         "normal text",
         {{"", "foo", "{\"x\":1}"}}},
        {"deepseek_v31_example8_suffix_dropped",
         deepseek("deepseek_v31"),
         "some prefix text" DSB DCB "foo" DSEP "{\"x\":1}" DCE DCB "bar" DSEP "{\"y\":2}" DCE DSE
         " some suffix text",
         null,
         "some prefix text",
         {{"", "foo", "{\"x\":1}"}, {"", "bar", "{\"y\":2}"}}},
        {"deepseek_v3_parser_reads_v31_calls",
         deepseek("deepseek_v3"),
         "normal text" DSB DCB "foo" DSEP "{\"x\":1}" DCE DSE,
         null,
         "normal text",
         {{"", "foo", "{\"x\":1}"}}},

        // reference.md §5.2: the parser's docstring example (two identical calls).
        {"deepseek_v3_docstring_two_calls",
         deepseek("deepseek_v3"),
         DSB DCB "function" DSEP
                 "get_current_weather\n```json\n{\"location\": \"Beijing\"}\n```" DCE "\n" DCB
                 "function" DSEP
                 "get_current_weather\n```json\n{\"location\": \"Beijing\"}\n```" DCE DSE
                 "<｜end▁of▁sentence｜>",
         null,
         null,
         {{"", "get_current_weather", "{\"location\": \"Beijing\"}"},
          {"", "get_current_weather", "{\"location\": \"Beijing\"}"}}},
        {"deepseek_v31_parser_reads_v3_calls",
         deepseek("deepseek_v31"),
         "Let me look." DSB DCB "function" DSEP
         "search\n```json\n{\"q\": \"a `b` c\"}\n```" DCE DSE,
         null,
         "Let me look.",
         {{"", "search", "{\"q\": \"a `b` c\"}"}}},
        {"deepseek_v3_without_fence",
         deepseek("deepseek_v3"),
         DSB DCB "function" DSEP "foo\n{\"a\": [1, 2]}\n" DCE DSE,
         null,
         null,
         {{"", "foo", "{\"a\": [1, 2]}"}}},
        {"deepseek_v3_cut_at_max_tokens",
         deepseek("deepseek_v3"),
         "Checking." DSB DCB "function" DSEP
         "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DCE DCB "function" DSEP
         "get_time\n```json\n{\"zone\": \"Eu",
         null,
         "Checking.",
         {{"", "get_weather", "{\"city\": \"Paris\"}"},
          {"", "get_time", "{\"zone\": \"Eu", false}}},
        {"deepseek_v3_empty_name_dropped",
         deepseek("deepseek_v31"),
         DSB DCB DSEP "{\"x\":1}" DCE DCB "ok" DSEP "{}" DCE DSE,
         null,
         null,
         {{"", "ok", "{}"}}},

        // reference.md §5.5, DeepSeek-R1 reasoning (the prompt ended in <think>).
        {"r1_example9",
         reasoning_only("deepseek_r1", true),
         "This is a reasoning section</think>This is the rest",
         "This is a reasoning section",
         "This is the rest",
         {}},
        {"r1_example10",
         reasoning_only("deepseek_r1", false),
         "<think>This is a reasoning section</think>",
         "This is a reasoning section",
         null,
         {}},
        {"r1_example11",
         reasoning_only("deepseek_r1", true),
         "</think>This is the rest",
         "",
         "This is the rest",
         {}},
        {"r1_example12",
         reasoning_only("deepseek_r1", false),
         "<think>This is a reasoning section",
         "This is a reasoning section",
         null,
         {}},
        {"r1_example12_prompt_opened",
         reasoning_only("deepseek_r1", true),
         "<think>This is a reasoning section",
         "This is a reasoning section",
         null,
         {}},
        {"r1_example13",
         reasoning_only("deepseek_r1", true),
         "This is content",
         "This is content",
         null,
         {}},
        {"r1_leading_newline",
         reasoning_only("deepseek_r1", false),
         "\n<think>R</think>\nC",
         "R",
         "\nC",
         {}},

        // The reasoning rule: no tag and no open prompt is content, never a blank answer.
        {"no_think_prompt_is_content",
         reasoning_only("deepseek_r1", false),
         "This is content",
         null,
         "This is content",
         {}},
        {"stray_close_tag_stays_content",
         reasoning_only("kimi_k2", false),
         "a</think>b",
         null,
         "a</think>b",
         {}},
        {"no_reasoning_parser_keeps_tags",
         reasoning_only("", true),
         "<think>r</think>c",
         null,
         "<think>r</think>c",
         {}},
        {"two_think_blocks",
         reasoning_only("kimi_k2", false),
         "<think>a</think>x\n\n<think>b</think>y",
         "ab",
         "x\n\ny",
         {}},
        {"whitespace_only_answer_kept",
         reasoning_only("kimi_k2", true),
         "r</think>\n\n",
         "r",
         "\n\n",
         {}},
        {"kimi_thinking_then_call",
         kimi(true),
         "Need weather.</think>Let me check." KSB KCB "functions.get_weather:0" KCA
         "{\"city\": \"Oslo\"}" KCE KSE,
         "Need weather.",
         "Let me check.",
         {{"functions.get_weather:0", "get_weather", "{\"city\": \"Oslo\"}"}}},
        {"kimi_reasoning_ends_at_section",
         kimi(true),
         "I should call the tool." KSB KCB "functions.lookup:0" KCA "{}" KCE KSE,
         "I should call the tool.",
         null,
         {{"functions.lookup:0", "lookup", "{}"}}},
        {"kimi_think_tag_then_call",
         kimi(false),
         "<think>plan</think>\n\n" KSB KCB "functions.a:0" KCA "{}" KCE KSE,
         "plan",
         null,
         {{"functions.a:0", "a", "{}"}}},
        {"deepseek_r1_reasoning_then_call",
         deepseek("deepseek_v3", "deepseek_r1", true),
         "think about it\n</think>\n\nSure." DSB DCB "function" DSEP
         "f\n```json\n{\"k\": \"v\"}\n```" DCE DSE,
         "think about it\n",
         "\n\nSure.",
         {{"", "f", "{\"k\": \"v\"}"}}},

        // Tolerance: the section end missing, cut calls, marker variants, names, sizes.
        {"kimi_section_end_missing",
         kimi(),
         "ok" KSB KCB "functions.a:0" KCA "{\"x\": 1}" KCE KCB "functions.b:1" KCA "{\"y\": 2}" KCE,
         null,
         "ok",
         {{"functions.a:0", "a", "{\"x\": 1}"}, {"functions.b:1", "b", "{\"y\": 2}"}}},
        {"kimi_last_call_cut_in_arguments",
         kimi(),
         KSB KCB "functions.a:0" KCA "{\"x\": 1}" KCE KCB "functions.b:1" KCA "{\"city\": \"Par",
         null,
         null,
         {{"functions.a:0", "a", "{\"x\": 1}"}, {"functions.b:1", "b", "{\"city\": \"Par", false}}},
        {"kimi_last_call_cut_in_id",
         kimi(),
         KSB KCB "functions.a:0" KCA "{}" KCE KCB "functions.get_wea",
         null,
         null,
         {{"functions.a:0", "a", "{}"}}},
        {"kimi_cut_inside_a_marker",
         kimi(),
         "Hello " KSB KCB "functions.a:0" KCA "{}<|tool_ca",
         null,
         "Hello ",
         {{"functions.a:0", "a", "{}<|tool_ca", false}}},
        {"kimi_singular_markers",
         kimi(),
         "x<|tool_call_section_begin|>" KCB "functions.f:0" KCA "{}" KCE
         "<|tool_call_section_end|>",
         null,
         "x",
         {{"functions.f:0", "f", "{}"}}},
        {"kimi_dotted_names_and_old_ids",
         kimi(),
         KSB KCB "functions.mcp.server.read_file:7" KCA "{\"path\": \"a.txt\"}" KCE KCB
                 " read_file:8 " KCA "{}" KCE KSE,
         null,
         null,
         {{"functions.mcp.server.read_file:7", "mcp.server.read_file", "{\"path\": \"a.txt\"}"},
          {"read_file:8", "read_file", "{}"}}},
        {"kimi_call_interrupted_by_next_call",
         kimi(),
         KSB KCB "functions.a:0" KCA "{\"x\": " KCB "functions.b:1" KCA "{}" KCE KSE,
         null,
         null,
         {{"functions.a:0", "a", "{\"x\":", false}, {"functions.b:1", "b", "{}"}}},
        {"kimi_markers_inside_arguments_are_text",
         kimi(true),
         "r" KSB KCB "functions.echo:0" KCA "{\"t\": \"<think>x</think>" KSB KCA "\"}" KCE KSE,
         "r",
         null,
         {{"functions.echo:0", "echo", "{\"t\": \"<think>x</think>" KSB KCA "\"}"}}},
        {"kimi_text_after_section_dropped_until_next",
         kimi(),
         "a" KSB KCB "functions.x:0" KCA "{}" KCE KSE "tail" KSB KCB "functions.y:1" KCA
         "[]" KCE KSE,
         null,
         "a",
         {{"functions.x:0", "x", "{}"}, {"functions.y:1", "y", "[]"}}},
        {"kimi_big_unicode_arguments",
         kimi(),
         "Saving." KSB KCB "functions.save:0" KCA + big + KCE KSE,
         null,
         "Saving.",
         {{"functions.save:0", "save", big}}},
        {"kimi_tools_disabled_section_is_content",
         kimi(false, false),
         "a" KSB KCB "functions.x:0" KCA "{}" KCE KSE,
         null,
         "a" KSB KCB "functions.x:0" KCA "{}" KCE KSE,
         {}},
        {"unicode_and_invalid_bytes",
         kimi(true),
         "思考 😀\xff</think>答案\xe2\x82 ok <",
         "思考 😀\xEF\xBF\xBD",
         "答案\xEF\xBF\xBD ok <",
         {}},
        {"truncated_character_at_end",
         reasoning_only("", false),
         "caf\xc3",
         null,
         "caf\xEF\xBF\xBD",
         {}},
        {"lone_angle_brackets", kimi(), "a < b <| c <think", null, "a < b <| c <think", {}},
        // Kimi-K2.6 in multi-turn use: an id without the function's name. One declared tool:
        // it is that tool's call; several: the call comes back as text.
        {"kimi_nameless_id_one_declared_tool",
         kimi_tools({"get_weather"}),
         "ok" KSB KCB " call_3 " KCA "{\"city\": \"Rome\"}" KCE KSE,
         null,
         "ok",
         {{"call_3", "get_weather", "{\"city\": \"Rome\"}"}}},
        {"kimi_nameless_id_two_declared_tools_is_text",
         kimi_tools({"get_weather", "get_time"}),
         "ok" KSB KCB "call_3" KCA "{\"city\": \"Rome\"}" KCE KSE,
         null,
         "ok" KCB "call_3" KCA "{\"city\": \"Rome\"}" KCE,
         {}},
        // Arguments cut short keep every character the model wrote, trailing ones included.
        {"kimi_cut_short_keeps_trailing_characters",
         kimi(),
         KSB KCB "functions.f:0" KCA "{\"path\": \"/tmp/a b",
         null,
         null,
         {{"functions.f:0", "f", "{\"path\": \"/tmp/a b", false}}},
    };
}

#undef KSB
#undef KSE
#undef KCB
#undef KCA
#undef KCE
#undef DSB
#undef DSE
#undef DCB
#undef DSEP
#undef DCE

}  // namespace myriad::api::testing
